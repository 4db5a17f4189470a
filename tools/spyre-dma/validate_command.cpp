// spyre-dma validate (see validate_command.hpp and docs/validation.md).
#include "validate_command.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>

#include "backend.hpp"
#include "size_spec.hpp"
#include "sweep.hpp"
#include "spyre_dma/model/config_loader.hpp"
#include "spyre_dma/spyre_dma.hpp"
#include "spyre_dma/traces/calibrate.hpp"
#include "spyre_dma/traces/compare.hpp"
#include "spyre_dma/traces/recorder.hpp"
#include "spyre_dma/traces/replay.hpp"
#include "spyre_dma/traces/trace_io.hpp"
#include "spyre_dma/traces/output_file.hpp"
#include "cli_checks.hpp"
#include "memory_check.hpp"

namespace spyre_dma_cli {

CLI::App* add_validate_command(CLI::App& app, ValidateOptions& o) {
  CLI::App* v = app.add_subcommand(
      "validate", "Sweep a backend, replay the captured trace on the model, calibrate on one size range and "
                  "check another; write report, trace and plot into --out");
  add_backend_options(*v, o.backend, /*model_settings=*/false);  // --fidelity here is the replays'
  v->add_option("--model-preset", o.model_preset,
                "Model preset to compare with (default: --preset; cuda: h200-gen5x16; refdev: spyre-gen5x16)");
  v->add_option("--sizes", o.sizes, "Transfer sizes (4KiB..1GiB doubles; or a list)")->check(size_list());
  v->add_option("--repeat", o.repeat, "Timed runs per point (the median is reported)")->check(CLI::Range(3, 1000));
  v->add_option("--streams", o.streams, "Stream counts to sweep (each transfer split over them)")
      ->check(CLI::Range(1, 64))
      ->delimiter(',');
  v->add_option("--memory", o.memory, "Host memory kinds")
      ->check(CLI::IsMember({"registered", "pageable"}))
      ->delimiter(',');
  v->add_option("--out", o.out, "Output folder (created)")->required();
  v->add_option("--fit-sizes", o.fit_sizes, "Copies the calibration fits (below:64MiB, range:A:B, atleast:X, all)");
  v->add_option("--check-sizes", o.check_sizes, "Registered copies the check judges after calibration");
  v->add_option("--tolerance", o.tolerance, "Largest median |relative error| the check accepts, in each group")
      ->check(finite_range(0.0, 1.0));
  v->add_option("--timing", o.timing,
                "What the sweep reports and the check judges: device (first CB start to last CB end) or host "
                "(the call to the completion the engine saw, staging copies included); both are compared")
      ->capture_default_str()
      ->check(CLI::IsMember({"device", "host"}));
  v->add_flag("--no-calibrate", o.no_calibrate, "Compare with the model preset only");
  v->add_flag("--no-plot", o.no_plot, "Do not draw plot.png");
  v->add_option("--fidelity", o.fidelity, "Model fidelity of the replays")->check(CLI::IsMember({"tlp", "burst"}));
  v->add_option("--timeout", o.timeout_s, "Seconds a transfer may take")->check(timeout_seconds());
  v->add_option("--replay-copies", o.replay_copies, "Copies of each direction, memory and size the model replays (0: all)")
      ->check(CLI::NonNegativeNumber);
  return v;
}

namespace {

namespace st = spyre_dma::traces;
namespace fs = std::filesystem;

void write_text(const fs::path& p, const std::string& text) { st::write_file_atomically(p.string(), text); }

std::string link_name(const spyre_dma::model::SimConfig& c) {
  return fmt::format("PCIe Gen{} x{}", c.link.generation, c.link.lanes);
}

std::string default_model_preset(const ValidateOptions& o) {
  if (!o.model_preset.empty()) return o.model_preset;
  if (!o.backend.preset.empty()) return o.backend.preset;
  if (o.backend.name == "cuda") return "h200-gen5x16";
  return spyre_dma::model::preset_names().front();
}

// One line of the check (docs/validation.md, step 3): what it judges, over how many copies,
// the figure, the limit, and whether it holds.
struct CheckRow {
  std::string what;  // "check h2d registered", "held-out d2h pageable 64KiB-1MiB", "fit ..."
  std::size_t ops = 0;
  double median_abs = 0;
  double limit = 0;
  std::string rule;  // how the figure is held to the limit, for the report
  bool pass = false;
};

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The headline: per direction, the registered copies of the checked sizes.
void check_sizes_rows(const st::Comparison& c, const st::OpSelection& sel, double tol, std::vector<CheckRow>& rows) {
  for (const char* dir : {"h2d registered", "d2h registered"}) {
    std::vector<double> errs;
    for (const st::OpComparison& op : c.ops) {
      if (op.direction != dir || op.bound || op.bytes < sel.lo || op.bytes >= sel.hi) continue;
      errs.push_back(std::fabs(op.rel_error));
    }
    CheckRow r{fmt::format("check {}", dir), errs.size(), median_of(errs), tol, "<=", false};
    r.pass = r.ops > 0 && r.median_abs <= tol;
    rows.push_back(std::move(r));
  }
}

// Every group (direction and size class) of `c` with compared copies, median |error| within tol.
void group_rows(const std::string& label, const st::Comparison& c, double tol, std::vector<CheckRow>& rows) {
  for (const st::GroupStats& g : c.groups) {
    if (g.direction == "all" || g.size_class == "all" || g.ops == 0) continue;
    rows.push_back({fmt::format("{} {} {}", label, g.direction, g.size_class), g.ops, g.median_abs, tol, "<=",
                    g.median_abs <= tol});
  }
}

// The fit copies' groups may not get worse through calibration: each group's median |error| after
// it within kWorseSlack of before it (a fit trades a little in one group for more in another; a
// group it made clearly worse is a fit gone wrong).
constexpr double kWorseSlack = 0.01;
void fit_not_worse_rows(const st::Comparison& before_all, const st::Comparison& after, std::vector<CheckRow>& rows) {
  std::set<std::uint64_t> fit_ids;
  for (const st::OpComparison& op : after.ops) fit_ids.insert(op.id);
  std::vector<st::OpComparison> before;
  for (const st::OpComparison& op : before_all.ops)
    if (fit_ids.count(op.id)) before.push_back(op);
  const std::vector<st::GroupStats> was = st::group_stats(before);
  for (const st::GroupStats& g : after.groups) {
    if (g.direction == "all" || g.size_class == "all" || g.ops == 0) continue;
    const auto w = std::find_if(was.begin(), was.end(), [&](const st::GroupStats& x) {
      return x.direction == g.direction && x.size_class == g.size_class;
    });
    if (w == was.end() || w->ops == 0) continue;
    const double limit = w->median_abs + kWorseSlack;
    rows.push_back({fmt::format("fit {} {} (before calibration {:.2f}%)", g.direction, g.size_class,
                                100 * w->median_abs),
                    g.ops, g.median_abs, limit, "<= before +1 pt", g.median_abs <= limit});
  }
}

nlohmann::json point_json(const PointResult& p) {
  return {{"bytes", p.bytes},           {"direction", std::string(to_string(p.direction))},
          {"memory", std::string(to_string(p.memory))}, {"streams", p.streams_used},
          {"run_ns", p.run_ns},         {"median_ns", p.median_ns},
          {"gb_per_s", p.gb_per_s},     {"verified", p.verified}};
}

}  // namespace

int run_validate(const ValidateOptions& o) {
  const auto wall0 = std::chrono::steady_clock::now();
  BackendOptions backend = o.backend;
  if (backend.name == "sim") backend.fidelity = "burst";  // the SystemC model sweeps fastest in burst fidelity
  if (std::string e = check_backend_options(backend); !e.empty()) {
    fmt::print(stderr, "spyre-dma validate: {}\n", e);
    return 2;
  }
  std::vector<std::uint64_t> sizes;
  st::OpSelection fit, check;
  spyre_dma::model::SimConfig model;
  const char* option = "--sizes";  // the option being read, for the message
  try {
    sizes = parse_size_list(o.sizes);
    option = "--fit-sizes";
    fit = st::parse_selection(o.fit_sizes);
    option = "--check-sizes";
    check = st::parse_selection(o.check_sizes);
    option = "--model-preset";
    model = spyre_dma::model::preset(default_model_preset(o));
  } catch (const std::exception& e) {
    fmt::print(stderr, "spyre-dma validate: {}: {}\n", option, e.what());
    return 2;
  }
  model.fidelity = o.fidelity == "tlp" ? spyre_dma::model::Fidelity::kTlp : spyre_dma::model::Fidelity::kBurst;

  // 1. The sweep, recorded. (The cuda backend's DeviceFault / OutOfMemory name the cudart call.)
  std::shared_ptr<spyre_dma::Device> device = open_backend(backend).device;
  st::Header header;
  header.source = "validate";
  header.device = device->describe().name;
  // A simulated device's configuration names its link; a real card's is the model's it is compared with.
  if (const nlohmann::json config = backend_config(backend); config.contains("link")) {
    header.link = fmt::format("PCIe Gen{} x{}", config["link"]["generation"].get<int>(), config["link"]["lanes"].get<int>());
  } else if (o.backend.name == "cuda") {
    header.link = link_name(model);
  }
  header.extra["backend"] = o.backend.name;
  auto recorder = std::make_shared<st::TraceRecorder>(header);
  spyre_dma::EngineOptions eo;
  eo.observer = recorder;
  auto engine = spyre_dma::Engine::open(device, eo);
  fmt::print("spyre-dma validate: {} ({}), {} sizes {}..{}, {} runs per point, streams {}, model {}\n", o.backend.name,
             device->describe().name, sizes.size(), format_size(sizes.front()), format_size(sizes.back()), o.repeat,
             fmt::join(o.streams, ","), model.preset);
  const bool host_timing = o.timing == "host";
  if (host_timing && !device->describe().host_clock) {
    fmt::print(stderr, "spyre-dma validate: --timing host: backend {} gives no host time on its clock\n",
               o.backend.name);
    return 2;
  }
  fmt::print("timing: {}: what the sweep reports and the check judges (both times are compared)\n",
             host_timing ? "host (the call to the completion the engine saw, staging included)"
                         : "device (first CB start to last CB end)");
  {
    const std::uint64_t largest = *std::max_element(sizes.begin(), sizes.end());
    const int most_streams = *std::max_element(o.streams.begin(), o.streams.end());
    const auto n = static_cast<std::uint64_t>(most_streams);
    const std::uint64_t span = largest > UINT64_MAX / n ? UINT64_MAX : largest * n;  // saturating, as in capture
    const double host = static_cast<double>(span) * static_cast<double>(2 * o.memory.size() + 1);
    if (std::string e = check_transfer_memory("--sizes", span, host, engine->limits()); !e.empty()) {
      fmt::print(stderr, "spyre-dma validate: {}\n", e);
      return 2;
    }
  }
  // Made only once the options and the memory check passed: a refused run leaves nothing behind.
  const fs::path out(o.out);
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) {
    fmt::print(stderr, "spyre-dma validate: --out '{}': {}\n", o.out, ec.message());
    return 2;
  }
  std::vector<PointResult> points;
  for (int streams : o.streams) {
    SweepConfig sc;
    sc.sizes = sizes;
    sc.repeat = o.repeat;
    sc.streams = streams;
    sc.time_base = host_timing ? TimeBase::kHost : TimeBase::kDevice;
    sc.timeout = to_timeout(o.timeout_s);
    sc.memories.clear();
    for (const auto& m : o.memory) sc.memories.push_back(m == "registered" ? HostMemory::kRegistered : HostMemory::kPageable);
    Sweep sweep({engine.get()}, sc);
    sweep.run([&](const PointResult& p) {
      fmt::print("  {:>9} {} {:<10} x{}  {:>10.2f} us  {:>7.2f} GB/s\n", format_size(p.bytes), to_string(p.direction),
                 to_string(p.memory), p.streams_used, p.median_ns / 1e3, p.gb_per_s);
      points.push_back(p);
    });
  }
  st::Trace trace = recorder->trace(std::chrono::seconds(60));
  engine.reset();
  device.reset();
  st::write_trace_file(trace, (out / "trace.jsonl").string());

