// InterruptLine: how a self-timed backend's MSI-X messages reach the host threads that wait for
// them, shaped like the eventfd a VFIO driver binds to each vector.
//
// raise() ORs the pipelines' bits into a pending mask and wakes every thread blocked in wait();
// the mask goes to whichever collects it first, and the others sleep on until a later raise, their
// timeout or close(). wake() is the host's own way out of a wait: a thread closing what waits (an
// engine shutting its poller down) need not wait out the timeout. A raise with nobody waiting
// costs a few atomic operations and no system call; the wake-up is never issued while holding the
// line's mutex, so a woken thread does not run into a held lock.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace spyre_dma::device_core {

class InterruptLine {
 public:
  // An interrupt for the pipelines in `bits` (1 << hw::Pipeline).
  void raise(std::uint32_t bits) noexcept;
  // Blocks until it collects a raised interrupt, close() is called, or `timeout` passes. Returns
  // the pending mask (cleared), 0 at the timeout or on close. A timeout of zero only collects
  // what is pending.
  std::uint32_t wait(std::chrono::nanoseconds timeout);
  // Makes one waiter return now, with the pending mask (0 if none): the one blocked in wait(), or
  // the next to call it with a timeout, so a wake-up that comes just before the wait is not lost.
  // With nothing pending the wait returns 0, as at a timeout; its caller looks again and decides.
  void wake() noexcept;
  // Wakes every waiter; later waits return at once (a device being destroyed).
  void close() noexcept;
  // Forgets what is pending (a device reset).
  void clear() noexcept { pending_.store(0); }
  std::uint64_t raised() const noexcept { return raised_.load(std::memory_order_relaxed); }

 private:
  void wake_all() noexcept;

  std::atomic<std::uint32_t> pending_{0};
  std::atomic<std::uint64_t> generation_{0};  // bumped by every raise: what a waiter waits to change
  std::atomic<int> waiters_{0};
  std::atomic<bool> closed_{false};
  std::atomic<bool> woken_{false};  // set by wake(), taken by the wait it ends
  std::atomic<std::uint64_t> raised_{0};
  std::mutex mutex_;
  std::condition_variable cv_;
};

}  // namespace spyre_dma::device_core
