// The interrupt rule of the device core (refdev and cuda raise and wait through it): pending bits
// accumulate until collected, one raise goes to exactly one waiter, the others wait on to their
// timeout, close() releases every waiter, wake() ends one wait (the one under way or the next)
// early, and clear() forgets what is pending.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

#include "spyre_dma/device_core/interrupt_line.hpp"

namespace {

using namespace std::chrono_literals;
using spyre_dma::device_core::InterruptLine;
using Clock = std::chrono::steady_clock;

TEST(InterruptLine, PendingBitsAccumulateUntilCollected) {
  InterruptLine line;
  EXPECT_EQ(line.wait(0ns), 0u);  // a zero timeout only collects
  line.raise(0b001);
  line.raise(0b100);
  EXPECT_EQ(line.wait(0ns), 0b101u);
  EXPECT_EQ(line.wait(0ns), 0u);
  EXPECT_EQ(line.raised(), 2u);
}

TEST(InterruptLine, ClearForgetsWhatIsPending) {
  InterruptLine line;
  line.raise(0b010);
  line.clear();
  EXPECT_EQ(line.wait(0ns), 0u);
}

TEST(InterruptLine, OneRaiseGoesToOneWaiterTheOtherWaitsItsTimeout) {
  InterruptLine line;
  std::array<std::uint32_t, 2> masks{};
  std::array<Clock::duration, 2> took{};
  std::vector<std::thread> waiters;
  for (int i = 0; i < 2; ++i) {
    waiters.emplace_back([&, i] {
      const auto t0 = Clock::now();
      masks[i] = line.wait(300ms);
      took[i] = Clock::now() - t0;
    });
  }
  std::this_thread::sleep_for(20ms);
  line.raise(0b010);
  for (auto& t : waiters) t.join();
  EXPECT_EQ(masks[0] | masks[1], 0b010u);
  EXPECT_EQ(masks[0] & masks[1], 0u);
  EXPECT_GE(took[masks[0] == 0 ? 0 : 1], 300ms);
}

// A thread waits 10 s on `line`; `end` runs once it sleeps. What the wait returned, and how long it took.
template <class End>
std::pair<std::uint32_t, Clock::duration> wait_ended_by(InterruptLine& line, End end) {
  Clock::duration took{};
  std::uint32_t mask = 1;
  std::thread waiter([&] {
    const auto t0 = Clock::now();
    mask = line.wait(10s);
    took = Clock::now() - t0;
  });
  std::this_thread::sleep_for(20ms);
  end();
  waiter.join();
  return {mask, took};
}

TEST(InterruptLine, CloseReleasesWaitersAndLaterWaits) {
  InterruptLine line;
  const auto [mask, took] = wait_ended_by(line, [&] { line.close(); });
  EXPECT_EQ(mask, 0u);
  EXPECT_LT(took, 5s);
  const auto t0 = Clock::now();
  EXPECT_EQ(line.wait(10s), 0u);
  EXPECT_LT(Clock::now() - t0, 5s);
}

TEST(InterruptLine, WakeEndsTheWaitUnderWay) {
  InterruptLine line;
  const auto [mask, took] = wait_ended_by(line, [&] { line.wake(); });
  EXPECT_EQ(mask, 0u);
  EXPECT_LT(took, 5s);
}

TEST(InterruptLine, WakeBeforeTheWaitIsKeptForIt) {
  InterruptLine line;
  line.wake();
  EXPECT_EQ(line.wait(0ns), 0u);  // a zero timeout only collects: the wake-up stays
  auto t0 = Clock::now();
  EXPECT_EQ(line.wait(10s), 0u);
  EXPECT_LT(Clock::now() - t0, 5s);
  // Taken: the next wait waits its timeout.
  t0 = Clock::now();
  EXPECT_EQ(line.wait(50ms), 0u);
  EXPECT_GE(Clock::now() - t0, 50ms);
  // Pending bits are collected first; the wake-up stays for the wait after.
  line.raise(0b100);
  line.wake();
  EXPECT_EQ(line.wait(10s), 0b100u);
  t0 = Clock::now();
  EXPECT_EQ(line.wait(10s), 0u);
  EXPECT_LT(Clock::now() - t0, 5s);
}

}  // namespace
