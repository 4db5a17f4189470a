// When an op fails on a stream with FailurePolicy::kPropagate (docs/engine.md, "When an op
// fails"): the ops after it, and the ops after a wait on an event recorded behind it, complete
// with kDependencyFailed naming it and move no bytes, until a synchronize of the stream has
// returned the failure; on a stream that isolates failures (the default) each op stands alone.
#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <vector>

#include "engine_fixture.hpp"

namespace spyre_dma::test {
namespace {

constexpr std::uint64_t kBytes = 64 * KiB;

StreamOptions propagating() {
  StreamOptions o;
  o.on_failure = FailurePolicy::kPropagate;
  return o;
}

void expect_dependency_failed(const Op& op, const Op& failed) {
  const Status st = op.wait(kWait);
  EXPECT_EQ(st.code(), ErrorCode::kDependencyFailed) << st.to_string();
  EXPECT_EQ(st.failed_op(), failed.id()) << st.to_string();
}

// The device buffer as a healthy stream reads it back.
std::vector<std::uint8_t> read_back(Engine& e, const DeviceBuffer& buf) {
  Stream healthy = e.create_stream();
  std::vector<std::uint8_t> out(kBytes, 0xee);
  SPYRE_EXPECT_OK(healthy.copy_d2h(out.data(), buf, 0, kBytes).wait(kWait));
  return out;
}

TEST(FailurePropagation, TheStreamsLaterOpsFailNamingItAndMoveNoBytes) {
  Rig rig = make_rig();
  Engine& e = *rig.engine;
  Stream s = e.create_stream(propagating());
  EXPECT_EQ(s.options().on_failure, FailurePolicy::kPropagate);
  DeviceBuffer buf = e.allocate(kBytes);
  SPYRE_ASSERT_OK(s.fill(buf, 0, kBytes, 0x01010101).wait(kWait));
  std::vector<std::uint8_t> src(kBytes), dst(kBytes, 0x5a);
  fill_pattern(src.data(), kBytes, 3);

  Op bad = s.host_callback([] { throw std::runtime_error("the input never arrived"); });
  Op h2d = s.copy_h2d(buf, 0, src.data(), kBytes);
  Op d2h = s.copy_d2h(dst.data(), buf, 0, kBytes);
  Op fill = s.fill(buf, 0, kBytes, 0x02020202);
  bool ran = false;
  Op after = s.host_callback([&] { ran = true; });
  EXPECT_EQ(bad.wait(kWait).code(), ErrorCode::kCallbackFailed);
  EXPECT_NE(bad.status().message().find("the input never arrived"), std::string::npos);
  for (const Op* op : {&h2d, &d2h, &fill, &after}) expect_dependency_failed(*op, bad);
  // The status names the op that failed first and says what it failed with.
  EXPECT_NE(h2d.status().message().find("op " + std::to_string(bad.id()) + " (host_callback) failed first"),
            std::string::npos)
      << h2d.status().to_string();
  EXPECT_NE(h2d.status().message().find("the input never arrived"), std::string::npos);
  EXPECT_FALSE(ran);
  // Nothing moved: the D2H's destination and the device buffer are as they were.
  EXPECT_TRUE(std::all_of(dst.begin(), dst.end(), [](std::uint8_t b) { return b == 0x5a; }));
  const std::vector<std::uint8_t> now = read_back(e, buf);
  EXPECT_TRUE(std::all_of(now.begin(), now.end(), [](std::uint8_t b) { return b == 0x01; }));

  // Ops submitted after the failure, before the caller has seen it, fail too.
  expect_dependency_failed(s.fill(buf, 0, kBytes, 0x03030303), bad);
  // The synchronize that returns the failure (the first one) clears it: later ops run.
  EXPECT_EQ(s.synchronize(kWait).code(), ErrorCode::kCallbackFailed);
  SPYRE_EXPECT_OK(s.copy_h2d(buf, 0, src.data(), kBytes).wait(kWait));
  SPYRE_EXPECT_OK(s.copy_d2h(dst.data(), buf, 0, kBytes).wait(kWait));
  EXPECT_TRUE(bytes_equal(src.data(), dst.data(), kBytes));
  SPYRE_EXPECT_OK(s.synchronize(kWait));
}

TEST(FailurePropagation, EventsCarryTheFailureToTheStreamsThatWaitOnThem) {
  Rig rig = make_rig();
  Engine& e = *rig.engine;
  Stream producer = e.create_stream(propagating());
  Stream consumer = e.create_stream(propagating());
  Stream isolated = e.create_stream();  // FailurePolicy::kIsolate
  DeviceBuffer buf = e.allocate(kBytes), other = e.allocate(kBytes);
  SPYRE_ASSERT_OK(producer.fill(other, 0, kBytes, 0x07070707).wait(kWait));
  std::vector<std::uint8_t> src(kBytes), dst(kBytes, 0x5a);
  fill_pattern(src.data(), kBytes, 9);
  Event ready = e.create_event();

  Op bad = producer.host_task([](TaskCompletion done) {
    done(Status(ErrorCode::kPeerUnreachable, "the peer holding the input is gone"));
  });
  producer.record(ready);
  Op wait = consumer.wait(ready);
  Op h2d = consumer.copy_h2d(other, 0, src.data(), kBytes);
  Op d2h = consumer.copy_d2h(dst.data(), other, 0, kBytes);
  EXPECT_EQ(bad.wait(kWait).code(), ErrorCode::kPeerUnreachable);
  // The event carries the failure, and every stream behind it sees the op that failed first.
  const Status ev = ready.synchronize(kWait);
  EXPECT_EQ(ev.code(), ErrorCode::kDependencyFailed) << ev.to_string();
  EXPECT_EQ(ev.failed_op(), bad.id());
  for (const Op* op : {&wait, &h2d, &d2h}) expect_dependency_failed(*op, bad);
  EXPECT_TRUE(std::all_of(dst.begin(), dst.end(), [](std::uint8_t b) { return b == 0x5a; }));
  const std::vector<std::uint8_t> now = read_back(e, other);
  EXPECT_TRUE(std::all_of(now.begin(), now.end(), [](std::uint8_t b) { return b == 0x07; }));
  // A stream that isolates failures: its wait fails, what follows runs.
  Op iwait = isolated.wait(ready);
  Op ifill = isolated.fill(buf, 0, kBytes, 0x04040404);
  expect_dependency_failed(iwait, bad);
  SPYRE_EXPECT_OK(ifill.wait(kWait));
  // Each stream clears its own: the consumer's first error is the dependency it saw.
  EXPECT_EQ(consumer.synchronize(kWait).code(), ErrorCode::kDependencyFailed);
  SPYRE_EXPECT_OK(consumer.copy_h2d(other, 0, src.data(), kBytes).wait(kWait));
  EXPECT_EQ(producer.synchronize(kWait).code(), ErrorCode::kPeerUnreachable);
  // Recorded again on a healthy stream, the event is healthy again.
  producer.record(ready);
  SPYRE_EXPECT_OK(ready.synchronize(kWait));
  Op again = consumer.wait(ready);
  SPYRE_EXPECT_OK(again.wait(kWait));
}

TEST(FailurePropagation, AnIsolatingStreamRunsWhatFollowsAFailure) {
  Rig rig = make_rig();
  Engine& e = *rig.engine;
  Stream s = e.create_stream();
  EXPECT_EQ(s.options().on_failure, FailurePolicy::kIsolate);
  DeviceBuffer buf = e.allocate(kBytes);
  Event ev = e.create_event();
  Op bad = s.host_callback([] { throw std::runtime_error("boom"); });
  Op fill = s.fill(buf, 0, kBytes, 0x06060606);
  s.record(ev);
  EXPECT_EQ(bad.wait(kWait).code(), ErrorCode::kCallbackFailed);
  SPYRE_EXPECT_OK(fill.wait(kWait));
  SPYRE_EXPECT_OK(ev.synchronize(kWait));  // nothing is carried
  EXPECT_EQ(s.synchronize(kWait).code(), ErrorCode::kCallbackFailed);
}

TEST(FailurePropagation, AResetClearsIt) {
  Rig rig = make_rig();
  Engine& e = *rig.engine;
  Stream s = e.create_stream(propagating());
  DeviceBuffer buf = e.allocate(kBytes);
  Op bad = s.host_callback([] { throw std::runtime_error("boom"); });
  expect_dependency_failed(s.fill(buf, 0, kBytes, 0x01010101), bad);
  SPYRE_ASSERT_OK(e.reset(kWait));
  SPYRE_EXPECT_OK(s.fill(buf, 0, kBytes, 0x02020202).wait(kWait));
  // The failure is still the stream's first error until a synchronize returns it.
  EXPECT_EQ(s.synchronize(kWait).code(), ErrorCode::kCallbackFailed);
}

}  // namespace
}  // namespace spyre_dma::test

namespace spyre_dma::test {
namespace {

// An event wait passes as soon as its record is done, ahead of the ops before it in its stream;
// when one of those then fails, the wait is not reported as having completed well.
TEST(FailurePropagation, AWaitThatPassedBeforeTheFailureIsReportedBehindIt) {
  Rig rig = make_rig();
  Engine& e = *rig.engine;
  Stream s = e.create_stream(propagating()), other = e.create_stream();
  Event ev = e.create_event();
  SPYRE_ASSERT_OK(other.record(ev).wait(kWait));
  TaskCompletion end_task;
  Op task = s.host_task([&](TaskCompletion done) { end_task = done; });
  Op wait = s.wait(ev);
  EXPECT_EQ(wait.wait(std::chrono::milliseconds(20)).code(), ErrorCode::kWaitTimeout);  // published in order
  end_task(Status(ErrorCode::kInvalidArgument, "the producer gave up"));
  EXPECT_EQ(task.wait(kWait).code(), ErrorCode::kInvalidArgument);
  expect_dependency_failed(wait, task);
  (void)s.synchronize(kWait);
}

}  // namespace
}  // namespace spyre_dma::test