  // 2. Replay on the model, compare. The replay holds each op until its captured start: the
  // sweep waited on the host between transfers, which the trace records only as start times, and
  // a replay without them would reorder copies of overlapping ranges on different streams.
  if (o.replay_copies > 0) {
    const std::vector<bool> keep = st::first_copies_per_size(trace, std::vector<bool>(trace.ops.size(), true),
                                                             static_cast<std::size_t>(o.replay_copies));
    trace = st::sub_trace(trace, keep);
    st::write_trace_file(trace, (out / "trace-replayed.jsonl").string());
  }
  st::ReplayOptions ro;
  ro.honour_start_times = true;
  const st::ReplayResult replayed = st::replay_on_sim(trace, model, ro);
  const st::Comparison cmp = st::compare(trace, replayed);
  nlohmann::json cmp_doc = cmp.to_json();
  cmp_doc["config"] = spyre_dma::model::to_json(model);
  cmp_doc["data_ok"] = replayed.data_ok;
  write_text(out / "compare.json", cmp_doc.dump(1) + "\n");
  fmt::print("model {} replay:\n{}", model.preset, cmp.table());
  // Host time too (docs/engine.md, "Timing"): what a caller waits, staging of pageable copies
  // included.
  const st::Comparison host_cmp = st::compare(trace, replayed, st::Timing::kHost);
  nlohmann::json host_doc = host_cmp.to_json();
  host_doc["config"] = cmp_doc["config"];
  write_text(out / "compare-host.json", host_doc.dump(1) + "\n");
  if (!host_cmp.ops.empty()) fmt::print("model {} replay, host time:\n{}", model.preset, host_cmp.table());

