// Host tasks: asynchronous host work ordered with a stream (a remote transfer, in spyre_dma/rdma).
// The op starts once everything before it has completed, completes only when its TaskCompletion
// is called (from any thread), exactly once, and holds back what comes after it.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine_fixture.hpp"

namespace spyre_dma::test {
namespace {

struct Log {
  std::mutex mu;
  std::vector<std::string> lines;
  void add(std::string s) {
    std::lock_guard lock(mu);
    lines.push_back(std::move(s));
  }
  std::vector<std::string> get() {
    std::lock_guard lock(mu);
    return lines;
  }
};

TEST(HostTasks, StartAfterWhatCameBeforeAndHoldBackWhatComesAfter) {
  constexpr std::uint64_t n = 4 * MiB;
  Rig rig = make_rig();
  Engine& e = *rig.engine;
  Stream s = e.create_stream();
  DeviceBuffer buf = e.allocate(n);
  HostBuffer in = e.allocate_host(n), out = e.allocate_host(n);
  fill_pattern(in.data(), n, 7);
  std::memset(out.data(), 0, n);
  Log log;
  std::thread worker;
  Op h2d = s.copy_h2d(buf, 0, in.data(), n, [&](const Status&) { log.add("h2d done"); });
  Op task = s.host_task([&](TaskCompletion done) {
    log.add(h2d.done() ? "task started after h2d" : "task started before h2d");
    // The work goes on elsewhere; the op ends when it says so.
    worker = std::thread([&log, done] {
      std::this_thread::sleep_for(20ms);
      log.add("task ends");
      done(Status());
    });
  }, [&](const Status& st) { log.add("task done " + st.to_string()); });
  Op d2h = s.copy_d2h(out.data(), buf, 0, n, [&](const Status&) { log.add("d2h done"); });
  EXPECT_EQ(task.kind(), OpKind::kHostTask);
  SPYRE_ASSERT_OK(s.synchronize(kWait));
  worker.join();
  const std::vector<std::string> l = log.get();
  const auto at = [&](const std::string& x) { return std::find(l.begin(), l.end(), x) - l.begin(); };
  ASSERT_EQ(l.size(), 5u);
  // The H2D was done when the task started (its callback may run later: callbacks follow
  // completion on the engine's own schedule).
  EXPECT_LT(at("task started after h2d"), 5);
  EXPECT_LT(at("task ends"), at("task done ok"));
  EXPECT_LT(at("task done ok"), at("d2h done"));  // callbacks run in the order their ops became done
  EXPECT_TRUE(bytes_equal(in.data(), out.data(), n));
}

TEST(HostTasks, AnErrorFailsTheOpAndTheStreamOnce) {
  Rig rig = make_rig();
  Engine& e = *rig.engine;
  Stream s = e.create_stream();
  std::atomic<int> calls{0};
  Op t = s.host_task([](TaskCompletion done) {
    done(Status(ErrorCode::kPeerUnreachable, "the peer went away"));
    done(Status());  // a second end does nothing
  }, [&](const Status& st) {
    ++calls;
    EXPECT_EQ(st.code(), ErrorCode::kPeerUnreachable);
  });
  const Status st = s.synchronize(kWait);
  EXPECT_EQ(st.code(), ErrorCode::kPeerUnreachable);
  EXPECT_EQ(st.message(), "the peer went away");
  EXPECT_EQ(t.status().code(), ErrorCode::kPeerUnreachable);
  EXPECT_EQ(calls.load(), 1);
}

TEST(HostTasks, AStartThatThrowsFailsItsOp) {
  Rig rig = make_rig();
  Stream s = rig.engine->create_stream();
  Op t = s.host_task([](TaskCompletion) { throw std::runtime_error("no route"); });
  EXPECT_EQ(t.wait(kWait).code(), ErrorCode::kCallbackFailed);
  EXPECT_NE(t.status().message().find("host task threw: no route"), std::string::npos) << t.status().to_string();
  // The stream goes on.
  EXPECT_EQ(s.synchronize(kWait).code(), ErrorCode::kCallbackFailed);
  Op after = s.host_callback([] {});
  SPYRE_ASSERT_OK(after.wait(kWait));
}

// An event recorded after a task on one stream holds another stream until the task has ended.
TEST(HostTasks, EventsOrderOtherStreamsAfterATask) {
  Rig rig = make_rig();
  Engine& e = *rig.engine;
  Stream a = e.create_stream(), b = e.create_stream();
  Event ev = e.create_event();
  TaskCompletion later;
  std::atomic<bool> ended{false};
  a.host_task([&](TaskCompletion done) { later = done; });
  a.record(ev);
  b.wait(ev);
  Op check = b.host_callback([&] { EXPECT_TRUE(ended.load()) << "b ran before the task on a had ended"; });
  EXPECT_EQ(check.wait(50ms).code(), ErrorCode::kWaitTimeout);
  EXPECT_FALSE(ev.query());
  ended = true;
  later(Status());
  SPYRE_ASSERT_OK(check.wait(kWait));
  SPYRE_ASSERT_OK(b.synchronize(kWait));
}

// reset() cancels a task that has not ended; its late end changes nothing.
TEST(HostTasks, ResetCancelsARunningTaskAndItsLateEndIsIgnored) {
  Rig rig = make_rig();
  Engine& e = *rig.engine;
  Stream s = e.create_stream();
  TaskCompletion later;
  std::atomic<int> calls{0};
  std::atomic<bool> started{false};
  Op t = s.host_task([&](TaskCompletion done) {
    later = done;
    started = true;
  }, [&](const Status&) { ++calls; });
  while (!started) t.done();
  SPYRE_ASSERT_OK(e.reset(kWait));
  EXPECT_EQ(t.wait(kWait).code(), ErrorCode::kCancelled);
  later(Status());
  EXPECT_EQ(t.status().code(), ErrorCode::kCancelled);
  EXPECT_EQ(s.synchronize(kWait).code(), ErrorCode::kCancelled);
  EXPECT_EQ(calls.load(), 1);
  // The stream works after the reset.
  Op next = s.host_task([](TaskCompletion done) { done(Status()); });
  SPYRE_ASSERT_OK(next.wait(kWait));
}

TEST(HostTasks, AnEmptyStartIsRefused) {
  Rig rig = make_rig();
  Stream s = rig.engine->create_stream();
  EXPECT_THROW(s.host_task({}), InvalidArgument);
}

}  // namespace
}  // namespace spyre_dma::test
