// Capture: an engine observer that turns what the engine runs into a Trace.
//
//   auto recorder = std::make_shared<spyre_dma::traces::TraceRecorder>();
//   spyre_dma::EngineOptions options;
//   options.observer = recorder;
//   auto engine = spyre_dma::Engine::open(device, options);
//   ... work ...;  engine->synchronize();
//   spyre_dma::traces::write_trace_file(recorder->trace(), "run.trace");
//
// Streams are numbered 0, 1, ... and events 1, 2, ... in order of first appearance; allocations
// keep the engine's DeviceBuffer ids; op ids are the engine's. issue_ns is the steady clock
// relative to the first op's submission; start_ns and duration_ns are the device's timestamps
// (simulated time on sim), absent for ops the device does not time.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "spyre_dma/backend/registry.hpp"
#include "spyre_dma/observer.hpp"
#include "spyre_dma/traces/trace.hpp"

namespace spyre_dma::traces {

// The header a capture on `instance` writes: source "capture"; the device as it describes itself
// when simulated (its preset and link), else the backend's name; the link ("PCIe Gen5 x16") when
// the backend's resolved configuration (Registry::configuration) names its generation and lanes.
Header capture_header(const std::string& backend, const spyre_dma::backend::Instance& instance,
                      const nlohmann::json& configuration);

class TraceRecorder : public spyre_dma::OpObserver {
 public:
  // header.source defaults to "capture" when empty.
  explicit TraceRecorder(Header header = {});

  void on_submit(const spyre_dma::OpInfo& info) override;
  void on_complete(std::uint64_t op_id, const spyre_dma::Status& status, std::uint64_t device_start_ns,
                   std::uint64_t device_end_ns) override;
  // Device and host times: the op's start_ns and duration_ns, its host_start_ns and host_duration_ns.
  void on_complete_timed(std::uint64_t op_id, const spyre_dma::Status& status,
                         const spyre_dma::OpTimes& times) override;

  // The trace so far, ops in id order. Completions reach the observer just after the ops are
  // published as done, so this first waits (up to `timeout`) until every op seen has completed;
  // throws spyre_dma::WaitTimeout naming the count still pending when they do not.
  Trace trace(std::chrono::nanoseconds timeout = std::chrono::seconds(10)) const;

  std::size_t ops_seen() const;
  std::size_t ops_failed() const;  // also in the header's extra.failed_ops

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  Header header_;
  std::vector<Op> ops_;
  std::unordered_map<std::uint64_t, std::size_t> index_;  // op id -> ops_
  std::unordered_map<std::uint64_t, Allocation> allocs_;
  std::unordered_map<std::uint64_t, std::uint32_t> streams_;
  std::unordered_map<std::uint64_t, std::uint32_t> events_;
  std::optional<std::chrono::steady_clock::time_point> first_issue_;
  std::size_t pending_ = 0;
  std::size_t failed_ = 0;
};

}  // namespace spyre_dma::traces