  // 3. Calibrate and check. The fit is on device time (the link's parameters, which device time
  // measures); in host time the check judges the calibrated model's replay of the held-out copies.
  nlohmann::json cal_doc = nullptr;
  const st::Comparison* judged = host_timing ? &host_cmp : &cmp;
  std::optional<st::CalibrationResult> cal;
  st::Comparison host_holdout;
  if (!o.no_calibrate) {
    st::CalibrateOptions co;
    co.base = model;
    co.fit = fit;
    co.fidelity = model.fidelity;
    cal = st::calibrate(trace, co);
    write_text(out / "calibrated.json", cal->preset_json().dump(2) + "\n");
    cal_doc = cal->to_json();
    judged = &cal->holdout;
    fmt::print("calibration (fit {}):\n{}", o.fit_sizes, cal->summary());
    if (host_timing) {
      st::ReplayOptions cro = ro;
      cro.staging_buffer_bytes = cal->staging_buffer_bytes;
      const st::Comparison all = st::compare(trace, st::replay_on_sim(trace, cal->config, cro), st::Timing::kHost);
      std::set<std::uint64_t> held_out;
      for (const st::OpComparison& op : cal->holdout.ops) held_out.insert(op.id);
      host_holdout = all;
      host_holdout.ops.clear();
      for (const st::OpComparison& op : all.ops)
        if (held_out.count(op.id)) host_holdout.ops.push_back(op);
      host_holdout.groups = st::group_stats(host_holdout.ops);
      fmt::print("held-out copies (predicted), host time:\n{}", host_holdout.table());
      judged = &host_holdout;
    }
  }
  // The check: the headline, every group of the judged copies, and the fit's groups (in device
  // time, the time the fit uses): within the tolerance, and not made worse by the calibration.
  std::vector<CheckRow> rows;
  check_sizes_rows(*judged, check, o.tolerance, rows);
  group_rows(cal ? "held-out" : "all", *judged, o.tolerance, rows);
  if (cal) {
    group_rows("fit", cal->fit, o.tolerance, rows);
    fit_not_worse_rows(cmp, cal->fit, rows);
  }
  bool pass = replayed.data_ok;
  for (const CheckRow& r : rows) pass = pass && r.pass;
  for (const CheckRow& r : rows) {
    if (!r.pass) {
      fmt::print("check failed: {}: median |error| {:.2f}% over {} copies, limit {:.2f}%\n", r.what, 100 * r.median_abs,
                 r.ops, 100 * r.limit);
    }
  }

