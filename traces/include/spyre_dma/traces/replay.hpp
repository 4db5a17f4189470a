// Replaying a trace on a device backend through the engine.
//
// Each trace stream becomes an engine stream (strict ordering), allocations and host buffers are
// recreated (registered or pageable as recorded), dependencies across streams become engine
// events, and events recorded/waited in the trace map to engine events. Data is synthesised:
// every H2D source gets a deterministic pattern derived from the op id, a shadow of device memory
// follows every H2D, fill and D2D, and at the end each D2H's host buffer must hold what the
// shadow says that range held when the D2H ran.
//
// Timing: per-op durations come from the device timestamps the engine reports
// (Op::device_start_ns / device_end_ns; simulated time on sim, the device's clock on refdev).
// By default ops are issued as fast as their dependencies allow. With honour_start_times, each
// op (that has a captured start_ns) is held until the device's time has reached its captured
// start relative to the trace's first captured start (where the capture recorded the op's call,
// host_start_ns, that instead: the device start then follows from the model, as it followed from
// the device, and host times compare too): on a host-driven device (sim) the replay
// submits a compute op of the remaining gap on the op's stream ahead of it (simulated time, so
// the replay stays deterministic); on a self-timed device (refdev) it sleeps on the wall clock.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "spyre_dma/backend/registry.hpp"
#include "spyre_dma/model/sim_config.hpp"
#include "spyre_dma/traces/trace.hpp"

namespace spyre_dma::traces {

struct ReplayOptions {
  bool honour_start_times = false;
  bool verify_data = true;
  std::chrono::milliseconds timeout{60000};  // for the whole replay's final wait
  std::string perfetto_path;                 // write the replay's op timeline here ("" none)
  // The engine's staging piece for pageable host memory (EngineOptions::staging_buffer_bytes; a
  // multiple of 128 bytes): a driver that stages in smaller pieces than the engine's default
  // starts the device after its first piece, so the staging of the rest is in the device time.
  // 0: the engine's default.
  std::size_t staging_buffer_bytes = 0;
};

struct OpTiming {
  std::uint64_t id;    // the trace op's id
  double start_ns;     // device start, relative to the replay's first device start
  double duration_ns;  // device end - device start (0 for ops that do not reach the device)
  // Host time (docs/engine.md, "Timing"), where the device gives it: the call that submitted the
  // op, relative to the same origin, and from there to the completion the engine saw.
  double host_start_ns = 0;
  double host_duration_ns = 0;
};

struct ReplayResult {
  std::vector<OpTiming> ops;  // in trace order
  double total_ns = 0;        // first device start to last device end
  bool data_ok = true;
  std::string data_error;     // the first mismatch (op id, offset, expected, got), or a failed op
  nlohmann::json to_json() const;
  // One line: op count, device time span, the data check (spyre-dma trace replay adds a table
  // per kind and size, which needs the trace).
  std::string summary() const;
};

// Replays `trace` on `backend`'s device (a fresh device: the replay opens the engine on it). Its
// memory backdoor, where it has one, is read at the end to compare every allocation's content
// with the shadow; its simulated clock, where it has one, holds ops to their captured starts
// (honour_start_times). Throws TraceError for a trace check_trace() rejects, spyre_dma::Error for
// engine failures before anything is submitted; failed ops are reported in data_ok/data_error.
// A trace of several devices (header.devices > 1) needs them all: std::invalid_argument here.
ReplayResult replay(const Trace& trace, spyre_dma::backend::Instance backend, const ReplayOptions& options);

// Replays a trace of header.devices devices on as many (Registry::open_devices, or a simulated
// server's): device d's allocations and ops on devices[d], all at once, driven from the calling
// thread as replay_together() drives its traces (deterministic on a simulated server). A
// dependency on another device's op is waited for on the host: the op is submitted once the
// other device's engine reports that op done. Captured start times (honour_start_times) count
// from the trace's first, whichever device has it. The result is the trace's: per-op timings in
// trace order keyed by the trace's op ids, starts relative to the first device start of any
// device; data_error names the device. Throws as replay() does, and std::invalid_argument when
// devices.size() is not header.devices.
ReplayResult replay(const Trace& trace, std::vector<spyre_dma::backend::Instance> devices, const ReplayOptions& options);

// Replays traces[i] on devices[i], all at once, driven from the calling thread in turn (on a
// simulated server, deterministically): several ranks' profiles of one node on a server's devices
// (Registry::open_devices). Each result is its own device's, its ops' starts relative to that
// device's first start. With options.perfetto_path, one timeline of every device (a process per
// device, starts relative to the first start of any). Throws as replay() does, naming the trace
// by its index, and std::invalid_argument when the counts differ or a trace is itself of several
// devices.
std::vector<ReplayResult> replay_together(const std::vector<const Trace*>& traces,
                                          std::vector<spyre_dma::backend::Instance> devices,
                                          const ReplayOptions& options);

// Opens a SimDevice with `config`, replays on it and closes it (one SimDevice may exist at a
// time, so calls must not overlap). A trace of several devices replays on a server of
// `config` whose topology.devices is raised to the trace's where below it (its devices on root
// ports of their own unless topology.devices_per_switch puts them behind switches).
ReplayResult replay_on_sim(const Trace& trace, const spyre_dma::model::SimConfig& config,
                           const ReplayOptions& options);

}  // namespace spyre_dma::traces
