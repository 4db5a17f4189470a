// Ordering across streams and with the host: events, host callbacks, priorities, and the
// caller-driven completion mode.
#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine_fixture.hpp"

namespace spyre_dma::test {
namespace {

// --- Events ---------------------------------------------------------------------------------

TEST(Events, WaitOrdersAcrossStreams) {
  constexpr std::uint64_t n = 64 * MiB;
  Rig rig = make_rig();
  Engine& e = *rig.engine;
  Stream a = e.create_stream(), b = e.create_stream();
  Event ev = e.create_event();
  EXPECT_TRUE(ev.valid());
  DeviceBuffer buf = e.allocate(n);
  HostBuffer in = e.allocate_host(n), out = e.allocate_host(n);
  fill_pattern(in.data(), n, 64);
  std::memset(out.data(), 0, n);

  rig.dev().pause();
  a.copy_h2d(buf, 0, in.data(), n);
  Op rec = a.record(ev);
  Op w = b.wait(ev);
  Op rd = b.copy_d2h(out.data(), buf, 0, n);
  EXPECT_EQ(rec.kind(), OpKind::kEventRecord);
  EXPECT_EQ(w.kind(), OpKind::kEventWait);
  EXPECT_FALSE(ev.query());
  EXPECT_EQ(ev.synchronize(20ms).code(), ErrorCode::kWaitTimeout);
  EXPECT_FALSE(b.query());
  EXPECT_FALSE(rd.done());
  rig.dev().resume();
  SPYRE_ASSERT_OK(ev.synchronize(kWait));
  EXPECT_TRUE(ev.query());
  SPYRE_ASSERT_OK(b.synchronize(kWait));
  EXPECT_TRUE(b.query());
  EXPECT_TRUE(bytes_equal(in.data(), out.data(), n));
}

TEST(Events, NeverRecordedEventIsComplete) {
  Rig rig = make_rig();
  Engine& e = *rig.engine;
  Stream s = e.create_stream();
  Event ev = e.create_event();
  EXPECT_TRUE(ev.query());
  SPYRE_EXPECT_OK(ev.synchronize(1ms));
  rig.dev().pause();  // nothing needs the device
  Op w = s.wait(ev);
  EXPECT_TRUE(w.done());
  SPYRE_EXPECT_OK(w.status());
  Op cb = s.host_callback([] {});
  SPYRE_EXPECT_OK(cb.wait(kWait));
  rig.dev().resume();
  // A default-constructed Event is empty: query() true, synchronize() refuses.
  Event empty;
  EXPECT_TRUE(empty.query());
  EXPECT_EQ(empty.synchronize(1ms).code(), ErrorCode::kInvalidArgument);
}

// wait() holds for the record that was latest when wait() was called; a later re-record moves
// query()/synchronize() and later waits, not earlier ones.
TEST(Events, WaitBindsToTheLatestRecordAtCallTime) {
  refdev::RefDeviceConfig cfg;
  cfg.honour_compute_time = true;  // a compute op that only a reset ends
  Rig rig = make_rig({}, cfg);
  Engine& e = *rig.engine;
  Stream a = e.create_stream(), b = e.create_stream(), b2 = e.create_stream(), c = e.create_stream();
  Event ev = e.create_event(), never = e.create_event();
  DeviceBuffer buf = e.allocate(4096);
  HostBuffer out = e.allocate_host(4096), out2 = e.allocate_host(4096);

  c.compute(3600s);
  c.record(never);                   // completes only when the compute does
  a.fill(buf, 0, 4096, 0x11111111u);
  a.record(ev);                      // record 1
  b.wait(ev);                        // binds to record 1
  Op rd = b.copy_d2h(out.data(), buf, 0, 4096);
  a.wait(never);
  a.fill(buf, 0, 4096, 0x22222222u);  // held behind `never`
  a.record(ev);                      // record 2, held too
  b2.wait(ev);                       // binds to record 2
  Op rd2 = b2.copy_d2h(out2.data(), buf, 0, 4096);

  SPYRE_ASSERT_OK(rd.wait(kWait));
  std::vector<std::uint8_t> want(4096);
  fill32_reference(want.data(), 4096, 0x11111111u);
  EXPECT_TRUE(bytes_equal(want.data(), out.data(), 4096));
  EXPECT_FALSE(ev.query());
  EXPECT_EQ(ev.synchronize(20ms).code(), ErrorCode::kWaitTimeout);
  EXPECT_EQ(rd2.wait(20ms).code(), ErrorCode::kWaitTimeout);
  EXPECT_FALSE(b2.query());

  SPYRE_ASSERT_OK(e.reset());  // ends the compute; everything held is cancelled
  EXPECT_EQ(rd2.wait(kWait).code(), ErrorCode::kCancelled);
  EXPECT_TRUE(ev.query());
  SPYRE_EXPECT_OK(ev.synchronize(kWait));
  EXPECT_EQ(a.synchronize(kWait).code(), ErrorCode::kCancelled);
  SPYRE_EXPECT_OK(a.synchronize(kWait));  // the error was cleared
}

TEST(Events, RecordOnIdleStreamCompletesAtOnce) {
  Rig rig = make_rig();
  Engine& e = *rig.engine;
  Stream s = e.create_stream();
  Event ev = e.create_event();
  rig.dev().pause();
  Op rec = s.record(ev);
  EXPECT_TRUE(rec.done());
  EXPECT_TRUE(ev.query());
  rig.dev().resume();
}

// Event timing from the device's clock: two records around a 300 us compute op are at least that
// far apart (device time: wall time on refdev, simulated time on sim and rtl); a third on another
// stream ordered after the second by a wait is later still. What is not recorded or not yet
// complete is refused by name.
TEST(Events, ElapsedTimeComesFromTheDeviceClock) {
  refdev::RefDeviceConfig cfg;
  cfg.honour_compute_time = true;  // refdev: a compute CB takes its duration
  Rig rig = make_rig({}, cfg);
  Engine& e = *rig.engine;
  Stream s = e.create_stream(), t = e.create_stream();
  Event start = e.create_event(), end = e.create_event(), later = e.create_event(), never = e.create_event();
  s.record(start);
  s.compute(300us);
  s.record(end);
  t.wait(end);
  t.compute(100us);
  t.record(later);
  SPYRE_ASSERT_OK(later.synchronize(kWait));
  SPYRE_ASSERT_OK(s.synchronize(kWait));
  ASSERT_GT(start.device_time_ns(), 0u);
  EXPECT_GE(end.elapsed_since(start), 300us);
  EXPECT_GE(later.elapsed_since(end), 100us);
  EXPECT_EQ(start.elapsed_since(end), -end.elapsed_since(start));
  EXPECT_EQ(never.device_time_ns(), 0u);
  try {
    (void)end.elapsed_since(never);
    FAIL() << "an event never recorded was accepted";
  } catch (const InvalidArgument& ex) {
    EXPECT_NE(std::string(ex.what()).find("start event was never recorded"), std::string::npos) << ex.what();
  }
  try {
    (void)end.elapsed_since(Event());
    FAIL() << "an empty Event handle was accepted";
  } catch (const InvalidArgument& ex) {
    EXPECT_NE(std::string(ex.what()).find("start Event handle is empty"), std::string::npos) << ex.what();
  }
}

// --- Host callbacks -------------------------------------------------------------------------

// A host callback runs after every earlier op of its stream has completed (it sees D2H results
// in host memory and H2D results in device memory) and before any later op starts (a staged H2D
// behind it copies what the callback wrote).
TEST(HostCallbacks, OrderedWithDeviceOps) {
  constexpr std::uint64_t n = 9 * MiB + 333;
  Rig rig = make_rig();
  Engine& e = *rig.engine;
  Stream s = e.create_stream();
  DeviceBuffer a = e.allocate(n), b = e.allocate(n);
  std::vector<std::uint8_t> src = pattern(n, 8), h(n, 0), later(n, 0), out(n, 0);
  const std::vector<std::uint8_t> second = pattern(n, 9);
  std::vector<std::uint8_t> device_seen(n, 0);
  bool d2h_seen = false, callback_ran = false;

  s.copy_h2d(a, 0, src.data(), n);
  s.copy_d2h(h.data(), a, 0, n);
  Op cb = s.host_callback([&] {
    d2h_seen = std::memcmp(h.data(), src.data(), n) == 0;
    // Device memory through the backdoor: the H2D has landed.
    std::uint64_t off = 0;
    for (const DeviceChunk& c : a.address().chunks()) {
      const std::uint64_t k = std::min<std::uint64_t>(c.size, n - off);
      rig.dev().memory().read(c.physical(), device_seen.data() + off, k);
      off += k;
    }
    std::memcpy(later.data(), second.data(), n);
    callback_ran = true;
  });
  s.copy_h2d(b, 0, later.data(), n);
  s.copy_d2h(out.data(), b, 0, n);
  SPYRE_ASSERT_OK(s.synchronize(kWait));
  EXPECT_EQ(cb.kind(), OpKind::kHostCallback);
  EXPECT_TRUE(callback_ran);
  EXPECT_TRUE(d2h_seen);
  EXPECT_TRUE(bytes_equal(src.data(), device_seen.data(), n));
  EXPECT_TRUE(bytes_equal(second.data(), out.data(), n));
}

// A callback that throws fails its op (kCallbackFailed, its text kept) and the stream's error,
// not the engine; on a stream that isolates failures (the default) the next op runs.
TEST(HostCallbacks, ThrowingCallbackFailsItsOp) {
  Rig rig = make_rig();
  Engine& e = *rig.engine;
  Stream s = e.create_stream();
  Op bad = s.host_callback([] { throw std::runtime_error("boom"); });
  Op good = s.host_callback([] {});
  EXPECT_EQ(bad.wait(kWait).code(), ErrorCode::kCallbackFailed);
  EXPECT_NE(bad.status().message().find("boom"), std::string::npos);
  SPYRE_EXPECT_OK(good.wait(kWait));
  EXPECT_EQ(s.error().code(), ErrorCode::kCallbackFailed);
  EXPECT_EQ(s.synchronize(kWait).code(), ErrorCode::kCallbackFailed);
  SPYRE_EXPECT_OK(s.error());
}

// --- Priorities -----------------------------------------------------------------------------

// Both streams wait for DMAI slots (16, all held by the low-priority stream while the device is
// paused); as slots free up, the high-priority stream gets them until it has nothing left.
TEST(Priorities, HighPriorityStreamGetsFreedSlotsFirst) {
  EngineOptions o;
  o.ring_slots = {16, 16, 16};
  Rig rig = make_rig(o);
  Engine& e = *rig.engine;
  Stream low = e.create_stream(with(Ordering::kStrict, 0));
  Stream high = e.create_stream(with(Ordering::kStrict, 5));
  EXPECT_EQ(high.options().priority, 5);
  DeviceBuffer buf = e.allocate(64 * 4096);
  constexpr std::size_t kLow = 32, kHigh = 16;
  CompletionLog log(kLow + kHigh);

  rig.dev().pause();
  for (std::size_t i = 0; i < kLow; ++i) low.fill(buf, i * 4096, 4096, 1, log.callback(i));
  for (std::size_t i = 0; i < kHigh; ++i) high.fill(buf, (kLow + i) * 4096, 4096, 2, log.callback(kLow + i));
  EXPECT_EQ(e.stats().cbs_submitted, 16u);
  rig.dev().resume();
  SPYRE_ASSERT_OK(e.synchronize(kWait));
  ASSERT_TRUE(eventually([&] { return log.order().size() == kLow + kHigh; }));
  EXPECT_TRUE(log.exactly_once());

  std::vector<std::size_t> want;
  for (std::size_t i = 0; i < 16; ++i) want.push_back(i);                  // already in the ring
  for (std::size_t i = 0; i < kHigh; ++i) want.push_back(kLow + i);        // high first
  for (std::size_t i = 16; i < kLow; ++i) want.push_back(i);               // then the rest of low
  EXPECT_EQ(log.order(), want);
  EXPECT_EQ(rig.spy->overruns(), 0u);
  EXPECT_LE(rig.spy->max_occupancy(hw::Pipeline::kDmai), 16u);
}

// --- Caller-driven completion ---------------------------------------------------------------

// Without a poller, waits drive completions: Op::wait, Stream::query/synchronize, Event
// query/synchronize, Engine::synchronize.
TEST(CallerDriven, RoundTripEventsAndQueries) {
  constexpr std::uint64_t n = 9 * MiB + 333;
  EngineOptions o;
  o.completion = CompletionMode::kCallerDriven;
  Rig rig = make_rig(o);
  Engine& e = *rig.engine;
  Stream a = e.create_stream(), b = e.create_stream();
  Event ev = e.create_event();
  DeviceBuffer buf = e.allocate(n, AllocOptions{1 * MiB + 128});
  std::vector<std::uint8_t> src = pattern(n, 42), out(n, 0);
  HostBuffer reg_out = e.allocate_host(n);

  Op w = a.copy_h2d(buf, 0, src.data(), n);
  a.record(ev);
  b.wait(ev);
  Op r1 = b.copy_d2h(out.data(), buf, 0, n);
  Op r2 = b.copy_d2h(reg_out.data(), buf, 0, n);
  SPYRE_ASSERT_OK(r2.wait(kWait));
  EXPECT_TRUE(w.done());
  EXPECT_TRUE(r1.done());
  EXPECT_TRUE(ev.query());
  EXPECT_TRUE(bytes_equal(src.data(), out.data(), n));
  EXPECT_TRUE(bytes_equal(src.data(), reg_out.data(), n));

  // query() alone makes progress.
  a.fill(buf, 0, n, 9);
  EXPECT_TRUE(eventually([&] { return a.query(); }));
  a.record(ev);
  EXPECT_TRUE(eventually([&] { return ev.query(); }));
  a.fill(buf, 0, 4096, 10);
  SPYRE_ASSERT_OK(e.synchronize(kWait));
  EXPECT_EQ(e.stats().ops_completed, e.stats().ops_submitted);
}


// A runtime that only polls (Op::done, Stream::query, Event::query) and never waits still sees
// its work finish: on a host-driven device (sim, rtl) each query is a step of the device; on a
// self-timed one the poller thread, or the query itself in caller-driven mode, reaps the RBs.
class Polling : public ::testing::TestWithParam<CompletionMode> {};

TEST_P(Polling, QueriesAloneCompleteACopy) {
  constexpr std::uint64_t n = 3 * MiB + 640;
  EngineOptions o;
  o.completion = GetParam();
  Rig rig = make_rig(o);
  Engine& e = *rig.engine;
  Stream s = e.create_stream();
  Event ev = e.create_event();
  DeviceBuffer buf = e.allocate(n, AllocOptions{1 * MiB});
  std::vector<std::uint8_t> src = pattern(n, 77), out(n, 0);

  Op w = s.copy_h2d(buf, 0, src.data(), n);
  EXPECT_TRUE(eventually([&] { return w.done(); }));
  SPYRE_EXPECT_OK(w.status());
  Op r = s.copy_d2h(out.data(), buf, 0, n);
  EXPECT_TRUE(eventually([&] { return s.query(); }));
  EXPECT_TRUE(r.done());
  EXPECT_TRUE(bytes_equal(src.data(), out.data(), n));
  s.fill(buf, 0, n, 5);
  s.record(ev);
  EXPECT_TRUE(eventually([&] { return ev.query(); }));
  EXPECT_EQ(e.stats().ops_completed, e.stats().ops_submitted);
}

INSTANTIATE_TEST_SUITE_P(Modes, Polling,
                         ::testing::Values(CompletionMode::kAuto, CompletionMode::kCallerDriven),
                         [](const ::testing::TestParamInfo<CompletionMode>& param_info) {
                           return param_info.param == CompletionMode::kAuto ? std::string("Auto")
                                                                      : std::string("CallerDriven");
                         });

}  // namespace
}  // namespace spyre_dma::test
