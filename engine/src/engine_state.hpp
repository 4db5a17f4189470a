// The shared state behind the public handles (DeviceBuffer, Op, Event, Stream). Every mutable
// field marked "engine lock" is guarded by EngineCore's mutex.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>

#include "device_allocator.hpp"
#include "host_memory.hpp"
#include "spyre_dma/hw/contract.hpp"
#include "spyre_dma/memory.hpp"
#include "spyre_dma/options.hpp"
#include "spyre_dma/status.hpp"
#include "spyre_dma/stream.hpp"

namespace spyre_dma::detail {

class EngineCore;
struct StreamState;

struct AllocationState {
  std::shared_ptr<DeviceAllocator> allocator;
  CompositeAddress address;
  std::uint64_t size = 0;
  std::uint64_t id = 0;
  std::uint64_t max_chunk_bytes = 0;  // as requested (what a trace needs to recreate it)
  ~AllocationState() { allocator->free(address); }
};

// An op's status in one pointer: most ops succeed, and a Status is 72 bytes (two per op made a
// third of OpState, all of it written on every submission).
class OpStatus {
 public:
  bool ok() const noexcept { return !error_; }
  Status get() const { return error_ ? *error_ : Status(); }
  OpStatus& operator=(Status s) {
    error_ = s.ok() ? nullptr : std::make_unique<Status>(std::move(s));
    return *this;
  }

 private:
  std::unique_ptr<Status> error_;
};

// Fields are grouped by when they are touched: the request and progress a single-CB op writes on
// submission come first, so that a freshly taken (cold) op costs as few cache lines as possible.
struct OpState {
  std::uint64_t id = 0;
  OpKind kind = OpKind::kH2D;
  hw::Pipeline pipe = hw::Pipeline::kDmai;
  bool staged = false;

  // Progress (engine lock).
  bool started = false;
  bool compute_issued = false;  // kCompute: its single CB was handed over
  bool finished = false;        // see Completion below
  std::atomic<bool> done{false};
  std::uint32_t cbs_live = 0;     // CBs handed over (or being staged) and not yet finished
  std::uint32_t copying_out = 0;  // of those, CBs answered Good whose staged data is being copied out
  std::uint64_t next = 0;         // bytes handed to CBs so far
  OpStatus first_error;

  // The request (immutable after submission).
  std::uint64_t dst_offset = 0, src_offset = 0, bytes = 0;
  std::shared_ptr<AllocationState> dst, src;
  std::weak_ptr<EngineCore> core;
  // Its stream, until the op retires from it (then null). A plain pointer: the engine holds every
  // stream (EngineCore::streams_) for as long as it runs, and the stream holds the op (window).
  StreamState* stream = nullptr;
  std::uint64_t seq = 0;  // its number among the stream's submissions: window[seq - retired] is it
  union {  // the host side: an H2D's source or a D2H's destination (never both)
    const std::uint8_t* host_src = nullptr;
    std::uint8_t* host_dst;
  };
  union {  // a fill's pattern or a compute op's duration (never both)
    std::uint64_t duration_ns = 0;
    std::uint32_t pattern;
  };
  Callback on_complete;
  std::shared_ptr<HostRegistrationState> host;  // set: direct DMA through this registration
  std::shared_ptr<OpState> awaited;             // kEventWait: the record op waited for
  // Ordering by footprint (HazardTracker, engine lock): the earlier live ops whose bytes this one
  // must wait for, and whether it is in the tracker (live, with a footprint).
  std::uint32_t footprint_waits = 0;
  bool footprint_live = false;
  // kHostCallback, kHostTask (which gets its TaskCompletion bound in); boxed: rare, and 32 bytes.
  std::unique_ptr<std::function<void()>> host_fn;

  // Completion. `finished` (engine lock): the op's own work is over and final_status is set; what
  // the scheduler orders by. `done`: published to the user, with on_complete queued; in a strict
  // or op-ordered stream only once every earlier op of the stream is done too, so that completions
  // (done(), wait(), callbacks) come in submission order even when a DMAI RB is drained before
  // the DMAO RB of the op ahead of it, or a staged D2H still copies out. final_status and the
  // timestamps are written before `done` is released.
  OpStatus final_status;
  std::uint64_t start_ns = 0, end_ns = 0;
  // The host's side (Op::host_start_ns): the device's clock at the API call and when the engine
  // saw the op complete, its staging copies done. 0 on a device without a host clock.
  std::uint64_t host_start_ns = 0, host_end_ns = 0;

  bool device_work() const noexcept {
    return kind == OpKind::kH2D || kind == OpKind::kD2H || kind == OpKind::kD2D ||
           kind == OpKind::kFill || kind == OpKind::kCompute;
  }
  bool fully_issued() const noexcept {
    return kind == OpKind::kCompute ? compute_issued : next >= bytes;
  }
};

struct EventState {
  std::weak_ptr<EngineCore> core;
  std::shared_ptr<OpState> marker;  // engine lock: the latest record; null: never recorded
};

struct StreamState {
  std::weak_ptr<EngineCore> core;
  std::uint64_t id = 0;
  StreamOptions options;

  // Engine lock. `window` holds the ops not yet retired, in submission order; window[cursor] is
  // the first op not fully handed to the device. An op retires once it and all before it are done.
  std::deque<std::shared_ptr<OpState>> window;
  std::size_t cursor = 0;
  std::uint64_t submitted = 0;  // ops ever submitted
  std::uint64_t retired = 0;    // ops ever retired
  std::uint64_t retired_end_ns = 0;  // the latest device end time of the ops retired so far
  bool has_last_pipe = false;   // kStrict: the pipeline of the previous device op
  hw::Pipeline last_pipe = hw::Pipeline::kDmai;
  std::shared_ptr<OpState> gate;  // a host callback or event wait later ops must wait for
  std::uint32_t live_d2h = 0;        // D2H ops started and not done
  std::uint32_t live_staged_d2h = 0;
  bool busy = false;     // a thread is copying into staging for this stream outside the lock
  bool blocked = false;  // waiting for a queue slot, tag, staging buffer, gate, event or ring share
  // Priority (EngineCore::yields): whether this pump keeps to the ring share, and until when (the
  // priority clock, ns) this stream counts as active after its window emptied.
  bool yielding = false;
  std::uint64_t active_until_ns = 0;
  Status first_error;    // since the last synchronize
  // When it last moved: an op retired, or work came to an idle stream (Engine::stalls).
  std::chrono::steady_clock::time_point moved{};
  // What the ops after a failed one complete with (docs/engine.md, "When an op fails"): the first
  // failure of the stream since the synchronize that saw it, as kDependencyFailed naming the failed
  // op, and that op's seq; an op of a later seq runs nothing and completes with it.
  Status poison;
  std::uint64_t poison_seq = 0;
  bool poisoned_for(const OpState& op) const noexcept { return !poison.ok() && op.seq > poison_seq; }
};

}  // namespace spyre_dma::detail
