#include "trace_analysis_command.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <optional>
#include <stdexcept>

#include "spyre_dma/traces/bandwidth_test.hpp"
#include "spyre_dma/traces/kineto.hpp"
#include "spyre_dma/traces/nvbandwidth.hpp"
#include "spyre_dma/traces/rocm_bandwidth.hpp"
#include "spyre_dma/traces/trace_io.hpp"

#include "spyre_dma/model/config_loader.hpp"
#include "spyre_dma/traces/calibrate.hpp"
#include "spyre_dma/traces/compare.hpp"
#include "spyre_dma/traces/concurrent.hpp"
#include "spyre_dma/traces/replay.hpp"
#include "spyre_dma/traces/output_file.hpp"
#include "outputs.hpp"

namespace spyre_dma_cli {
namespace {

namespace traces = spyre_dma::traces;

// A bad input (a file that does not parse, a value out of range): exit status 2.
struct BadInput : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void write_json_file(const nlohmann::json& j, const std::string& path) {
  spyre_dma::traces::write_file_atomically(path, j.dump(2) + "\n");
}

int guarded(const std::function<int()>& body) {
  try {
    return body();
  } catch (const traces::TraceError& e) {
    fmt::print(stderr, "spyre-dma: error: {}\n", e.what());
    return 2;
  } catch (const spyre_dma::model::ConfigError& e) {
    fmt::print(stderr, "spyre-dma: error: {}\n", e.what());
    return 2;
  } catch (const BadInput& e) {
    fmt::print(stderr, "spyre-dma: error: {}\n", e.what());
    return 2;
  } catch (const traces::OutputError& e) {
    fmt::print(stderr, "spyre-dma: error: {}\n", e.what());
    return 2;
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "spyre-dma: error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "spyre-dma: error: {}\n", e.what());
    return 1;
  }
}

spyre_dma::model::SimConfig model_config(const TraceAnalysisOptions& o, const traces::Trace* trace, std::string* note) {
  try {
    return traces::model_config_for(o.preset, o.config, trace ? &trace->header : nullptr, o.fidelity, note);
  } catch (const std::invalid_argument& e) {
    throw BadInput(fmt::format("--{}", e.what()));  // the library names the option without its dashes
  }
}

std::size_t staging_piece(const TraceAnalysisOptions& o) {
  if (o.staging_buffer.empty()) return 0;
  std::uint64_t b = 0;
  try {
    b = traces::parse_bytes(o.staging_buffer);
  } catch (const std::invalid_argument& e) {
    throw BadInput(fmt::format("--staging-buffer: {}", e.what()));
  }
  if (b == 0 || b % 128 != 0)
    throw BadInput(fmt::format("--staging-buffer \"{}\": expected a positive multiple of 128 bytes", o.staging_buffer));
  return static_cast<std::size_t>(b);
}

// scripts/plot-compare sits next to scripts/plot-sweep, whose path the build records. It runs by
// its own #! line (the system python3, where scripts/setup installs matplotlib), not by whichever
// python3 comes first on PATH.
std::string plot_script() {
  std::string s = SPYRE_DMA_PLOT_SCRIPT;
  const auto slash = s.find_last_of('/');
  return (slash == std::string::npos ? std::string() : s.substr(0, slash + 1)) + "plot-compare";
}

int draw(const nlohmann::json& doc, const std::string& json_path, const std::string& png) {
  std::string path = json_path;
  if (path.empty()) {
    path = png + ".json";
    write_json_file(doc, path);
  }
  const std::string cmd = fmt::format("'{}' '{}' '{}'", plot_script(), path, png);
  if (std::system(cmd.c_str()) != 0) {
    fmt::print(stderr, "spyre-dma: error: plotting failed: {}\n", cmd);
    return 1;
  }
  fmt::print("plot: {}\n", png);
  return 0;
}

}  // namespace

int run_trace_import(const TraceAnalysisOptions& o) {
  if (!check_outputs("trace import", {{"--out", o.out}}, {o.input})) return 2;
  return guarded([&] {
    if (!o.buffer_size.empty() && o.from != "nvbandwidth")
      throw BadInput(fmt::format("--buffer-size: only --from nvbandwidth takes it, not --from {}", o.from));
    traces::Trace t;
    if (o.from == "kineto") {
      traces::ImportReport r;
      t = traces::import_kineto(o.input, r);
      if (!o.device.empty()) t.header.device = o.device;
      t.header.link = o.link;
      fmt::print("{}: {} events: {} copies, {} memsets, {} kernels imported ({} joined to their host call); "
                 "{} ignored, {} unknown, {} malformed\n",
                 o.input, r.events_seen, r.memcpy, r.memset, r.kernels, r.joined_to_host, r.ignored, r.unknown,
                 r.malformed);
      for (const auto& n : r.notes) fmt::print("  note: {}\n", n);
    } else if (o.from == "nvbandwidth") {
      std::uint64_t buffer = 0;
      if (!o.buffer_size.empty()) {
        try {
          buffer = traces::parse_bytes(o.buffer_size);
        } catch (const std::invalid_argument& e) {
          throw BadInput(fmt::format("--buffer-size: {}", e.what()));
        }
        if (buffer == 0) throw BadInput(fmt::format("--buffer-size \"{}\": expected a positive size", o.buffer_size));
      }
      traces::NvbandwidthReport r;
      t = traces::import_nvbandwidth(o.input, traces::BandwidthTestImport{o.device, o.link}, r, buffer);
      fmt::print("{}: nvbandwidth {}: of {} testcases, {} imported as {} one-way points, {} bidirectional and {} "
                 "concurrent as {} groups on {} GPUs, {} latency as {} points; buffer {} bytes{}; skipped: {} not "
                 "passed, {} SM copies, {} between GPUs, {} multinode, {} unknown, {} without a value\n",
                 o.input, r.version.empty() ? "(no version)" : r.version, r.testcases, r.imported, r.points,
                 r.bidirectional, r.concurrent, r.groups, r.gpus, r.latency, r.latency_points, r.buffer_bytes,
                 r.buffer_bytes_assumed ? " (the version's default)" : "", r.not_passed, r.sm_copies, r.between_gpus,
                 r.multinode, r.unknown, r.without_value);
      for (const auto& n : r.notes) fmt::print("  note: {}\n", n);
    } else if (o.from == "rocm-bandwidth-test" || o.from == "hipbusbandwidth") {
      traces::RocmBandwidthReport r;
      const traces::BandwidthTestImport info{o.device, o.link};
      t = o.from == "hipbusbandwidth" ? traces::import_hip_bus_bandwidth(o.input, info, r)
                                      : traces::import_rocm_bandwidth_test(o.input, info, r);
      fmt::print("{}: {} of {} results imported, {} as bidirectional pairs; skipped: {} bidirectional, {} between "
                 "other devices, {} without a value, {} repeated, {} of unknown direction\n",
                 o.input, r.imported + r.pairs, r.results, r.pairs, r.bidirectional, r.other_path, r.no_value,
                 r.repeated, r.unknown_direction);
      for (const auto& n : r.notes) fmt::print("  note: {}\n", n);
    } else {
      t = traces::import_bandwidth_test(o.input, traces::BandwidthTestImport{o.device, o.link});
    }
    if (o.from != "kineto")
      fmt::print("{}: {} ops in {} allocations (one per size and stream) on {} device(s)\n", o.input, t.ops.size(),
                 t.allocations.size(), t.header.devices);
    traces::write_trace_file(t, o.out);
    fmt::print("wrote {}\n", o.out);
    return 0;
  });
}

int run_trace_compare(const TraceAnalysisOptions& o) {
  if (!check_outputs("trace compare", {{"--json", o.json}, {"--plot", o.plot}}, {o.captured, o.config})) return 2;
  return guarded([&]() -> int {
    if (o.backend != "sim") throw BadInput(fmt::format("--backend \"{}\": compare replays on the model (sim)", o.backend));
    const traces::Trace t = traces::read_trace(o.captured);
    const traces::Timing timing = traces::timing_from_string(o.timing);  // CLI11 checked the choice
    if (timing == traces::Timing::kHost &&
        std::none_of(t.ops.begin(), t.ops.end(), [](const traces::Op& op) { return op.host_duration_ns.has_value(); })) {
      throw BadInput(fmt::format("--timing host: no op of {} has a captured host_duration_ns (a trace the engine's "
                                 "recorder wrote has them; an imported capture measured device time)",
                                 o.captured));
    }
    std::string note;
    auto cfg = model_config(o, &t, &note);
    if (!note.empty()) fmt::print("{}\n", note);
    // The trace's groups and topology are read before the replay, so that a bad header is named
    // at once (an error about it names the file's header line).
    std::optional<std::uint32_t> header_per_switch;
    try {
      (void)traces::concurrent_groups(t);
      header_per_switch = traces::devices_per_switch(t.header);
    } catch (const traces::TraceError& e) {
      throw traces::TraceError(o.captured, e.line(), e.field(), e.message());
    }
    if (t.header.devices > 1) {
      // A server of the trace's devices: behind switches as the option, else the header, says;
      // else as the configuration arranges them (a link's preset: each on a root port of its own).
      cfg.topology.devices = t.header.devices;
      if (o.devices_per_switch >= 0) {
        cfg.topology.devices_per_switch = static_cast<std::uint32_t>(o.devices_per_switch);
      } else if (header_per_switch) {
        cfg.topology.devices_per_switch = *header_per_switch;
      }
      spyre_dma::model::validate(cfg, "trace compare");
      fmt::print("replaying {} devices at once on a server of {}, {}\n", t.header.devices, t.header.devices,
                 cfg.topology.devices_per_switch == 0
                     ? std::string("each on a root port of its own")
                     : fmt::format("{} per switch", cfg.topology.devices_per_switch));
    } else if (o.devices_per_switch >= 0) {
      throw BadInput(fmt::format("--devices-per-switch: {} is a trace of one device", o.captured));
    }
    traces::ReplayOptions ro;
    ro.staging_buffer_bytes = staging_piece(o);
    const traces::ReplayResult r = traces::replay_on_sim(t, cfg, ro);
    const traces::Comparison c = traces::compare(t, r, timing);
    fmt::print("{}", c.table());
    if (o.top > 0) fmt::print("{}", c.worst(t, static_cast<std::size_t>(o.top)));
    nlohmann::json doc = c.to_json();
    doc["config"] = spyre_dma::model::to_json(cfg);
    doc["data_ok"] = r.data_ok;
    doc["staging_buffer_bytes"] = ro.staging_buffer_bytes;
    doc["devices"] = t.header.devices;
    if (!o.json.empty()) write_json_file(doc, o.json);
    if (!r.data_ok) {
      fmt::print(stderr, "spyre-dma: error: replay data mismatch: {}\n", r.data_error);
      return 1;
    }
    if (!o.plot.empty()) return draw(doc, o.json, o.plot);
    return 0;
  });
}

int run_trace_calibrate(const TraceAnalysisOptions& o) {
  std::vector<std::string> inputs{o.captured, o.config};
  inputs.insert(inputs.end(), o.more_ranks.begin(), o.more_ranks.end());
  if (!check_outputs("trace calibrate", {{"--out", o.out}, {"--json", o.json}}, inputs)) return 2;
  return guarded([&]() -> int {
    if (!o.fit_sizes.empty() && !o.fit_half.empty()) throw BadInput("--fit-sizes and --fit-half: give one");
    const traces::Trace t = traces::read_trace(o.captured);
    std::vector<traces::Trace> more;
    for (const std::string& f : o.more_ranks) more.push_back(traces::read_trace(f));
    traces::CalibrateOptions co;
    std::string note;
    co.base = model_config(o, &t, &note);
    if (!note.empty()) fmt::print("{}\n", note);
    if (!o.fidelity.empty()) co.fidelity = co.base.fidelity;
    try {
      co.fit = traces::parse_selection(!o.fit_half.empty() ? o.fit_half : o.fit_sizes.empty() ? "all" : o.fit_sizes);
    } catch (const std::invalid_argument& e) {
      throw BadInput(fmt::format("{}: {}", o.fit_half.empty() ? "--fit-sizes" : "--fit-half", e.what()));
    }
    co.parameters = o.params;
    co.max_replays = o.max_replays;
    co.fit_copies_per_size = o.fit_copies;
    co.staging_buffer_bytes = staging_piece(o);
    std::vector<const traces::Trace*> ranks{&t};
    for (const traces::Trace& m : more) ranks.push_back(&m);
    if (!o.fit_ranks.empty() && ranks.size() == 1) throw BadInput("--fit-ranks: give the other ranks' traces too");
    if (o.node > 1 && ranks.size() > 1) throw BadInput("--node: one trace (the rank the node's profile is of)");
    co.fit_ranks = o.fit_ranks;
    co.node_devices = o.node;
    if (ranks.size() > 1) {
      fmt::print("fitting {} ranks together, rank i on device i of a server of {} arranged as the configuration's "
                 "topology\n", ranks.size(), ranks.size());
    }
    const traces::CalibrationResult r = ranks.size() > 1 ? traces::calibrate_together(ranks, co) : traces::calibrate(t, co);
    fmt::print("{}", r.summary());
    r.write_config_file(o.out, r.fit.source.empty() ? t.header.source : r.fit.source);
    fmt::print("wrote {}\n", o.out);
    if (!o.json.empty()) write_json_file(r.to_json(), o.json);
    return 0;
  });
}

void add_trace_analysis_commands(CLI::App& trace) {
  static TraceAnalysisOptions o;
  auto finish = [](int rc) {
    std::fflush(stdout);
    std::fflush(stderr);
    std::exit(rc);
  };

  CLI::App* imp = trace.add_subcommand(
      "import", "Convert a capture (Kineto, bandwidthTest, nvbandwidth, rocm-bandwidth-test, hipBusBandwidth) into a trace file");
  imp->add_option("--from", o.from, "Capture format")
      ->required()
      ->check(CLI::IsMember({"kineto", "bandwidthtest", "nvbandwidth", "rocm-bandwidth-test", "hipbusbandwidth"}));
  imp->add_option("input", o.input,
                  "Capture file (Kineto: Chrome-trace JSON, plain or gzip; nvbandwidth: its --json output; the others: "
                  "their printed log)")
      ->required();
  imp->add_option("--buffer-size", o.buffer_size,
                  "nvbandwidth: the --bufferSize it ran with (e.g. 512MiB; default: its version's default)");
  imp->add_option("--out", o.out, "Trace file to write (JSON Lines)")->required();
  imp->add_option("--device", o.device, "Device name for the header (Kineto: taken from the file when left out)");
  imp->add_option("--link", o.link, "Host link for the header, e.g. \"PCIe Gen3 x16\" (calibrate picks its base preset from it)");
  imp->callback([finish] { finish(run_trace_import(o)); });

  CLI::App* cmp = trace.add_subcommand("compare", "Replay a captured trace on the model and compare durations");
  cmp->add_option("captured", o.captured, "Captured trace file")->required();
  cmp->add_option("--backend", o.backend, "Backend to replay on (sim)");
  cmp->add_option("--preset", o.preset, "Model preset (default: from the trace's link, else spyre-gen5x16)");
  cmp->add_option("--config", o.config, "Model configuration file (e.g. from trace calibrate)");
  cmp->add_option("--fidelity", o.fidelity, "tlp or burst (overrides the configuration)");
  cmp->add_option("--staging-buffer", o.staging_buffer,
                  "Staging piece of the replay's engine for pageable copies, e.g. 1MiB (trace calibrate reports it)");
  cmp->add_option("--devices-per-switch", o.devices_per_switch,
                  "A trace of several devices: how many consecutive devices share a PCIe switch (0: each on a root "
                  "port of its own; default: the trace header's extra.devices_per_switch, else the configuration's)")
      ->check(CLI::Range(0, 16));
  cmp->add_option("--timing", o.timing,
                  "Which time to compare: device (the captured duration_ns against the replayed ops' device time) "
                  "or host (host_duration_ns against their host time, staging included)")
      ->check(CLI::IsMember({"device", "host"}));
  cmp->add_option("--top", o.top, "List the N ops off the most, with where and when the capture ran them (0: none)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000000));
  cmp->add_option("--json", o.json, "Write the comparison as JSON");
  cmp->add_option("--plot", o.plot, "Draw captured and simulated duration against size (PNG)");
  cmp->callback([finish] { finish(run_trace_compare(o)); });

  CLI::App* cal = trace.add_subcommand("calibrate", "Fit model parameters to a captured trace; write a configuration file");
  cal->add_option("captured", o.captured, "Captured trace file")->required();
  cal->add_option("more", o.more_ranks,
                  "Other ranks' traces of the same node: all are fitted together, trace i replayed on device i of "
                  "a server of one device per trace, arranged as the configuration's topology (--preset or --config)");
  cal->add_option("--fit-ranks", o.fit_ranks,
                  "With several traces: the ranks (from 0, in the order given) whose copies are fitted; the others "
                  "replay alongside and are held out (default: every rank)");
  cal->add_option("--out", o.out, "Configuration file to write (loads with --config)")->required();
  cal->add_option("--fit-sizes", o.fit_sizes, "Copies to fit on: all, below:SIZE, atleast:SIZE, range:LO:HI");
  cal->add_option("--fit-half", o.fit_half, "Fit on alternate distinct sizes: even or odd")->check(CLI::IsMember({"even", "odd"}));
  cal->add_option("--param", o.params, "Configuration key to fit (repeatable; default: what the trace determines)");
  cal->add_option("--max-replays", o.max_replays, "Replay budget of the fit")->check(CLI::Range(4, 1000));
  cal->add_option("--fit-copies", o.fit_copies, "Copies of each size the fit replays (0: all)");
  cal->add_option("--node", o.node,
                  "The trace is one rank of a node of N devices: it runs on device 0 of a server of N arranged as the "
                  "configuration's topology, the same profile on the others as the other ranks' traffic")
      ->check(CLI::Range(0, 16));
  cal->add_option("--staging-buffer", o.staging_buffer,
                  "Staging piece of the replay's engine when it is not fitted (--param engine.staging_buffer_bytes fits it)");
  cal->add_option("--preset", o.preset, "Base preset (default: from the trace's link)");
  cal->add_option("--config", o.config, "Base configuration file");
  cal->add_option("--fidelity", o.fidelity, "Fidelity of the fit's replays: burst (default) or tlp");
  cal->add_option("--json", o.json, "Write the calibration report as JSON");
  cal->callback([finish] { finish(run_trace_calibrate(o)); });
}

}  // namespace spyre_dma_cli
