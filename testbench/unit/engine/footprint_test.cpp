// Ordering by footprint (docs/engine.md, "Ordering by footprint"): with
// EngineOptions::order_by_footprint, an op waits for every earlier op of another stream that
// touches a byte it touches, one of the two writing, with no event between the streams.
#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine_fixture.hpp"

namespace spyre_dma::test {
namespace {

constexpr std::uint64_t kBytes = 8 * MiB;

EngineOptions by_footprint() {
  EngineOptions o;
  o.order_by_footprint = true;
  return o;
}

// Where the device gives timestamps, the later op started after the earlier one ended.
void expect_after(const Engine& e, const Op& earlier, const Op& later) {
  if (!(e.limits().capabilities & hw::kCapTimestamps)) return;
  EXPECT_GE(later.device_start_ns(), earlier.device_end_ns())
      << "op " << later.id() << " started before op " << earlier.id() << " ended";
}

TEST(FootprintOrdering, AReadOnAnotherStreamWaitsForTheWrite) {
  Rig rig = make_rig(by_footprint());
  Engine& e = *rig.engine;
  Stream writer = e.create_stream(), reader = e.create_stream();
  DeviceBuffer buf = e.allocate(kBytes);
  HostBuffer src = e.allocate_host(kBytes), out = e.allocate_host(kBytes);
  fill_pattern(src.data(), kBytes, 7);
  std::memset(out.data(), 0, kBytes);
  Op w, r;
  {
    const Engine::SubmitBatch batch = e.batch();  // no doorbell yet: the write is live for the read
    w = writer.copy_h2d(buf, 0, src.data(), kBytes);
    r = reader.copy_d2h(out.data(), buf, 0, kBytes);
  }
  SPYRE_ASSERT_OK(r.wait(kWait));
  SPYRE_ASSERT_OK(w.wait(kWait));
  EXPECT_TRUE(bytes_equal(src.data(), out.data(), kBytes));
  expect_after(e, w, r);
  EXPECT_EQ(e.stats().footprint_waits, 1u);
}

TEST(FootprintOrdering, AWriteWaitsForAnEarlierReadAndAnEarlierWrite) {
  Rig rig = make_rig(by_footprint());
  Engine& e = *rig.engine;
  Stream a = e.create_stream(), b = e.create_stream(), c = e.create_stream();
  DeviceBuffer buf = e.allocate(kBytes);
  HostBuffer out = e.allocate_host(kBytes);
  SPYRE_ASSERT_OK(a.fill(buf, 0, kBytes, 0x11111111).wait(kWait));
  Op read = a.copy_d2h(out.data(), buf, 0, kBytes);        // reads 0x11
  Op overwrite = b.fill(buf, 0, kBytes, 0x22222222);       // write after read
  Op last = c.fill(buf, kBytes / 2, kBytes / 2, 0x33333333);  // write after write (half of it)
  SPYRE_ASSERT_OK(e.synchronize(kWait));
  std::vector<std::uint8_t> want(kBytes);
  fill32_reference(want.data(), kBytes, 0x11111111);
  EXPECT_TRUE(bytes_equal(want.data(), out.data(), kBytes));
  Stream check = e.create_stream();
  SPYRE_ASSERT_OK(check.copy_d2h(out.data(), buf, 0, kBytes).wait(kWait));
  fill32_reference(want.data(), kBytes / 2, 0x22222222);
  fill32_reference(want.data() + kBytes / 2, kBytes / 2, 0x33333333);
  EXPECT_TRUE(bytes_equal(want.data(), out.data(), kBytes));
  expect_after(e, read, overwrite);
  expect_after(e, overwrite, last);
}

TEST(FootprintOrdering, HostMemoryCountsToo) {
  Rig rig = make_rig(by_footprint());
  Engine& e = *rig.engine;
  Stream a = e.create_stream(), b = e.create_stream();
  DeviceBuffer from = e.allocate(kBytes), to = e.allocate(kBytes);
  HostBuffer bounce = e.allocate_host(kBytes);
  SPYRE_ASSERT_OK(a.fill(from, 0, kBytes, 0x5a5aa5a5).wait(kWait));
  Op down = a.copy_d2h(bounce.data(), from, 0, kBytes);  // writes host memory
  Op up = b.copy_h2d(to, 0, bounce.data(), kBytes);      // reads it
  SPYRE_ASSERT_OK(e.synchronize(kWait));
  std::vector<std::uint8_t> want(kBytes), got(kBytes);
  fill32_reference(want.data(), kBytes, 0x5a5aa5a5);
  SPYRE_ASSERT_OK(a.copy_d2h(got.data(), to, 0, kBytes).wait(kWait));
  EXPECT_TRUE(bytes_equal(want.data(), got.data(), kBytes));
  expect_after(e, down, up);
}

TEST(FootprintOrdering, DisjointBytesAndReadsOfTheSameBytesDoNotWait) {
  Rig rig = make_rig(by_footprint());
  Engine& e = *rig.engine;
  Stream a = e.create_stream(), b = e.create_stream(), c = e.create_stream();
  DeviceBuffer buf = e.allocate(kBytes);
  HostBuffer o1 = e.allocate_host(kBytes), o2 = e.allocate_host(kBytes);
  a.fill(buf, 0, kBytes / 2, 1);
  b.fill(buf, kBytes / 2, kBytes / 2, 2);  // the other half
  SPYRE_ASSERT_OK(e.synchronize(kWait));
  EXPECT_EQ(e.stats().footprint_waits, 0u);
  b.copy_d2h(o1.data(), buf, 0, kBytes);  // two reads of the same bytes
  c.copy_d2h(o2.data(), buf, 0, kBytes);
  SPYRE_ASSERT_OK(e.synchronize(kWait));
  EXPECT_EQ(e.stats().footprint_waits, 0u);
}

TEST(FootprintOrdering, OffTheStreamsAreNotOrdered) {
  Rig rig = make_rig();
  Engine& e = *rig.engine;
  Stream a = e.create_stream(), b = e.create_stream();
  DeviceBuffer buf = e.allocate(kBytes);
  HostBuffer out = e.allocate_host(kBytes);
  a.fill(buf, 0, kBytes, 1);
  b.copy_d2h(out.data(), buf, 0, kBytes);
  SPYRE_ASSERT_OK(e.synchronize(kWait));
  EXPECT_EQ(e.stats().footprint_waits, 0u);
}

// A pipeline-FIFO stream orders nothing across its pipelines by itself: by footprint it does.
TEST(FootprintOrdering, APipelineFifoStreamIsOrderedAcrossItsPipelines) {
  Rig rig = make_rig(by_footprint());
  Engine& e = *rig.engine;
  Stream s = e.create_stream(with(Ordering::kPipelineFifo));
  DeviceBuffer buf = e.allocate(kBytes);
  HostBuffer src = e.allocate_host(kBytes), out = e.allocate_host(kBytes);
  fill_pattern(src.data(), kBytes, 9);
  Op w, r;
  {
    const Engine::SubmitBatch batch = e.batch();
    w = s.copy_h2d(buf, 0, src.data(), kBytes);
    r = s.copy_d2h(out.data(), buf, 0, kBytes);
  }
  SPYRE_ASSERT_OK(s.synchronize(kWait));
  EXPECT_TRUE(bytes_equal(src.data(), out.data(), kBytes));
  EXPECT_EQ(e.stats().footprint_waits, 1u);
  expect_after(e, w, r);
}

// On a propagating stream a footprint wait carries a failure as an event wait does; on an
// isolating one the op runs. (What waits is what was submitted while the writer was live: an op
// submitted after the writer failed has nothing to wait for.)
TEST(FootprintOrdering, AFailureTravelsToAPropagatingReaderOnly) {
  Rig rig = make_rig(by_footprint());
  Engine& e = *rig.engine;
  StreamOptions propagate;
  propagate.on_failure = FailurePolicy::kPropagate;
  Stream writer = e.create_stream(propagate), strict_reader = e.create_stream(propagate),
         lax_reader = e.create_stream();
  DeviceBuffer buf = e.allocate(64 * KiB);
  HostBuffer src = e.allocate_host(64 * KiB), o1 = e.allocate_host(64 * KiB), o2 = e.allocate_host(64 * KiB);
  std::memset(o1.data(), 0xee, 64 * KiB);
  TaskCompletion end_task;
  Op bad = writer.host_task([&](TaskCompletion done) { end_task = done; });
  Op w = writer.copy_h2d(buf, 0, src.data(), 64 * KiB);  // fails: after `bad`
  Op r1 = strict_reader.copy_d2h(o1.data(), buf, 0, 64 * KiB);
  Op r2 = lax_reader.copy_d2h(o2.data(), buf, 0, 64 * KiB);
  EXPECT_EQ(r1.wait(std::chrono::milliseconds(20)).code(), ErrorCode::kWaitTimeout);  // held by w
  end_task(Status(ErrorCode::kInvalidArgument, "no input"));
  EXPECT_EQ(bad.wait(kWait).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(w.wait(kWait).code(), ErrorCode::kDependencyFailed);
  const Status st = r1.wait(kWait);
  EXPECT_EQ(st.code(), ErrorCode::kDependencyFailed) << st.to_string();
  EXPECT_EQ(st.failed_op(), bad.id()) << st.to_string();
  EXPECT_EQ(static_cast<const std::uint8_t*>(o1.data())[0], 0xee);  // moved nothing
  SPYRE_EXPECT_OK(r2.wait(kWait));
  (void)writer.synchronize(kWait);
  (void)strict_reader.synchronize(kWait);
}

// An op that waits for another's bytes may finish first (failed behind its own stream): it leaves
// the earlier op's followers then, and the earlier op's completion touches nothing of it (the
// sanitizer builds would see a use after free).
TEST(FootprintOrdering, AFollowerThatFailsFirstIsForgottenByWhatItFollowed) {
  Rig rig = make_rig(by_footprint());
  Engine& e = *rig.engine;
  StreamOptions propagate;
  propagate.on_failure = FailurePolicy::kPropagate;
  Stream writer = e.create_stream(), reader = e.create_stream(propagate);
  DeviceBuffer buf = e.allocate(4096);
  TaskCompletion hold_writer, fail_reader;
  writer.host_task([&](TaskCompletion done) { hold_writer = done; });
  Op w = writer.fill(buf, 0, 4096, 5);
  Op bad = reader.host_task([&](TaskCompletion done) { fail_reader = done; });
  {
    std::vector<std::uint8_t> out(4096);
    Op r = reader.copy_d2h(out.data(), buf, 0, 4096);  // follows w
    EXPECT_EQ(r.wait(std::chrono::milliseconds(20)).code(), ErrorCode::kWaitTimeout);
    fail_reader(Status(ErrorCode::kInvalidArgument, "no"));
    EXPECT_EQ(r.wait(kWait).code(), ErrorCode::kDependencyFailed);  // before w ran
    EXPECT_FALSE(w.done());
    (void)reader.synchronize(kWait);
  }  // r and its memory are gone
  hold_writer(Status());
  SPYRE_ASSERT_OK(w.wait(kWait));
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
}

// A reader held by a write that cannot start is named as held by it.
TEST(FootprintOrdering, AStallNamesTheOpWhoseBytesItWaitsFor) {
  Rig rig = make_rig(by_footprint());
  Engine& e = *rig.engine;
  StreamOptions named;
  named.name = "producer";
  Stream writer = e.create_stream(named), reader = e.create_stream();
  DeviceBuffer buf = e.allocate(4096);
  HostBuffer out = e.allocate_host(4096);
  TaskCompletion end_task;
  writer.host_task([&](TaskCompletion done) { end_task = done; });
  Op w = writer.fill(buf, 0, 4096, 3);
  Op r = reader.copy_d2h(out.data(), buf, 0, 4096);
  const Status st = r.wait(std::chrono::milliseconds(50));
  ASSERT_EQ(st.code(), ErrorCode::kWaitTimeout);
  const std::string want = "waits for op " + std::to_string(w.id()) + " (fill) on stream " +
                           std::to_string(writer.id()) + " (producer), which touches its bytes";
  EXPECT_NE(st.message().find(want), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("host task whose TaskCompletion has not been called"), std::string::npos)
      << st.message();
  end_task(Status());  // started: the message above says so
  SPYRE_ASSERT_OK(r.wait(kWait));
}

}  // namespace
}  // namespace spyre_dma::test
