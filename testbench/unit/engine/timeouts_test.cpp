// Timeouts at their extremes, on every wait of the API: the largest one waits as long as the work
// takes (a deadline computed as now + timeout would wrap into the past and give up at once); zero
// and negative ones are already over, so a wait on unfinished work returns kWaitTimeout at once.
#include "engine_fixture.hpp"

namespace spyre_dma::test {
namespace {

constexpr auto kForever = std::chrono::nanoseconds::max();

TEST(Timeouts, TheLargestWaitsForTheWork) {
  Rig rig = make_rig();
  Stream s = rig.engine->create_stream();
  DeviceBuffer buf = rig.engine->allocate(4 * MiB);
  Event done = rig.engine->create_event();
  Op fill = s.fill(buf, 0, 4 * MiB, 0x5Au);
  s.record(done);
  EXPECT_TRUE(fill.wait(kForever).ok());
  EXPECT_TRUE(done.synchronize(kForever).ok());
  EXPECT_TRUE(s.synchronize(kForever).ok());
  (void)s.fill(buf, 0, 4 * MiB, 0xA5u);
  EXPECT_TRUE(rig.engine->synchronize(kForever).ok());
}

TEST(Timeouts, ZeroAndNegativeAreAlreadyOver) {
  Rig rig = make_rig();
  Stream s = rig.engine->create_stream();
  DeviceBuffer buf = rig.engine->allocate(4 * MiB);
  // A host callback that holds the stream until released: the fill behind it is surely
  // unfinished. It runs on the thread that submits it (a helper here).
  std::atomic<bool> started{false}, release{false};
  Op gate;
  std::thread helper([&] {
    gate = s.host_callback([&] {
      started = true;
      while (!release.load()) std::this_thread::sleep_for(1ms);
    });
  });
  while (!started.load()) std::this_thread::sleep_for(1ms);
  Op fill = s.fill(buf, 0, 4 * MiB, 1);
  for (const auto t : {std::chrono::nanoseconds::zero(), std::chrono::nanoseconds(-1), std::chrono::nanoseconds::min()}) {
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(fill.wait(t).code(), ErrorCode::kWaitTimeout);
    EXPECT_EQ(s.synchronize(t).code(), ErrorCode::kWaitTimeout);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  }
  release = true;
  helper.join();
  EXPECT_TRUE(s.synchronize(kWait).ok());
  EXPECT_TRUE(gate.status().ok());
  EXPECT_TRUE(fill.wait(0ns).ok());  // done: a zero timeout returns its status
}

}  // namespace
}  // namespace spyre_dma::test
