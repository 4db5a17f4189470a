#include "demo_command.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>


#include "backend.hpp"
#include "json_report.hpp"
#include "report_table.hpp"
#include "size_spec.hpp"
#include "spyre_dma/spyre_dma.hpp"
#include "sweep.hpp"
#include "spyre_dma/traces/output_file.hpp"
#include "cli_checks.hpp"
#include "memory_check.hpp"
#include "outputs.hpp"
#include "spyre_dma/text.hpp"

namespace spyre_dma_cli {
namespace {

using spyre_dma::lower;


const char* time_base_name(TimeBase t) {
  switch (t) {
    case TimeBase::kDevice: return "device (first CB start to last CB end, on the device's clock)";
    case TimeBase::kHost:
      return "host (the first call to the last completion the engine saw, staging included, on the device's clock)";
    case TimeBase::kWall: break;
  }
  return "wall (first submission to last stream synchronized)";
}

SweepConfig sweep_config(const DemoOptions& o) {
  SweepConfig c;
  c.sizes = parse_size_list(o.sizes);  // validated at parse time already
  c.directions.clear();
  for (const auto& d : o.directions) {
    const Direction v = lower(d) == "h2d" ? Direction::kH2D : Direction::kD2H;
    if (std::find(c.directions.begin(), c.directions.end(), v) == c.directions.end()) c.directions.push_back(v);
  }
  c.memories.clear();
  for (const auto& m : o.memory) {
    const HostMemory v = lower(m) == "registered" ? HostMemory::kRegistered : HostMemory::kPageable;
    if (std::find(c.memories.begin(), c.memories.end(), v) == c.memories.end()) c.memories.push_back(v);
  }
  c.repeat = o.repeat;
  c.streams = o.streams;
  c.timeout = to_timeout(o.timeout_s);
  return c;
}

nlohmann::json options_json(const DemoOptions& o, const SweepConfig& c) {
  nlohmann::json dirs = nlohmann::json::array(), mems = nlohmann::json::array();
  for (Direction d : c.directions) dirs.push_back(std::string(to_string(d)));
  for (HostMemory m : c.memories) mems.push_back(std::string(to_string(m)));
  return {{"sizes", o.sizes},       {"sizes_bytes", c.sizes}, {"repeat", c.repeat},
          {"streams", c.streams},   {"backend", o.backend.name},   {"devices", o.backend.devices},
          {"directions", dirs},
          {"host_memory", mems},    {"timeout_s", o.timeout_s}, {"statistic", "median"},
          {"json", o.json}};
}

}  // namespace

CLI::App* add_demo_command(CLI::App& app, DemoOptions& o) {
  CLI::App* demo = app.add_subcommand(
      "demo", "Open an engine on a device backend and sweep H2D/D2H transfer sizes over registered and "
              "pageable host memory; prints the median time and GB/s of every point, checks every D2H");
  demo->add_option("--sizes", o.sizes,
                   "Transfer sizes: a comma-separated list of sizes (4096, 4K, 64MiB; binary units) and "
                   "ranges A..B (x4 steps) or A..B*F (xF steps)")
      ->capture_default_str()
      ->check(size_list());
  demo->add_option("--repeat", o.repeat, "Timed runs per point (the median is reported)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  demo->add_option("--streams", o.streams, "Split each transfer's bytes across N streams")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  demo->add_option("--json", o.json, "Also write the results, the resolved options and the device limits to FILE")
      ->type_name("FILE");
  add_backend_options(*demo, o.backend);
  add_devices_option(*demo, o.backend);
  demo->add_flag("--dump-config", o.dump_config, "Print the resolved backend configuration as JSON and exit");
  demo->add_option("--plot", o.plot, "Also draw bandwidth and latency against size into FILE (PNG; needs --json)");
  demo->add_option("--directions", o.directions, "Directions to measure")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::IsMember({"h2d", "d2h"}, CLI::ignore_case));
  demo->add_option("--memory", o.memory, "Host memory kinds to measure")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::IsMember({"registered", "pageable"}, CLI::ignore_case));
  demo->add_option("--timeout", o.timeout_s, "Seconds one transfer may take before the demo calls it a stall")
      ->capture_default_str()
      ->check(timeout_seconds());
  demo->add_option("--timing", o.timing,
                   "What a run's time is: device (first CB start to last CB end, the device's clock) or "
                   "host (the first call to the last completion the engine saw, staging copies included, "
                   "on the device's clock); default device on a simulated device, else the wall clock")
      ->check(CLI::IsMember({"device", "host"}));
  return demo;
}

