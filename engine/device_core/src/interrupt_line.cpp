#include "spyre_dma/device_core/interrupt_line.hpp"

namespace spyre_dma::device_core {

void InterruptLine::raise(std::uint32_t bits) noexcept {
  pending_.fetch_or(bits);
  generation_.fetch_add(1);
  raised_.fetch_add(1, std::memory_order_relaxed);
  // Sequentially consistent with the waiter's waiters_ increment and generation read: either the
  // waiter sees the new generation before it sleeps, or this sees the waiter and wakes it.
  if (waiters_.load() > 0) wake_all();
}

void InterruptLine::wake() noexcept {
  woken_.store(true);
  wake_all();
}

void InterruptLine::close() noexcept {
  closed_.store(true);
  wake_all();
}

void InterruptLine::wake_all() noexcept {
  // Passing through the mutex orders this wake-up after a waiter's last check of the generation
  // (done under it); the notify itself comes after the unlock.
  { std::lock_guard<std::mutex> pass(mutex_); }
  cv_.notify_all();
}

std::uint32_t InterruptLine::wait(std::chrono::nanoseconds timeout) {
  if (const std::uint32_t mask = pending_.exchange(0)) return mask;
  // A zero timeout only collects: it leaves a wake-up to the wait it is meant for.
  if (timeout <= std::chrono::nanoseconds::zero() || closed_.load() || woken_.exchange(false)) return 0;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  waiters_.fetch_add(1);
  std::uint32_t mask = 0;
  // Woken by a raise another waiter collected first, it sleeps on: it returns with bits, at its
  // timeout, when the line closes, or when wake() picks it.
  for (;;) {
    const std::uint64_t seen = generation_.load();
    mask = pending_.exchange(0);
    if (mask != 0 || closed_.load() || woken_.exchange(false)) break;
    std::unique_lock<std::mutex> lock(mutex_);
    if (!cv_.wait_until(lock, deadline, [&] {
          return generation_.load() != seen || closed_.load() || woken_.load();
        })) {
      break;
    }
  }
  waiters_.fetch_sub(1);
  return mask != 0 ? mask : pending_.exchange(0);
}

}  // namespace spyre_dma::device_core
