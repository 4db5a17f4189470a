// Streams, operations and events.
//
// A Stream is an ordered, asynchronous queue of operations. Submission never blocks on the device:
// an operation is validated (an invalid request throws InvalidArgument and nothing is submitted),
// queued, and returned as an Op handle; the engine feeds it to the device as queue slots, tags and
// staging buffers allow. Every Op completes exactly once, with Status::ok() or a typed error; its
// callback, if any, runs exactly once after that, on an engine thread, never under an engine lock.
//
// Events order work across streams: record(e) on one stream marks a point, wait(e) on another
// holds that stream's later operations until every operation before the mark has completed.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include "spyre_dma/memory.hpp"
#include "spyre_dma/options.hpp"
#include "spyre_dma/status.hpp"

namespace spyre_dma {

namespace detail {
struct OpState;
struct StreamState;
struct EventState;
}  // namespace detail

using Callback = std::function<void(const Status&)>;
inline constexpr std::chrono::nanoseconds kDefaultWait = 600s;

enum class OpKind : std::uint8_t {
  kH2D, kD2H, kD2D, kFill, kCompute, kHostCallback, kEventRecord, kEventWait, kHostTask,
};
// "h2d", "d2h", "d2d", "fill", "compute", "host_callback", "event_record", "event_wait", "host_task".
std::string_view to_string(OpKind kind) noexcept;

// How a Stream::host_task ends: call it once, from any thread, with the task's status (ok, or the
// error the op completes with). Calls after the first, and calls after the op was cancelled
// (reset, close), do nothing. Copyable; it does not keep the engine alive.
class TaskCompletion {
 public:
  TaskCompletion() = default;
  void operator()(Status status) const;
  explicit TaskCompletion(std::weak_ptr<detail::OpState> op) : op_(std::move(op)) {}

 private:
  std::weak_ptr<detail::OpState> op_;
};

// The handle of one submitted operation.
class Op {
 public:
  Op() = default;
  bool valid() const noexcept { return state_ != nullptr; }
  std::uint64_t id() const noexcept;  // unique per engine, increasing in submission order
  OpKind kind() const noexcept;
  // Whether the op has completed. On an engine whose device advances only when the host lets it
  // (a simulator; CompletionMode::kCallerDriven), each call is also one step of progress, so a
  // runtime that only polls done(), Stream::query() or Event::query() sees its work finish.
  bool done() const noexcept;
  // The final status once done(); kWaitTimeout while still pending.
  Status status() const;
  // Waits until done() or `timeout`; returns status() (kWaitTimeout if it gave up).
  Status wait(std::chrono::nanoseconds timeout = kDefaultWait) const;
  // Device timestamps of the op's first CB start and last CB end (ns, the device's clock), when
  // the device reports them (hw::kCapTimestamps); 0 otherwise.
  std::uint64_t device_start_ns() const noexcept;
  std::uint64_t device_end_ns() const noexcept;
  // Host time on the device's clock (docs/engine.md, "Timing"): the API call that submitted the op
  // and the moment the engine saw it complete, its staging copies included (a pageable H2D's
  // copy-in, a pageable D2H's copy-out). What a host timer around a synchronous call measures;
  // device time (above) is what the device spent on its CBs. 0 on a device without a host clock
  // (DeviceDescription::host_clock: sim, rtl, refdev and cuda have one).
  std::uint64_t host_start_ns() const noexcept;
  std::uint64_t host_end_ns() const noexcept;

  explicit Op(std::shared_ptr<detail::OpState> state) : state_(std::move(state)) {}

