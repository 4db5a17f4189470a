// Stalls named (docs/engine.md, "Stalls"): a stream held behind a host task nobody ends, through
// two event waits, is named with the op that holds it and the chain of streams behind it, by
// Engine::stalls() and in the error of a wait that times out.
#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <thread>

#include "engine_fixture.hpp"

namespace spyre_dma::test {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(Stalls, AStreamHeldThroughEventsIsNamedWithWhatHoldsIt) {
  Rig rig = make_rig();
  Engine& e = *rig.engine;
  StreamOptions named;
  named.name = "producer";
  Stream a = e.create_stream(named), b = e.create_stream(), c = e.create_stream();
  Event ea = e.create_event(), eb = e.create_event();
  DeviceBuffer buf = e.allocate(4096);
  TaskCompletion end_task;
  Op task = a.host_task([&](TaskCompletion done) { end_task = done; });
  Op rec_a = a.record(ea);
  Op wait_b = b.wait(ea);
  b.fill(buf, 0, 4096, 0x01010101);
  Op rec_b = b.record(eb);
  Op wait_c = c.wait(eb);
  Op last = c.fill(buf, 0, 4096, 0x02020202);

  // A wait that times out says what holds it, all the way down.
  const Status st = last.wait(std::chrono::milliseconds(50));
  ASSERT_EQ(st.code(), ErrorCode::kWaitTimeout);
  const std::string& m = st.message();
  EXPECT_TRUE(contains(m, "stream " + std::to_string(c.id()) + ": 2 op(s) pending")) << m;
  EXPECT_TRUE(contains(m, "op " + std::to_string(wait_c.id()) + " (event_wait) waits on an event recorded by op " +
                              std::to_string(rec_b.id()) + " on stream " + std::to_string(b.id())))
      << m;
  EXPECT_TRUE(contains(m, "behind it, stream " + std::to_string(b.id()) + ": op " + std::to_string(wait_b.id()) +
                              " (event_wait) waits on an event recorded by op " + std::to_string(rec_a.id()) +
                              " on stream " + std::to_string(a.id()) + " (producer)"))
      << m;
  EXPECT_TRUE(contains(m, "behind it, stream " + std::to_string(a.id()) + " (producer): op " +
                              std::to_string(task.id()) +
                              " (host_task) is a host task whose TaskCompletion has not been called"))
      << m;
  EXPECT_EQ(c.synchronize(std::chrono::milliseconds(20)).code(), ErrorCode::kWaitTimeout);

  // The query: every stream with work that has not moved for the time asked.
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  std::vector<StreamStall> stalls = e.stalls(std::chrono::milliseconds(20));
  ASSERT_EQ(stalls.size(), 3u);
  const auto of_c = std::find_if(stalls.begin(), stalls.end(), [&](const StreamStall& s) { return s.stream == c.id(); });
  ASSERT_NE(of_c, stalls.end());
  EXPECT_EQ(of_c->head_op, wait_c.id());
  EXPECT_EQ(of_c->head_kind, OpKind::kEventWait);
  EXPECT_EQ(of_c->ops_pending, 2u);
  EXPECT_GE(of_c->idle, std::chrono::milliseconds(20));
  ASSERT_EQ(of_c->chain.size(), 2u);
  EXPECT_TRUE(contains(of_c->chain.back(), "(host_task)")) << of_c->chain.back();
  const auto of_a = std::find_if(stalls.begin(), stalls.end(), [&](const StreamStall& s) { return s.stream == a.id(); });
  ASSERT_NE(of_a, stalls.end());
  EXPECT_EQ(of_a->name, "producer");
  EXPECT_EQ(of_a->head_op, task.id());
  EXPECT_TRUE(of_a->chain.empty());
  EXPECT_TRUE(contains(of_a->to_string(), "TaskCompletion has not been called"));
  EXPECT_TRUE(e.stalls(std::chrono::hours(1)).empty());  // none has been still that long

  // Ended, everything moves, and nothing is left to name.
  end_task(Status());
  SPYRE_EXPECT_OK(c.synchronize(kWait));
  EXPECT_TRUE(e.stalls(std::chrono::nanoseconds(0)).empty());
}

// The watchdog reports a stall once, from the poller thread, and nothing once it has ended. A
// host-driven device (sim, rtl) has no poller, hence no watchdog.
TEST(Stalls, TheWatchdogReportsAStallOnce) {
  std::mutex mu;
  std::vector<StreamStall> reported;
  EngineOptions o;
  o.stall_watchdog = std::chrono::milliseconds(20);
  o.on_stall = [&](const std::vector<StreamStall>& stalls) {
    std::lock_guard lock(mu);
    reported.insert(reported.end(), stalls.begin(), stalls.end());
  };
  Rig rig = make_rig(o);
  Engine& e = *rig.engine;
  if (e.device().describe().progress == Progress::kHostDriven) GTEST_SKIP() << "no poller on a host-driven device";
  Stream s = e.create_stream();
  TaskCompletion end_task;
  Op task = s.host_task([&](TaskCompletion done) { end_task = done; });
  Op after = s.host_callback([] {});
  std::this_thread::sleep_for(std::chrono::milliseconds(150));  // several of the watchdog's looks
  {
    std::lock_guard lock(mu);
    ASSERT_EQ(reported.size(), 1u);
    EXPECT_EQ(reported[0].stream, s.id());
    EXPECT_EQ(reported[0].head_op, task.id());
    EXPECT_GE(reported[0].idle, std::chrono::milliseconds(20));
  }
  end_task(Status());
  SPYRE_EXPECT_OK(after.wait(kWait));
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  std::lock_guard lock(mu);
  EXPECT_EQ(reported.size(), 1u);
}

}  // namespace
}  // namespace spyre_dma::test