  // 4. Report and plot.
  nlohmann::json report;
  report["backend"] = o.backend.name;
  report["device"] = header.device;
  report["model_preset"] = model.preset;
  report["link"] = link_name(model);
  report["sizes"] = sizes;
  report["repeat"] = o.repeat;
  report["streams"] = o.streams;
  report["timing"] = o.timing;
  report["method"] = fmt::format("{}, median of runs; see docs/validation.md",
                                 host_timing ? "host time on the device's clock (call to completion)"
                                             : "device timestamps (first CB start to last CB end)");
  for (const PointResult& p : points) report["points"].push_back(point_json(p));
  report["comparison"] = cmp.to_json();
  report["comparison_host"] = std::move(host_doc);
  report["calibration"] = cal_doc;
  report["fit_sizes"] = o.no_calibrate ? "" : o.fit_sizes;
  report["check_sizes"] = o.check_sizes;
  report["tolerance"] = o.tolerance;
  report["check"] = nlohmann::json::array();
  for (const CheckRow& r : rows) {
    report["check"].push_back({{"what", r.what},   {"ops", r.ops},   {"median_abs_error", r.median_abs},
                               {"limit", r.limit}, {"rule", r.rule}, {"pass", r.pass}});
  }
  report["replay_data_ok"] = replayed.data_ok;
  report["pass"] = pass;
  report["wall_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  write_text(out / "report.json", report.dump(1) + "\n");

  std::string md = fmt::format("# spyre-dma validate: {}\n\n", o.backend.name);
  md += fmt::format("- Device: {}\n- Model: preset `{}` ({}), {} fidelity\n", header.device, model.preset,
                    link_name(model), o.fidelity);
  md += fmt::format("- Sweep: {} sizes {}..{}, {} runs per point (median), streams {}, memory {}\n", sizes.size(),
                    format_size(sizes.front()), format_size(sizes.back()), o.repeat, fmt::join(o.streams, ", "),
                    fmt::join(o.memory, ", "));
  md += fmt::format("- Timing: {} (measured and judged); both times compared; files: trace.jsonl, compare.json, "
                    "compare-host.json, calibrated.json, report.json, plot.png\n\n",
                    host_timing ? "host time, each call to the completion the engine saw, staging included"
                                : "device timestamps of the CBs, first start to last end");
  md += "## Measured\n\n| Size | Direction | Memory | Streams | Median us | GB/s |\n|---|---|---|---|---|---|\n";
  for (const PointResult& p : points) {
    md += fmt::format("| {} | {} | {} | {} | {:.2f} | {:.2f} |\n", format_size(p.bytes), to_string(p.direction),
                      to_string(p.memory), p.streams_used, p.median_ns / 1e3, p.gb_per_s);
  }
  md += fmt::format("\n## Model `{}` against the capture (per op, device time)\n\n```\n{}```\n", model.preset,
                    cmp.table());
  if (!host_cmp.ops.empty()) {
    md += fmt::format("\n## The same in host time (call to completion, staging included)\n\n```\n{}```\n",
                      host_cmp.table());
  }
  if (cal) md += fmt::format("\n## Calibration (fit: {})\n\n```\n{}```\n", o.fit_sizes, cal->summary());
  if (cal && host_timing) md += fmt::format("\nHeld-out copies in host time:\n\n```\n{}```\n", host_holdout.table());
  md += fmt::format("\n## Check: {} time, median |error| <= {:.1f}%\n\n"
                    "Registered copies {} ({}), every group of the {} copies, and every group of the fit copies "
                    "(device time), which the calibration may not make worse by more than 1 point.\n\n",
                    o.timing, o.tolerance * 100, o.check_sizes,
                    o.no_calibrate ? "uncalibrated model" : "held out from the fit",
                    o.no_calibrate ? "compared" : "held-out");
  md += "| What | Ops | Median abs error | Limit | Result |\n|---|---|---|---|---|\n";
  for (const CheckRow& r : rows) {
    md += fmt::format("| {} | {} | {:.2f}% | {:.2f}% | {} |\n", r.what, r.ops, r.median_abs * 100, r.limit * 100,
                      r.ops == 0 ? "FAIL (no copies in range)" : r.pass ? "pass" : "FAIL");
  }
  md += fmt::format("\nReplay data check: {}. Verdict: **{}**\n", replayed.data_ok ? "ok" : replayed.data_error,
                    pass ? "PASS" : "FAIL");
  write_text(out / "report.md", md);

  if (!o.no_plot) {
    std::string script = SPYRE_DMA_PLOT_SCRIPT;
    const auto slash = script.find_last_of('/');
    script = (slash == std::string::npos ? std::string() : script.substr(0, slash + 1)) + "plot-compare";
    // What the check judged.
    const fs::path plot_input = out / "compare-judged.json";
    write_text(plot_input, judged->to_json().dump(1) + "\n");
    const std::string cmd = fmt::format("'{}' '{}' '{}'", script, plot_input.string(), (out / "plot.png").string());
    if (std::system(cmd.c_str()) != 0) {
      fmt::print(stderr, "spyre-dma validate: warning: plotting failed ({}): is matplotlib installed?\n", cmd);
    }
  }
  fmt::print("{}: {}\n", (out / "report.md").string(), pass ? "PASS" : "FAIL");
  return pass ? 0 : 1;
}

}  // namespace spyre_dma_cli
