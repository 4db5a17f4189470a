// Configuration of an Engine, its streams and its allocations.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace spyre_dma {

using namespace std::chrono_literals;

class OpObserver;  // spyre_dma/observer.hpp
struct StreamStall;  // spyre_dma/engine.hpp

enum class CompletionMode : std::uint8_t {
  kAuto,          // kPollerThread for self-timed devices, kCallerDriven for host-driven ones
  kPollerThread,  // one engine thread polls the RB rings and runs completions
  kCallerDriven,  // completions are processed by threads that wait (synchronize, Op::wait, ...)
};

struct EngineOptions {
  // Largest byte count one CB moves; transfers are cut into pieces of this size (and at device
  // chunk boundaries). Capped by the device's MAX_CB_BYTES register.
  std::uint64_t max_cb_bytes = 4ull << 20;
  // The staging pipeline for pageable and unaligned host memory: buffers of this size, this many.
  std::size_t staging_buffer_bytes = 4ull << 20;
  std::size_t staging_buffers = 8;
  // Threads that do the host copies of staged transfers, so neither the submitting thread nor
  // the completion path copies, and the copy of one piece overlaps the DMA of the one before.
  // A stream's copies all go to one of them, in order. 0: the submitting thread copies in and
  // the completing thread copies out. At most 64. Host-driven devices (sim, rtl) take none: their
  // time advances on the caller's thread.
  unsigned staging_threads = 1;
  // A CB without an RB this long after it reached the head of its ring (the device answers a
  // ring's CBs in order, so time spent queued behind others does not count) fails its operation
  // with kDeviceTimeout; its staging buffer and tag are quarantined until reset().
  std::chrono::nanoseconds cb_timeout = 280s;
  // CB ring slots per pipeline (COMPUTE, DMAI, DMAO); 0 takes the device's depth. Powers of two.
  std::array<std::uint32_t, 3> ring_slots{0, 0, 0};
  CompletionMode completion = CompletionMode::kAuto;
  // The most a waiting thread spins on the RB rings before it sleeps in Device::wait_for_interrupt.
  // The spin adapts: one that sees no RB halves the next (down to none, when the device runs on
  // no other core), one that sees an RB restores this. 0: never spin.
  std::chrono::nanoseconds poll_spin = 20us;
  // Device memory the allocator may hand out; 0 takes the device's usable size.
  std::uint64_t device_memory_bytes = 0;
  // Sees every op accepted and its completion (trace capture); null: off, one pointer test per
  // op. See spyre_dma/observer.hpp for the threads its callbacks run on.
  std::shared_ptr<OpObserver> observer;
  // A watchdog (docs/engine.md, "Stalls"): every stream that has completed no op for this long is
  // reported, once per stall, from the engine's poller thread through on_stall (null: a line per
  // stream on standard error). 0: off. A host-driven device (sim, rtl) has no poller and no
  // watchdog: there Engine::stalls() and the waits that time out name stalls.
  std::chrono::nanoseconds stall_watchdog{0};
  std::function<void(const std::vector<StreamStall>&)> on_stall;
  // Priority on the device (docs/engine.md, "Priority"). A pipeline's ring is first in, first out,
  // so a CB queued on it cannot be overtaken: what a higher-priority stream's copy waits for is
  // what lower ones queued before it. While a stream of higher priority is active (has work, or
  // had within priority_hold), a stream keeps at most this many bytes of its CBs on each DMA
  // pipeline's ring, shared with every other stream below that priority, in CBs of at most half
  // of it. 0: no share (priority then orders only the hand-out of queue slots and staging buffers).
  std::uint64_t priority_share_bytes = 64ull << 10;
  std::chrono::nanoseconds priority_hold = 1ms;
  // Ordering by footprint (docs/engine.md, "Ordering by footprint"): an op waits for every earlier
  // op, on any stream, that touches a byte it touches (device or host memory) where one of the two
  // writes, so that streams sharing buffers need no events between them. Costs a scan of the
  // live ops' ranges per submission.
  bool order_by_footprint = false;
  // Streams per class (low, high priority) that Engine::pooled_stream hands out in turn.
  unsigned pooled_streams = 32;
};

enum class Ordering : std::uint8_t {
  // Every operation sees the effects of all earlier ones of its stream. Consecutive device
  // operations on the same pipeline rely on the pipeline's in-order retirement; when the pipeline
  // changes, the first CB carries BARRIER, so the device keeps the order without a host round trip.
  kStrict,
  // The same guarantee, kept by the host: an operation is submitted only after the previous one
  // completed. Costs a round trip per operation; needs no barrier support.
  kOpOrdered,
  // FIFO per pipeline only: operations on different pipelines (say an H2D and a D2H) may overlap.
  // Host-memory hazards through staging are still respected.
  kPipelineFifo,
};

// What an op's failure does to the ops of its stream after it (docs/engine.md, "When an op
// fails").
enum class FailurePolicy : std::uint8_t {
  // Each op stands alone: the ops after a failed one run as if it had succeeded. What a
  // verification run wants, to see exactly which ops a fault hit.
  kIsolate,
  // A runtime's rule (CUDA's sticky errors, per stream; flex's poisoned events): every op after
  // the failed one, and every op after a wait on an event recorded behind it, completes with
  // kDependencyFailed naming it and runs nothing, until a synchronize of the stream has returned
  // the failure (or the engine is reset).
  kPropagate,
};

struct StreamOptions {
  Ordering ordering = Ordering::kStrict;
  FailurePolicy on_failure = FailurePolicy::kIsolate;
  // Higher runs first when streams compete for queue slots or staging buffers, and lower ones
  // keep only a share of the rings while a higher one is active (EngineOptions::priority_share_bytes).
  int priority = 0;
  std::string name;
};

struct AllocOptions {
  // Cut the allocation into chunks of at most this many bytes (a multiple of 128; 0: only where
  // a segment boundary or fragmentation forces it). Chunks may lie in different segments.
  std::uint64_t max_chunk_bytes = 0;
};

}  // namespace spyre_dma
