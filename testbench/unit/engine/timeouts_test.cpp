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

// A host callback that holds stream `s` until release(): work submitted behind it is surely
// unfinished. It runs on the thread that submits it, a helper of its own.
class HeldStream {
 public:
  explicit HeldStream(Stream& s)
      : helper_([this, &s] {
          gate_ = s.host_callback([this] {
            started_ = true;
            while (!released_.load()) std::this_thread::sleep_for(1ms);
          });
        }) {
    while (!started_.load()) std::this_thread::sleep_for(1ms);
  }
  ~HeldStream() { release(); }
  void release() {
    released_ = true;
    if (helper_.joinable()) helper_.join();
  }
  const Op& gate() const { return gate_; }

 private:
  std::atomic<bool> started_{false}, released_{false};
  Op gate_;
  std::thread helper_;
};

TEST(Timeouts, ZeroAndNegativeAreAlreadyOver) {
  Rig rig = make_rig();
  Stream s = rig.engine->create_stream();
  DeviceBuffer buf = rig.engine->allocate(4 * MiB);
  HeldStream held(s);
  Op fill = s.fill(buf, 0, 4 * MiB, 1);
  for (const auto t : {std::chrono::nanoseconds::zero(), std::chrono::nanoseconds(-1), std::chrono::nanoseconds::min()}) {
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(fill.wait(t).code(), ErrorCode::kWaitTimeout);
    EXPECT_EQ(s.synchronize(t).code(), ErrorCode::kWaitTimeout);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  }
  held.release();
  EXPECT_TRUE(s.synchronize(kWait).ok());
  EXPECT_TRUE(held.gate().status().ok());
  EXPECT_TRUE(fill.wait(0ns).ok());  // done: a zero timeout returns its status
}

// A WaitInterruptScope ends each kind of wait soon after its check says so (asked with no engine
// lock held: the check here submits to the engine itself), and the work waited for goes on.
TEST(Timeouts, AWaitInterruptEndsEveryWaitAndTheWorkGoesOn) {
  Rig rig = make_rig();
  Stream s = rig.engine->create_stream();
  Stream other = rig.engine->create_stream();
  DeviceBuffer buf = rig.engine->allocate(4 * MiB);
  HeldStream held(s);
  Op fill = s.fill(buf, 0, 4 * MiB, 1);
  Event mark = rig.engine->create_event();
  s.record(mark);
  const std::function<Status()> waits[] = {[&] { return fill.wait(kWait); }, [&] { return s.synchronize(kWait); },
                                           [&] { return mark.synchronize(kWait); },
                                           [&] { return rig.engine->synchronize(kWait); }};
  for (const auto& wait : waits) {
    const auto t0 = std::chrono::steady_clock::now();
    int asked = 0;
    WaitInterruptScope scope([&] {
      (void)other.fill(buf, 0, 128, 2);  // the engine's lock is not held here
      return ++asked == 3;
    });
    const Status st = wait();
    EXPECT_EQ(st.code(), ErrorCode::kWaitTimeout) << st.to_string();
    EXPECT_NE(st.message().find("interrupted after"), std::string::npos) << st.to_string();
    EXPECT_EQ(asked, 3);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  }
  EXPECT_EQ(WaitInterruptScope::current(), nullptr);
  held.release();
  EXPECT_TRUE(rig.engine->synchronize(kWait).ok()) << "the work went on";
  EXPECT_TRUE(fill.status().ok());
}

}  // namespace
}  // namespace spyre_dma::test