int run_demo(const DemoOptions& o) {
  SweepConfig config = sweep_config(o);
  // Find out now, not after the sweep, that a file cannot be written.
  if (!check_outputs("demo", {{"--json", o.json}, {"--plot", o.plot}, {"--trace", o.backend.trace},
                              {"--wave", o.backend.wave}},
                     {o.backend.config})) {
    return 2;
  }

  const BackendOptions& backend = o.backend;
  if (std::string e = check_backend_options(backend); !e.empty()) {
    fmt::print(stderr, "spyre-dma demo: {}\n", e);
    return 2;
  }
  if (o.dump_config) {
    fmt::print("{}\n", backend_config(backend).dump(2));
    return 0;
  }
  if (!o.plot.empty() && o.json.empty()) {
    fmt::print(stderr, "spyre-dma demo: --plot '{}' needs --json FILE (the plot is drawn from it)\n", o.plot);
    return 2;
  }
  std::vector<spyre_dma::backend::Instance> instances;
  try {
    instances = open_backends(backend);
  } catch (const std::exception& e) {
    fmt::print(stderr, "spyre-dma demo: {}\n", e.what());
    return 2;
  }
  const spyre_dma::backend::Instance& instance = instances.front();
  const std::shared_ptr<spyre_dma::Device>& device = instance.device;
  const spyre_dma::DeviceDescription desc = device->describe();
  // A simulated device is timed by its own clock; a real one by the wall clock unless asked.
  if (o.timing == "host") {
    if (!desc.host_clock) {
      fmt::print(stderr, "spyre-dma demo: --timing host: backend {} gives no host time on its clock\n", desc.backend);
      return 2;
    }
    config.time_base = TimeBase::kHost;
  } else if (o.timing == "device" || instance.clock != nullptr) {
    config.time_base = TimeBase::kDevice;
  }
  std::vector<std::unique_ptr<spyre_dma::Engine>> engines;  // one per device
  std::vector<spyre_dma::Engine*> engine_ptrs;
  for (const auto& i : instances) {
    engines.push_back(spyre_dma::Engine::open(i.device));
    engine_ptrs.push_back(engines.back().get());
  }
  spyre_dma::Engine* engine = engine_ptrs.front();
  const spyre_dma::DeviceLimits& lim = engine->limits();
  const spyre_dma::EngineOptions& eo = engine->options();

  // Sizes the machine cannot hold are option errors, reported before anything runs.
  const std::uint64_t max_bytes = *std::max_element(config.sizes.begin(), config.sizes.end());
  // Source and destination per host memory kind, plus (refdev) the device pages it touches.
  const double host_needed = static_cast<double>(max_bytes) * static_cast<double>(2 * config.memories.size() + 1) *
                             static_cast<double>(engines.size());
  if (std::string e = check_transfer_memory("--sizes", max_bytes, host_needed, lim); !e.empty()) {
    fmt::print(stderr, "spyre-dma demo: {}\n", e);
    return 2;
  }

  fmt::print("spyre-dma demo: backend {} ({}), contract {}.{}, ring slots {}/{}/{} (compute/DMAI/DMAO), "
             "CBs up to {}, staging {} x {}\n",
             desc.backend, desc.name, lim.version >> 16, lim.version & 0xFFFF, lim.ring_slots[0], lim.ring_slots[1],
             lim.ring_slots[2], format_size(lim.max_cb_bytes), eo.staging_buffers, format_size(eo.staging_buffer_bytes));
  if (engines.size() > 1) {
    fmt::print("{} devices at once, one engine each; GB/s is all devices together, the notes give each device's\n",
               engines.size());
  }
  fmt::print("timing: {}\n", time_base_name(config.time_base));
  fmt::print("{} sizes ({} .. {}), {} direction(s), {} host memory kind(s), {} run(s) per point (median), "
             "{} stream(s)\n\n",
             config.sizes.size(), format_size(*std::min_element(config.sizes.begin(), config.sizes.end())),
             format_size(*std::max_element(config.sizes.begin(), config.sizes.end())), config.directions.size(),
             config.memories.size(), config.repeat, config.streams);

  nlohmann::json doc = {{"tool", "spyre-dma demo"}, {"version", SPYRE_DMA_VERSION},
                        {"options", options_json(o, config)}, {"device", device_json(*engine, desc)},
                        {"config", backend_config(backend)},
                        {"timing", time_base_name(config.time_base)}};
  auto write_json = [&](const char* status, const std::string& error) {
    if (o.json.empty()) return true;
    doc["status"] = status;
    if (!error.empty()) doc["error"] = error;
    try {
      write_json_file(o.json, doc);
      return true;
    } catch (const std::exception& e) {
      fmt::print(stderr, "spyre-dma demo: --json: {}\n", e.what());
      return false;
    }
  };

  const auto t0 = std::chrono::steady_clock::now();
  ReportTable table(stdout);
  std::unique_ptr<Sweep> sweep;
  try {
    sweep = std::make_unique<Sweep>(engine_ptrs, config);
    table.header();
    sweep->run([&](const PointResult& r) { table.row(r); });
  } catch (const std::exception& e) {  // SweepError, or spyre_dma::Error from allocation
    std::fflush(stdout);
    fmt::print(stderr, "\nspyre-dma demo: FAILED: {}\n", e.what());
    if (sweep) doc["results"] = results_json(sweep->results());
    (void)write_json("failed", e.what());
    return 1;
  }
  table.rule();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::size_t verified_runs = 0;
  for (const PointResult& r : sweep->results()) verified_runs += r.verified ? r.run_ns.size() : 0;
  fmt::print("{} points in {:.2f} s ({:.2f} s moving data, the rest filling and checking host buffers); "
             "{} D2H runs verified byte-exact against the data sent\n",
             sweep->results().size(), secs, sweep->transfer_wall_s(), verified_runs);

  doc["results"] = results_json(sweep->results());
  auto stats_json = [](const spyre_dma::EngineStats& s) {
    return nlohmann::json{{"ops_submitted", s.ops_submitted}, {"ops_completed", s.ops_completed},
                          {"ops_failed", s.ops_failed},       {"cbs_submitted", s.cbs_submitted},
                          {"doorbells", s.doorbells},         {"bytes_h2d", s.bytes_h2d},
                          {"bytes_d2h", s.bytes_d2h},         {"bytes_staged", s.bytes_staged},
                          {"queue_full_stalls", s.queue_full_stalls}, {"staging_stalls", s.staging_stalls}};
  };
  doc["engine_stats"] = stats_json(engine->stats());
  doc["elapsed_s"] = secs;
  doc["transfer_wall_s"] = sweep->transfer_wall_s();
  if (instance.statistics) doc["device_statistics"] = instance.statistics->statistics();
  if (engines.size() > 1) {  // the keys above are device 0's; every device's, in order, here
    nlohmann::json per_device = nlohmann::json::array();
    for (std::size_t i = 0; i < engines.size(); ++i) {
      nlohmann::json d = {{"engine_stats", stats_json(engines[i]->stats())}};
      if (instances[i].statistics) d["device_statistics"] = instances[i].statistics->statistics();
      per_device.push_back(std::move(d));
    }
    doc["devices"] = std::move(per_device);
  }
  if (!write_json("ok", "")) return 1;
  if (!o.json.empty()) fmt::print("results written to {}\n", o.json);
  if (!o.plot.empty()) {
    // The script runs under Debian's python3, where scripts/setup installs matplotlib.
    const std::string cmd = fmt::format("'{}' '{}' '{}'", SPYRE_DMA_PLOT_SCRIPT, o.json, o.plot);
    if (std::system(cmd.c_str()) != 0) {
      fmt::print(stderr, "spyre-dma demo: --plot: drawing '{}' failed (python3 with matplotlib is needed)\n", o.plot);
      return 1;
    }
    fmt::print("plot written to {}\n", o.plot);
  }
  return 0;
}

}  // namespace spyre_dma_cli
