// A hook that sees every operation the engine accepts and how it completed: the seam trace
// capture (SpyreDma::traces' TraceRecorder) plugs into. Off by default (EngineOptions::observer
// null), when it costs one pointer test per op.
//
// Threading: on_submit runs on the submitting thread, after the op is validated and before it is
// queued, so ops of one stream arrive in issue order; on_complete runs on the engine thread that
// completes the op, before the op's own callback. Neither runs under an engine lock, so an
// observer may take its own locks, but it must not wait on engine work (it would hold up
// submission or the completion path) and must be safe to call from several threads at once.
// An exception from a callback is swallowed (the op is unaffected).
#pragma once

#include <chrono>
#include <cstdint>

#include "spyre_dma/status.hpp"
#include "spyre_dma/stream.hpp"

namespace spyre_dma {

// How an H2D / D2H reaches host memory.
enum class HostAccess : std::uint8_t {
  kNone,        // not a host copy
  kRegistered,  // DMA'd directly from a registered buffer
  kPageable,    // moved through staging (pageable memory or an unaligned address)
};

struct OpInfo {
  std::uint64_t id = 0;      // Op::id()
  std::uint64_t stream = 0;  // Stream::id()
  OpKind kind = OpKind::kH2D;
  std::uint64_t bytes = 0;
  HostAccess host = HostAccess::kNone;
  // Device side: DeviceBuffer::id() (0 = none), its size and max_chunk_bytes, and the offset.
  std::uint64_t dst_alloc = 0, dst_alloc_bytes = 0, dst_alloc_max_chunk = 0, dst_offset = 0;
  std::uint64_t src_alloc = 0, src_alloc_bytes = 0, src_alloc_max_chunk = 0, src_offset = 0;
  std::uint32_t pattern = 0;                  // fill
  std::chrono::nanoseconds compute{0};        // compute
  std::uint64_t event = 0;                    // record / wait: an id unique per event
  std::chrono::steady_clock::time_point issued;  // when the op was submitted
};

// An op's times on the device's clock (docs/engine.md, "Timing"): its device time and its host
// time (Op::host_start_ns, host_end_ns); 0 where the device reports none.
struct OpTimes {
  std::uint64_t device_start_ns = 0, device_end_ns = 0;
  std::uint64_t host_start_ns = 0, host_end_ns = 0;
};

class OpObserver {
 public:
  virtual ~OpObserver() = default;
  virtual void on_submit(const OpInfo& info) = 0;
  // The op's final status and device timestamps (0 when the device reports none).
  virtual void on_complete(std::uint64_t op_id, const Status& status,
                           std::uint64_t device_start_ns, std::uint64_t device_end_ns) = 0;
  // The same with the op's host times too. The engine calls this one; by default it passes the
  // device times on to on_complete, so an observer that needs only those overrides that alone.
  virtual void on_complete_timed(std::uint64_t op_id, const Status& status, const OpTimes& times) {
    on_complete(op_id, status, times.device_start_ns, times.device_end_ns);
  }
};

}  // namespace spyre_dma
