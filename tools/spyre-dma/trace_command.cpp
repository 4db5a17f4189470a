#include "trace_command.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <vector>

#include "backend.hpp"
#include "size_spec.hpp"
#include "spyre_dma/engine.hpp"
#include "spyre_dma/traces/recorder.hpp"
#include "spyre_dma/traces/replay.hpp"
#include "spyre_dma/traces/trace_io.hpp"
#include "spyre_dma/traces/output_file.hpp"
#include "outputs.hpp"
#include "cli_checks.hpp"
#include "memory_check.hpp"

namespace spyre_dma_cli {

namespace st = spyre_dma::traces;

namespace {

std::string kind_label(const st::Op& op) {
  std::string k = st::to_string(op.kind);
  if (op.host != st::HostMemory::kNone) k += std::string(" ") + st::to_string(op.host);
  return k;
}

int run_show(const TraceOptions& o) {
  const st::Trace t = st::read_trace(o.file);
  struct Row {
    std::uint64_t count = 0, bytes = 0;
  };
  std::map<std::string, Row> by_kind;
  std::set<std::pair<std::uint32_t, std::uint32_t>> streams;  // (device, stream)
  std::optional<double> first, last;
  for (const st::Op& op : t.ops) {
    Row& r = by_kind[kind_label(op)];
    ++r.count;
    r.bytes += op.bytes;
    streams.insert({op.device, op.stream});
    if (op.start_ns) {
      first = std::min(first.value_or(*op.start_ns), *op.start_ns);
      last = std::max(last.value_or(0.0), *op.start_ns + op.duration_ns.value_or(0.0));
    }
  }
  fmt::print("trace {}: format version {}, source '{}', device '{}', link '{}', resolution {} ns\n", o.file,
             t.header.version, t.header.source, t.header.device, t.header.link.empty() ? "?" : t.header.link,
             t.header.resolution_ns);
  fmt::print("{} ops on {} streams, {} allocations, {} device(s)\n", t.ops.size(), streams.size(),
             t.allocations.size(), t.header.devices);
  fmt::print("{:<24} {:>10} {:>16}\n", "kind", "ops", "bytes");
  for (const auto& [k, r] : by_kind) fmt::print("{:<24} {:>10} {:>16}\n", k, r.count, r.bytes);
  if (first) {
    fmt::print("captured device time span: {:.3f} us\n", (*last - *first) / 1000.0);
  } else {
    fmt::print("no captured device times\n");
  }
  return 0;
}

std::string summary_table(const st::Trace& t, const st::ReplayResult& r) {
  struct Row {
    std::uint64_t count = 0;
    double sum_ns = 0;
  };
  std::map<std::pair<std::string, std::uint64_t>, Row> rows;
  for (std::size_t i = 0; i < t.ops.size(); ++i) {
    Row& row = rows[{kind_label(t.ops[i]), t.ops[i].bytes}];
    ++row.count;
    row.sum_ns += r.ops[i].duration_ns;
  }
  std::string s = fmt::format("{:<24} {:>10} {:>8} {:>14} {:>10}\n", "kind", "size", "ops", "mean us", "GB/s");
  for (const auto& [key, row] : rows) {
    const double mean = row.sum_ns / static_cast<double>(row.count);
    const double gbps = mean > 0 && key.second ? static_cast<double>(key.second) / mean : 0.0;
    s += fmt::format("{:<24} {:>10} {:>8} {:>14.3f} {:>10.2f}\n", key.first,
                     key.second ? format_size(key.second) : "-", row.count, mean / 1000.0, gbps);
  }
  return s;
}

namespace {

// Several devices at once: trace i on device i (one trace: the same on every device).
int run_replay_together(const TraceOptions& o, const st::ReplayOptions& ro) {
  BackendOptions backend = o.backend;
  std::vector<std::string> files{o.file};
  files.insert(files.end(), o.more_files.begin(), o.more_files.end());
  if (files.size() > 1 && backend.devices > 1 && backend.devices != files.size()) {
    fmt::print(stderr, "spyre-dma trace replay: --devices {} with {} trace files: give one trace per device, or one "
               "trace for every device\n", backend.devices, files.size());
    return 2;
  }
  if (files.size() > 1) backend.devices = static_cast<std::uint32_t>(files.size());
  std::vector<st::Trace> traces;
  for (const std::string& f : files) traces.push_back(st::read_trace(f));
  std::vector<const st::Trace*> per_device;
  for (std::uint32_t d = 0; d < backend.devices; ++d) per_device.push_back(&traces[files.size() > 1 ? d : 0]);
  std::vector<spyre_dma::backend::Instance> instances = open_backends(backend);
  const std::string name = instances.front().device->describe().name;
  const auto wall0 = std::chrono::steady_clock::now();
  const std::vector<st::ReplayResult> results = st::replay_together(per_device, std::move(instances), ro);
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  std::size_t ops = 0;
  for (const st::Trace* t : per_device) ops += t->ops.size();
  fmt::print("replayed {} trace(s) on {} devices at once ({} ops) on {} in {:.3f} s wall\n", files.size(),
             backend.devices, ops, name, wall_s);
  nlohmann::json devices = nlohmann::json::array();
  bool ok = true;
  for (std::size_t d = 0; d < results.size(); ++d) {
    const std::string& file = files[files.size() > 1 ? d : 0];
    fmt::print("\ndevice {}: {}\n{}{}", d, file, summary_table(*per_device[d], results[d]), results[d].summary());
    nlohmann::json j = results[d].to_json();
    j["device"] = d;
    j["trace"] = file;
    devices.push_back(std::move(j));
    if (!results[d].data_ok) {
      fmt::print(stderr, "spyre-dma trace replay: device {}: error: {}\n", d, results[d].data_error);
      ok = false;
    }
  }
  if (!o.json.empty()) {
    const nlohmann::json j = {{"devices", devices}, {"backend", backend_config(backend)}, {"wall_s", wall_s}};
    try {
      spyre_dma::traces::write_file_atomically(o.json, j.dump(1) + "\n");
    } catch (const spyre_dma::traces::OutputError& e) {
      fmt::print(stderr, "spyre-dma trace replay: --json: {}\n", e.what());
      return 2;
    }
  }
  return ok ? 0 : 1;
}

}  // namespace

int run_replay(const TraceOptions& o) {
  const BackendOptions& backend = o.backend;
  if (std::string e = check_backend_options(backend); !e.empty()) {
    fmt::print(stderr, "spyre-dma trace replay: {}\n", e);
    return 2;
  }
  std::vector<std::string> inputs{o.file};
  inputs.insert(inputs.end(), o.more_files.begin(), o.more_files.end());
  if (!check_outputs("trace replay", {{"--json", o.json}, {"--perfetto", o.perfetto}}, inputs)) return 2;
  st::ReplayOptions ro;
  ro.honour_start_times = o.honour_start_times;
  ro.verify_data = !o.no_verify;
  ro.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(to_timeout(o.timeout_s));
  ro.perfetto_path = o.perfetto;
  if (!o.more_files.empty()) return run_replay_together(o, ro);
  const st::Trace t = st::read_trace(o.file);
  if (t.header.devices == 1 && backend.devices > 1) return run_replay_together(o, ro);
  // A trace of several devices runs on as many, opened together (one server on sim and rtl).
  if (t.header.devices > 1 && backend.devices > 1 && backend.devices != t.header.devices) {
    fmt::print(stderr, "spyre-dma trace replay: --devices {}: {} is a trace of {} devices\n", backend.devices, o.file,
               t.header.devices);
    return 2;
  }
  BackendOptions opened = backend;
  opened.devices = t.header.devices;
  std::vector<spyre_dma::backend::Instance> instances = open_backends(opened);
  const std::string name = instances.front().device->describe().name;
  const auto wall0 = std::chrono::steady_clock::now();
  const st::ReplayResult r = t.header.devices > 1 ? st::replay(t, std::move(instances), ro)
                                                  : st::replay(t, std::move(instances.front()), ro);
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  fmt::print("replayed {} ({} ops{}) on {} in {:.3f} s wall ({:.0f} ops/s)\n", o.file, t.ops.size(),
             t.header.devices > 1 ? fmt::format(", {} devices at once", t.header.devices) : std::string(), name,
             wall_s, wall_s > 0 ? static_cast<double>(t.ops.size()) / wall_s : 0.0);
  fmt::print("{}", summary_table(t, r));
  fmt::print("{}", r.summary());
  if (!o.json.empty()) {
    nlohmann::json j = r.to_json();
    j["trace"] = o.file;
    j["backend"] = backend_config(backend);
    j["wall_s"] = wall_s;
    try {
      spyre_dma::traces::write_file_atomically(o.json, j.dump(1) + "\n");
    } catch (const spyre_dma::traces::OutputError& e) {
      fmt::print(stderr, "spyre-dma trace replay: --json: {}\n", e.what());
      return 2;
    }
  }
  if (!r.data_ok) {
    fmt::print(stderr, "spyre-dma trace replay: error: {}\n", r.data_error);
    return 1;
  }
  return 0;
}

int run_capture(const TraceOptions& o) {
  const BackendOptions& backend = o.backend;
  if (std::string e = check_backend_options(backend); !e.empty()) {
    fmt::print(stderr, "spyre-dma trace capture: {}\n", e);
    return 2;
  }
  if (!check_outputs("trace capture", {{"--out", o.out}})) return 2;
  const std::vector<std::uint64_t> sizes = parse_size_list(o.sizes);
  spyre_dma::backend::Instance instance = open_backend(backend);
  const st::Header header = st::capture_header(backend.name, instance, backend_config(backend));
  std::shared_ptr<spyre_dma::Device> device = std::move(instance.device);
  auto recorder = std::make_shared<st::TraceRecorder>(header);
  spyre_dma::EngineOptions eo;
  eo.observer = recorder;
  auto engine = spyre_dma::Engine::open(device, eo);
  std::vector<spyre_dma::Stream> streams;
  for (int i = 0; i < std::max(1, o.streams); ++i) streams.push_back(engine->create_stream());
  const std::uint64_t largest = *std::max_element(sizes.begin(), sizes.end());
  // Saturating: a span past 2^64 is refused below as more than any device holds.
  const std::uint64_t span = largest > UINT64_MAX / streams.size() ? UINT64_MAX : largest * streams.size();
  // A registered and a pageable buffer of `span`, plus the device pages a host-resident device backs.
  if (std::string e = check_transfer_memory("--sizes", span, 3.0 * static_cast<double>(span), engine->limits());
      !e.empty()) {
    fmt::print(stderr, "spyre-dma trace capture: {}\n", e);
    return 2;
  }
  spyre_dma::DeviceBuffer buf = engine->allocate(span);
  spyre_dma::HostBuffer pinned = engine->allocate_host(span);
  std::vector<std::uint8_t> pageable(span, 0x5a);
  const auto timeout = to_timeout(o.timeout_s);
  int failures = 0;
  for (const std::uint64_t size : sizes) {
    for (const std::string& mem : o.memory) {
      for (int rep = 0; rep < o.repeat; ++rep) {
        for (std::size_t s = 0; s < streams.size(); ++s) {
          std::uint8_t* host = (mem == "registered" ? static_cast<std::uint8_t*>(pinned.data()) : pageable.data()) +
                               s * largest;
          for (const std::string& dir : o.directions) {
            if (dir == "h2d") streams[s].copy_h2d(buf, s * largest, host, size);
            if (dir == "d2h") streams[s].copy_d2h(host, buf, s * largest, size);
          }
        }
        if (!engine->synchronize(timeout).ok()) ++failures;
      }
    }
  }
  st::Trace t = recorder->trace();
  engine.reset();
  device.reset();
  st::write_trace_file(t, o.out);
  fmt::print("captured {} ops into {}\n", t.ops.size(), o.out);
  return failures ? 1 : 0;
}

}  // namespace

CLI::App* add_trace_command(CLI::App& app, TraceOptions& o) {
  CLI::App* trace = app.add_subcommand("trace", "Trace tools: show, replay, capture (and importers)");
  trace->require_subcommand(1);

  o.show = trace->add_subcommand("show", "Summarise a trace: ops by kind, bytes, streams, time span");
  o.show->add_option("file", o.file, "Trace file (JSON Lines, optionally gzip-compressed)")->required();

  o.replay = trace->add_subcommand("replay", "Replay a trace on a backend; report per-op device durations");
  o.replay->add_option("file", o.file, "Trace file")->required();
  o.replay->add_option("more", o.more_files,
                       "More trace files: each on a device of its own, all at once (the first on device 0; sim, "
                       "rtl: one simulated server, its PCIe tree from the configuration's topology)");
  auto backend_opts = [&o](CLI::App* c) {
    add_backend_options(*c, o.backend);
    c->add_option("--timeout", o.timeout_s, "Seconds the whole run may take")->capture_default_str()->check(timeout_seconds());
  };
  backend_opts(o.replay);
  add_devices_option(*o.replay, o.backend);
  o.replay->add_flag("--honour-start-times", o.honour_start_times,
                     "Hold each op until the device time reaches its captured start (relative to the first)");
  o.replay->add_flag("--no-verify", o.no_verify, "Skip the data check");
  o.replay->add_option("--json", o.json, "Write per-op start and duration (ns) and the totals to FILE");
  o.replay->add_option("--perfetto", o.perfetto, "Write the replay's op timeline as Perfetto JSON to FILE");

  o.capture = trace->add_subcommand("capture", "Run an H2D/D2H size sweep through the engine and record it");
  o.capture->add_option("--out", o.out, "Trace file to write")->required();
  backend_opts(o.capture);
  o.capture->add_option("--sizes", o.sizes, "Transfer sizes (e.g. 4KiB..1MiB, 4KiB,64KiB)")->check(size_list());
  o.capture->add_option("--repeat", o.repeat, "Rounds per size and memory kind")->check(CLI::PositiveNumber);
  o.capture->add_option("--streams", o.streams, "Streams, each with its own range")->check(CLI::Range(1, 64));
  o.capture->add_option("--directions", o.directions, "Directions")->check(CLI::IsMember({"h2d", "d2h"}));
  o.capture->add_option("--memory", o.memory, "Host memory kinds")->check(CLI::IsMember({"registered", "pageable"}));
  return trace;
}

bool trace_verb_parsed(const TraceOptions& o) {
  return (o.show && o.show->parsed()) || (o.replay && o.replay->parsed()) || (o.capture && o.capture->parsed());
}

int run_trace(const TraceOptions& o) {
  try {
    if (o.show->parsed()) return run_show(o);
    if (o.replay->parsed()) return run_replay(o);
    if (o.capture->parsed()) return run_capture(o);
  } catch (const st::TraceError& e) {
    fmt::print(stderr, "spyre-dma trace: {}\n", e.what());
    return 2;
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "spyre-dma trace: {}\n", e.what());
    return 2;
  }
  return 2;
}

}  // namespace spyre_dma_cli