 private:
  std::shared_ptr<detail::OpState> state_;
};

class Event {
 public:
  Event() = default;
  bool valid() const noexcept { return state_ != nullptr; }
  // True when never recorded, or when everything before its latest record has completed.
  bool query() const;
  // Waits for the latest record; returns ok, kWaitTimeout, or kDependencyFailed when an op
  // before the record failed on a FailurePolicy::kPropagate stream (the event carries the
  // failure: a wait on it fails, and on a propagating stream so does everything after the wait).
  Status synchronize(std::chrono::nanoseconds timeout = kDefaultWait) const;
  // The device's clock, in ns, at the latest record: when everything before it in its stream had
  // finished on the device, or when it was recorded if that was later (an idle stream). 0 until
  // that record completes, and on a device without timestamps. Simulated time on sim and rtl.
  std::uint64_t device_time_ns() const;
  // Device time from `start`'s latest record to this event's (as cudaEventElapsedTime, in ns;
  // negative when `start` came later). Both must be recorded, complete and not cancelled, on one
  // engine whose device has timestamps; else InvalidArgument says which is not.
  std::chrono::nanoseconds elapsed_since(const Event& start) const;

  explicit Event(std::shared_ptr<detail::EventState> state) : state_(std::move(state)) {}
  const std::shared_ptr<detail::EventState>& state() const noexcept { return state_; }

 private:
  std::shared_ptr<detail::EventState> state_;
};

class Stream {
 public:
  Stream() = default;
  bool valid() const noexcept { return state_ != nullptr; }

  // Host -> device: `bytes` from `src` to dst at dst_offset (a multiple of 128).
  Op copy_h2d(const DeviceBuffer& dst, std::uint64_t dst_offset, const void* src,
              std::uint64_t bytes, Callback on_complete = {});
  // Device -> host.
  Op copy_d2h(void* dst, const DeviceBuffer& src, std::uint64_t src_offset, std::uint64_t bytes,
              Callback on_complete = {});
  // Device -> device (the ranges must not overlap).
  Op copy_d2d(const DeviceBuffer& dst, std::uint64_t dst_offset, const DeviceBuffer& src,
              std::uint64_t src_offset, std::uint64_t bytes, Callback on_complete = {});
  // Fills the range with a 32-bit little-endian pattern repeated from its start.
  Op fill(const DeviceBuffer& dst, std::uint64_t offset, std::uint64_t bytes,
          std::uint32_t pattern, Callback on_complete = {});
  // A timed placeholder kernel on the COMPUTE pipeline: takes `duration` on the device.
  Op compute(std::chrono::nanoseconds duration, Callback on_complete = {});
  // Runs `fn` once every earlier operation of the stream has completed, on the thread inside the
  // engine that finds it ready (the poller, a thread that waits or polls, or this one, at
  // submission, when nothing before it is pending); later operations wait for it. An exception
  // thrown by fn fails the op with kCallbackFailed (its text in the message).
  Op host_callback(std::function<void()> fn, Callback on_complete = {});
  // Like host_callback, but for work the host carries out asynchronously (a remote transfer):
  // `start` runs once every earlier operation of the stream has completed, and the op completes
  // when its TaskCompletion is called (during start, or later from any thread), not when start
  // returns; later operations wait for it. If start throws, the op fails with kCallbackFailed.
  // reset() and close cancel a task still running (kCancelled); the work it started is the
  // caller's to stop.
  Op host_task(std::function<void(TaskCompletion)> start, Callback on_complete = {});
  Op record(const Event& event);
  Op wait(const Event& event);

  // True when every operation submitted so far has completed.
  bool query() const;
  // Waits for every operation submitted so far; returns the first error any of them completed
  // with since the previous synchronize (which then clears it), or kWaitTimeout. On a
  // FailurePolicy::kPropagate stream a failed op fails every later op (kDependencyFailed) until
  // a synchronize has returned its failure, or a reset (docs/engine.md, "When an op fails").
  Status synchronize(std::chrono::nanoseconds timeout = kDefaultWait);
  // The first error since the last synchronize, without waiting or clearing.
  Status error() const;

  std::uint64_t id() const noexcept;
  const StreamOptions& options() const;

  explicit Stream(std::shared_ptr<detail::StreamState> state) : state_(std::move(state)) {}

 private:
  std::shared_ptr<detail::StreamState> state_;
};

}  // namespace spyre_dma
