// Deadlines that saturate. `now + timeout` overflows for a timeout near nanoseconds::max() (a
// caller's "wait as long as it takes") and wraps into the past, so the wait would give up at once;
// every wait in the engine and its devices computes its deadline here instead.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>

namespace spyre_dma {

// `timeout` after `now`; the clock's last instant when that lies beyond it; `now` when the
// timeout is zero or negative (already over).
template <class Clock>
typename Clock::time_point deadline_after(typename Clock::time_point now, std::chrono::nanoseconds timeout) noexcept {
  if (timeout <= std::chrono::nanoseconds::zero()) return now;
  const auto room = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::time_point::max() - now);
  if (timeout >= room) return Clock::time_point::max();
  return now + std::chrono::duration_cast<typename Clock::duration>(timeout);
}

// A device's unsigned nanosecond count (a CB field, a register) as a duration, saturating at the
// largest one rather than turning negative.
inline std::chrono::nanoseconds saturating_ns(std::uint64_t ns) noexcept {
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  return std::chrono::nanoseconds(static_cast<std::int64_t>(ns > kMax ? kMax : ns));
}

}  // namespace spyre_dma
