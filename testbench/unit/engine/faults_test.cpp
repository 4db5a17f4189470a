// Device faults: full queues (never overrun), Error RBs, IOMMU faults, a device that stops
// answering (CB timeouts, quarantine, fail-fast, reset), and reset with work in flight.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "engine_fixture.hpp"

namespace spyre_dma::test {
namespace {

// --- Full queues ----------------------------------------------------------------------------

// With 4 slots per pipeline and the device paused, exactly 4 CBs per pipeline are handed over and
// the rest wait in their streams; after resume everything completes, the rings were never
// overrun and the device never saw a queue fault.
TEST(FullQueue, OpsWaitForSlotsAndNeverOverrun) {
  EngineOptions o;
  o.ring_slots = {4, 4, 4};
  Rig rig = make_rig(o);
  Engine& e = *rig.engine;
  Stream in = e.create_stream(), out = e.create_stream(), cmp = e.create_stream();
  constexpr std::size_t kOps = 40, kBytes = 4096;
  DeviceBuffer buf = e.allocate(kOps * kBytes);
  HostBuffer h = e.allocate_host(kOps * kBytes);
  std::memset(h.data(), 0, kOps * kBytes);
  CompletionLog log(3 * kOps);

  rig.dev().pause();
  for (std::size_t i = 0; i < kOps; ++i) {
    in.fill(buf, i * kBytes, kBytes, static_cast<std::uint32_t>(i), log.callback(i));
    cmp.compute(1us, log.callback(kOps + i));
  }
  for (std::size_t i = 0; i < kOps; ++i) {
    out.copy_d2h(static_cast<std::uint8_t*>(h.data()) + i * kBytes, buf, i * kBytes, kBytes,
                 log.callback(2 * kOps + i));
  }
  const EngineStats held = e.stats();
  EXPECT_EQ(held.cbs_submitted, 12u);
  EXPECT_GT(held.queue_full_stalls, 0u);
  EXPECT_EQ(held.ops_completed, 0u);
  for (auto p : {hw::Pipeline::kCompute, hw::Pipeline::kDmai, hw::Pipeline::kDmao}) {
    EXPECT_EQ(rig.spy->max_occupancy(p), 4u);
  }
  rig.dev().resume();
  SPYRE_ASSERT_OK(e.synchronize(kWait));
  ASSERT_TRUE(eventually([&] { return log.order().size() == 3 * kOps; }));
  EXPECT_TRUE(log.exactly_once());
  EXPECT_EQ(rig.spy->overruns(), 0u);
  for (auto p : {hw::Pipeline::kCompute, hw::Pipeline::kDmai, hw::Pipeline::kDmao}) {
    EXPECT_LE(rig.spy->max_occupancy(p), 4u);
  }
  const refdev::RefDeviceCounters c = rig.dev().counters();
  EXPECT_EQ(c.queue_faults, (std::array<std::uint64_t, 3>{0, 0, 0}));
  EXPECT_EQ(c.total_cbs(), 3 * kOps);
  EXPECT_EQ(e.stats().ops_completed, e.stats().ops_submitted);
  // The reads ran after their fills (strict `out` was only ordered by the device's FIFO of
  // another stream, so check the data through a fresh read).
  std::vector<std::uint8_t> all(kOps * kBytes), want(kOps * kBytes);
  SPYRE_ASSERT_OK(out.copy_d2h(all.data(), buf, 0, all.size()).wait(kWait));
  for (std::size_t i = 0; i < kOps; ++i) fill32_reference(want.data() + i * kBytes, kBytes, static_cast<std::uint32_t>(i));
  EXPECT_TRUE(bytes_equal(want.data(), all.data(), all.size()));
}

// One op of more CBs than the ring holds waits for its own CBs' slots (and a staged one for its
// own staging buffers) without anything else completing in between.
TEST(FullQueue, OneOpLargerThanTheRing) {
  EngineOptions o;
  o.ring_slots = {1, 2, 2};
  o.staging_buffers = 2;
  Rig rig = make_rig(o);
  Engine& e = *rig.engine;
  Stream s = e.create_stream();
  constexpr std::uint64_t n = 24 * MiB + 100;  // 7 CBs each way
  DeviceBuffer buf = e.allocate(n);
  std::vector<std::uint8_t> src = pattern(n, 11), dst(n, 0);
  HostBuffer reg = e.allocate_host(n);
  s.copy_h2d(buf, 0, src.data(), n);           // staged
  s.copy_d2h(reg.data(), buf, 0, n);           // direct
  s.copy_d2h(dst.data(), buf, 0, n);           // staged
  SPYRE_ASSERT_OK(s.synchronize(kWait));
  EXPECT_TRUE(bytes_equal(src.data(), reg.data(), n));
  EXPECT_TRUE(bytes_equal(src.data(), dst.data(), n));
  EXPECT_EQ(rig.spy->overruns(), 0u);
  EXPECT_LE(rig.spy->max_occupancy(hw::Pipeline::kDmai), 2u);
  EXPECT_GT(e.stats().queue_full_stalls + e.stats().staging_stalls, 0u);
}

// --- Error RBs ------------------------------------------------------------------------------

// Every third CB gets an Error RB: exactly those ops fail with kDeviceError and the RB's detail;
// the others land byte-exact; the failed ones touch nothing; the stream reports the first error
// until synchronize() clears it.
TEST(ErrorRbs, ExactlyTheAffectedOpsFail) {
  Rig rig = make_rig();
  Engine& e = *rig.engine;
  Stream s = e.create_stream();
  constexpr std::size_t kOps = 30, kBytes = 4096;
  constexpr std::uint32_t kCanary = 0xABABABABu;
  DeviceBuffer buf = e.allocate(kOps * kBytes);
  HostBuffer src = e.allocate_host(kOps * kBytes);
  fill_pattern(src.data(), kOps * kBytes, 21);
  SPYRE_ASSERT_OK(s.fill(buf, 0, kOps * kBytes, kCanary).wait(kWait));

  refdev::RefDeviceFaults f;
  f.error_every_n = 3;
  rig.dev().set_faults(f);
  std::vector<Op> ops;
  CompletionLog log(kOps);
  auto* base = static_cast<std::uint8_t*>(src.data());
  for (std::size_t i = 0; i < kOps; ++i) {
    ops.push_back(s.copy_h2d(buf, i * kBytes, base + i * kBytes, kBytes, log.callback(i)));
  }
  const Status first = s.synchronize(kWait);
  EXPECT_EQ(first.code(), ErrorCode::kDeviceError) << first.to_string();
  EXPECT_EQ(first.message(), ops[2].status().message());  // the first failed op's status
  SPYRE_EXPECT_OK(s.synchronize(kWait));                  // cleared
  SPYRE_EXPECT_OK(s.error());
  rig.dev().set_faults({});
  ASSERT_TRUE(eventually([&] { return log.order().size() == kOps; }));
  EXPECT_TRUE(log.exactly_once());

  std::vector<std::uint8_t> want(kOps * kBytes);
  fill32_reference(want.data(), want.size(), kCanary);
  for (std::size_t i = 0; i < kOps; ++i) {
    SCOPED_TRACE(i);
    const Status st = ops[i].status();
    if ((i + 1) % 3 != 0) {
      SPYRE_EXPECT_OK(st);
      std::memcpy(want.data() + i * kBytes, base + i * kBytes, kBytes);
      continue;
    }
    EXPECT_EQ(st.code(), ErrorCode::kDeviceError);
    ASSERT_TRUE(st.device().has_value());
    const DeviceErrorDetail& d = *st.device();
    EXPECT_EQ(d.pipeline, hw::Pipeline::kDmai);
    EXPECT_EQ(d.status, hw::RbStatus::kError);
    EXPECT_EQ(d.kind, hw::ErrorKind::kPcieError);
    EXPECT_EQ(d.detail, src.iova() + i * kBytes);  // the host IOVA of the CB
    EXPECT_GE(d.tag, hw::kMinTag);
    EXPECT_NE(st.message().find("tag " + std::to_string(d.tag)), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("op " + std::to_string(ops[i].id())), std::string::npos) << st.message();
  }
  const EngineStats st = e.stats();
  EXPECT_EQ(st.ops_failed, kOps / 3);
  EXPECT_EQ(rig.dev().counters().injected_errors, kOps / 3);
  EXPECT_EQ(st.device_faults, 0u);

  std::vector<std::uint8_t> got(kOps * kBytes);
  SPYRE_ASSERT_OK(s.copy_d2h(got.data(), buf, 0, got.size()).wait(kWait));
  EXPECT_TRUE(bytes_equal(want.data(), got.data(), got.size()));
}

// A failed staged D2H copies nothing out; a multi-CB op with one bad CB fails once, as a whole.
TEST(ErrorRbs, FailedCbsCopyNothingAndFailTheirOpOnce) {
  Rig rig = make_rig();
  Engine& e = *rig.engine;
  Stream s = e.create_stream();
  constexpr std::uint64_t n = 12 * MiB;
  DeviceBuffer buf = e.allocate(n);
  std::vector<std::uint8_t> src = pattern(n, 31);
  SPYRE_ASSERT_OK(s.copy_h2d(buf, 0, src.data(), n).wait(kWait));

  refdev::RefDeviceFaults f;
  f.error_every_n = 1;  // every CB
  rig.dev().set_faults(f);
  std::vector<std::uint8_t> dst(n, 0x5A);
  int calls = 0;
  Op op = s.copy_d2h(dst.data(), buf, 0, n, [&](const Status&) { ++calls; });
  EXPECT_EQ(op.wait(kWait).code(), ErrorCode::kDeviceError);
  EXPECT_TRUE(std::all_of(dst.begin(), dst.end(), [](std::uint8_t b) { return b == 0x5A; }));

  f.error_every_n = 2;  // the second of the op's 3 CBs
  rig.dev().set_faults(f);
  Op multi = s.fill(buf, 0, n, 7);
  EXPECT_EQ(multi.wait(kWait).code(), ErrorCode::kDeviceError);
  EXPECT_EQ(s.synchronize(kWait).code(), ErrorCode::kDeviceError);
  rig.dev().set_faults({});
  EXPECT_TRUE(eventually([&] { return calls == 1; }));
  EXPECT_EQ(e.stats().ops_failed, 2u);
  EXPECT_EQ(e.stats().quarantined_staging, 0u);

  // The fill's first and third CBs landed, its second touched nothing; the engine is healthy.
  std::vector<std::uint8_t> want = src, back(n, 0);
  fill32_reference(want.data(), 4 * MiB, 7);
  fill32_reference(want.data() + 8 * MiB, 4 * MiB, 7);
  SPYRE_ASSERT_OK(s.copy_d2h(back.data(), buf, 0, n).wait(kWait));
  EXPECT_TRUE(bytes_equal(want.data(), back.data(), n));
}

// --- IOMMU faults ---------------------------------------------------------------------------

// The IOVA of a registered buffer is unmapped behind the engine's back: the device refuses the
// access, reports kIommuFault with the IOVA, and the op fails with kIommuFault.
TEST(IommuFault, UnmappedRegistrationFailsTheOp) {
  Rig rig = make_rig();
  Engine& e = *rig.engine;
  Stream s = e.create_stream();
  DeviceBuffer buf = e.allocate(64 * KiB);
  HostBuffer h = e.allocate_host(64 * KiB);
  fill_pattern(h.data(), 64 * KiB, 41);
  SPYRE_ASSERT_OK(s.copy_h2d(buf, 0, h.data(), 64 * KiB).wait(kWait));
  const std::uint64_t faults_before = rig.dev().iommu().faults();
  rig.dev().iommu().unmap(h.iova());

  auto* p = static_cast<std::uint8_t*>(h.data());
  Op w = s.copy_h2d(buf, 0, p + 4096, 4096);
  Op r = s.copy_d2h(p + 8192, buf, 0, 4096);
  for (const Op* op : {&w, &r}) {
    const Status st = op->wait(kWait);
    EXPECT_EQ(st.code(), ErrorCode::kIommuFault) << st.to_string();
    ASSERT_TRUE(st.device().has_value());
    EXPECT_EQ(st.device()->kind, hw::ErrorKind::kIommuFault);
    EXPECT_EQ(st.device()->status, hw::RbStatus::kError);
  }
  EXPECT_EQ(w.status().device()->detail, h.iova() + 4096);
  EXPECT_EQ(w.status().device()->field, hw::CbField::kDmiHostIova);
  EXPECT_EQ(r.status().device()->detail, h.iova() + 8192);
  EXPECT_EQ(r.status().device()->field, hw::CbField::kDmoHostIova);
  EXPECT_EQ(rig.dev().iommu().faults(), faults_before + 2);
  EXPECT_EQ(s.synchronize(kWait).code(), ErrorCode::kIommuFault);

  // Other memory still works; releasing the broken registration is harmless.
  h = HostBuffer{};
  std::vector<std::uint8_t> out(64 * KiB, 0);
  SPYRE_ASSERT_OK(s.copy_d2h(out.data(), buf, 0, out.size()).wait(kWait));
  EXPECT_EQ(e.stats().ops_failed, 2u);
}

// A device failure on a stream that propagates failures (docs/engine.md, "When an op fails"):
// an op-ordered stream hands the device nothing before the op ahead is done, so what follows the
// faulting H2D fails naming it and moves no bytes; a strict stream pipelines its ops, so a D2H
// already handed over when the fault came back may have moved its bytes, and fails all the same.
TEST(IommuFault, APropagatingStreamFailsWhatFollowsTheFault) {
  for (const Ordering ordering : {Ordering::kOpOrdered, Ordering::kStrict}) {
    SCOPED_TRACE(ordering == Ordering::kOpOrdered ? "op-ordered" : "strict");
    Rig rig = make_rig();
    Engine& e = *rig.engine;
    StreamOptions so;
    so.ordering = ordering;
    so.on_failure = FailurePolicy::kPropagate;
    Stream s = e.create_stream(so);
    DeviceBuffer buf = e.allocate(64 * KiB);
    SPYRE_ASSERT_OK(s.fill(buf, 0, 64 * KiB, 0x01010101).wait(kWait));
    HostBuffer h = e.allocate_host(64 * KiB);
    rig.dev().iommu().unmap(h.iova());
    std::vector<std::uint8_t> out(4096, 0x5a);
    Op w = s.copy_h2d(buf, 0, h.data(), 4096);
    Op r = s.copy_d2h(out.data(), buf, 0, 4096);
    Op f = s.fill(buf, 8192, 4096, 0x02020202);
    EXPECT_EQ(w.wait(kWait).code(), ErrorCode::kIommuFault);
    for (const Op* op : {&r, &f}) {
      const Status st = op->wait(kWait);
      EXPECT_EQ(st.code(), ErrorCode::kDependencyFailed) << st.to_string();
      EXPECT_EQ(st.failed_op(), w.id());
      ASSERT_TRUE(st.device().has_value());  // the device's words about the fault, carried on
      EXPECT_EQ(st.device()->kind, hw::ErrorKind::kIommuFault);
    }
    EXPECT_EQ(s.synchronize(kWait).code(), ErrorCode::kIommuFault);
    std::vector<std::uint8_t> now(64 * KiB, 0);
    SPYRE_ASSERT_OK(s.copy_d2h(now.data(), buf, 0, now.size()).wait(kWait));
    if (ordering == Ordering::kOpOrdered) {
      EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](std::uint8_t b) { return b == 0x5a; }));
      EXPECT_TRUE(std::all_of(now.begin(), now.end(), [](std::uint8_t b) { return b == 0x01; }));
    }
  }
}

// --- A device that stops answering ----------------------------------------------------------

EngineOptions short_timeout(std::size_t staging_buffers = 8) {
  EngineOptions o;
  o.cb_timeout = 200ms;
  o.staging_buffers = staging_buffers;
  return o;
}

// The CB times out (kDeviceTimeout, bounded); later ops on that pipeline fail at once without
// reaching the device; reset() then clearing the hang brings the engine back.
TEST(Hang, TimeoutFailFastAndReset) {
  Rig rig = make_rig(short_timeout());
  Engine& e = *rig.engine;
  Stream s = e.create_stream();
  DeviceBuffer buf = e.allocate(64 * KiB);
  HostBuffer h = e.allocate_host(64 * KiB);
  fill_pattern(h.data(), 64 * KiB, 51);

  refdev::RefDeviceFaults f;
  f.hang = true;
  rig.dev().set_faults(f);
  const auto t0 = std::chrono::steady_clock::now();
  Op op = s.copy_h2d(buf, 0, h.data(), 4096);
  const Status st = op.wait(kWait);
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(st.code(), ErrorCode::kDeviceTimeout) << st.to_string();
  EXPECT_NE(st.message().find("200 ms"), std::string::npos) << st.message();
  EXPECT_GE(took, 200ms);
  EXPECT_LT(took, kWait);
  EXPECT_EQ(e.stats().quarantined_tags, 1u);

  const auto cbs = e.stats().cbs_submitted;
  Op again = s.copy_h2d(buf, 0, h.data(), 4096);
  EXPECT_TRUE(again.done());  // failed at submission, nothing queued behind a dead device
  EXPECT_EQ(again.status().code(), ErrorCode::kDeviceTimeout);
  Op fill = s.fill(buf, 0, 4096, 1);
  EXPECT_EQ(fill.wait(kWait).code(), ErrorCode::kDeviceTimeout);
  EXPECT_EQ(e.stats().cbs_submitted, cbs);
  EXPECT_EQ(s.synchronize(kWait).code(), ErrorCode::kDeviceTimeout);

  SPYRE_ASSERT_OK(e.reset());
  EXPECT_EQ(e.stats().quarantined_tags, 0u);
  rig.dev().set_faults({});
  std::vector<std::uint8_t> out(64 * KiB, 0);
  s.copy_h2d(buf, 0, h.data(), 64 * KiB);
  s.copy_d2h(out.data(), buf, 0, out.size());
  SPYRE_ASSERT_OK(s.synchronize(kWait));
  EXPECT_TRUE(bytes_equal(h.data(), out.data(), out.size()));
}

// The staging buffer of a timed-out CB is quarantined (the device may still write it) and not
// handed out again before a reset: with 2 buffers, one quarantined, a 2-piece staged D2H gets only
// one. A reset returns both.
TEST(Hang, TimedOutStagingBufferIsQuarantinedUntilReset) {
  Rig rig = make_rig(short_timeout(2));
  Engine& e = *rig.engine;
  Stream s = e.create_stream();
  DeviceBuffer buf = e.allocate(8 * MiB);
  std::vector<std::uint8_t> small = pattern(4096, 61), big(8 * MiB, 0);

  refdev::RefDeviceFaults f;
  f.hang = true;
  rig.dev().set_faults(f);
  EXPECT_EQ(s.copy_h2d(buf, 0, small.data(), small.size()).wait(kWait).code(), ErrorCode::kDeviceTimeout);
  EXPECT_EQ(e.stats().quarantined_staging, 1u);

  const EngineStats before = e.stats();
  Op rd = s.copy_d2h(big.data(), buf, 0, big.size());  // DMAO is not timed out yet
  EXPECT_EQ(rd.wait(kWait).code(), ErrorCode::kDeviceTimeout);
  const EngineStats after = e.stats();
  EXPECT_EQ(after.cbs_submitted - before.cbs_submitted, 1u);  // the second piece found no buffer
  EXPECT_GT(after.staging_stalls, before.staging_stalls);
  EXPECT_EQ(after.quarantined_staging, 2u);
  EXPECT_EQ(after.quarantined_tags, 2u);
  EXPECT_EQ(s.synchronize(kWait).code(), ErrorCode::kDeviceTimeout);

  SPYRE_ASSERT_OK(e.reset());
  EXPECT_EQ(e.stats().quarantined_staging, 0u);
  EXPECT_EQ(e.stats().quarantined_tags, 0u);
  rig.dev().set_faults({});
  std::vector<std::uint8_t> src = pattern(8 * MiB, 62);
  s.copy_h2d(buf, 0, src.data(), src.size());
  s.copy_d2h(big.data(), buf, 0, big.size());
  SPYRE_ASSERT_OK(s.synchronize(kWait));
  EXPECT_TRUE(bytes_equal(src.data(), big.data(), big.size()));
  EXPECT_EQ(rig.spy->overruns(), 0u);
}

// A late answer (the hang clears without a reset) frees the quarantined tag and buffer; the
// pipeline stays marked timed out until reset.
TEST(Hang, LateAnswerReleasesQuarantine) {
  Rig rig = make_rig(short_timeout(2));
  Engine& e = *rig.engine;
  Stream s = e.create_stream();
  DeviceBuffer buf = e.allocate(4096);
  std::vector<std::uint8_t> src = pattern(4096, 71);
  refdev::RefDeviceFaults f;
  f.hang = true;
  rig.dev().set_faults(f);
  EXPECT_EQ(s.copy_h2d(buf, 0, src.data(), src.size()).wait(kWait).code(), ErrorCode::kDeviceTimeout);
  EXPECT_EQ(e.stats().quarantined_staging, 1u);
  rig.dev().set_faults({});
  EXPECT_TRUE(eventually([&] {
    const EngineStats st = e.stats();
    return st.quarantined_staging == 0 && st.quarantined_tags == 0;
  }));
  EXPECT_EQ(e.stats().device_faults, 0u);  // a late RB is not a fault
  EXPECT_EQ(s.fill(buf, 0, 128, 1).wait(kWait).code(), ErrorCode::kDeviceTimeout);
  SPYRE_ASSERT_OK(e.reset());
  SPYRE_EXPECT_OK(s.fill(buf, 0, 128, 1).wait(kWait));
}

// --- Reset with work in flight --------------------------------------------------------------

// Everything in flight or queued (CBs on the paused device, ops waiting for slots, gated host
// callbacks, event waits) completes exactly once with kCancelled; the device is usable after.
TEST(Reset, CancelsInFlightWorkExactlyOnce) {
  EngineOptions o;
  o.ring_slots = {4, 8, 8};
  Rig rig = make_rig(o);
  Engine& e = *rig.engine;
  Stream a = e.create_stream(), b = e.create_stream(with(Ordering::kPipelineFifo)), c = e.create_stream();
  Event ev = e.create_event();
  DeviceBuffer buf = e.allocate(32 * MiB);
  std::vector<std::uint8_t> src = pattern(16 * MiB, 81), dst(16 * MiB, 0);
  HostBuffer reg = e.allocate_host(16 * MiB);
  std::atomic<int> callbacks_run{0};

  rig.dev().pause();
  std::vector<Op> ops;
  CompletionLog log;
  std::size_t n = 0;
  auto cb = [&] { log.resize(n + 1); return log.callback(n++); };
  for (int i = 0; i < 6; ++i) {
    ops.push_back(a.copy_h2d(buf, 0, src.data(), src.size(), cb()));      // staged
    ops.push_back(a.host_callback([&] { ++callbacks_run; }, cb()));
    ops.push_back(b.copy_d2h(reg.data(), buf, 16 * MiB, 16 * MiB, cb()));  // direct
    ops.push_back(b.copy_d2h(dst.data(), buf, 0, 4 * MiB, cb()));          // staged
    ops.push_back(c.compute(1us, cb()));
    ops.push_back(c.fill(buf, 16 * MiB, 16 * MiB, 3, cb()));
  }
  ops.push_back(a.record(ev));
  ops.push_back(c.wait(ev));
  ops.push_back(c.fill(buf, 0, 4096, 4, cb()));
  EXPECT_EQ(e.stats().ops_completed, 0u);

  SPYRE_ASSERT_OK(e.reset());
  for (const Op& op : ops) {
    ASSERT_TRUE(op.done()) << op.id();
    EXPECT_EQ(op.status().code(), ErrorCode::kCancelled) << op.id() << ": " << op.status().to_string();
  }
  EXPECT_EQ(callbacks_run.load(), 0);
  ASSERT_TRUE(eventually([&] { return log.order().size() == n; }));
  EXPECT_TRUE(log.exactly_once());
  const EngineStats st = e.stats();
  EXPECT_EQ(st.ops_completed, st.ops_submitted);
  EXPECT_EQ(st.tags_in_use, 0u);
  EXPECT_EQ(a.synchronize(kWait).code(), ErrorCode::kCancelled);
  EXPECT_EQ(b.synchronize(kWait).code(), ErrorCode::kCancelled);
  EXPECT_EQ(c.synchronize(kWait).code(), ErrorCode::kCancelled);

  rig.dev().resume();
  for (Stream* s : {&a, &b, &c}) {
    std::vector<std::uint8_t> in = pattern(5 * MiB + 3, s->id()), out(5 * MiB + 3, 0);
    s->copy_h2d(buf, 0, in.data(), in.size());
    s->host_callback([&] { ++callbacks_run; });
    SPYRE_ASSERT_OK(s->synchronize(kWait));
    s->copy_d2h(out.data(), buf, 0, out.size());
    SPYRE_ASSERT_OK(s->synchronize(kWait));
    EXPECT_TRUE(bytes_equal(in.data(), out.data(), in.size()));
  }
  EXPECT_EQ(callbacks_run.load(), 3);
  EXPECT_EQ(rig.spy->overruns(), 0u);
}

// An H2D of `in` through `buf` on `s`, then a D2H back: the engine works (after a reset).
::testing::AssertionResult round_trips(Stream& s, const DeviceBuffer& buf, const std::vector<std::uint8_t>& in) {
  std::vector<std::uint8_t> out(in.size(), 0);
  s.copy_h2d(buf, 0, in.data(), in.size());
  s.copy_d2h(out.data(), buf, 0, out.size());
  const Status st = s.synchronize(kWait);
  if (!st.ok()) return ::testing::AssertionFailure() << "round trip: " << st.to_string();
  return bytes_equal(in.data(), out.data(), in.size());
}

// A staged (pageable) H2D of `src` on `s`, held by the spy mid-copy: the engine's staging thread
// stays inside the copy, outside the engine lock, until hold_host_copies(false).
::testing::AssertionResult hold_a_staged_copy(Rig& rig, Stream& s, const DeviceBuffer& dst,
                                              const std::vector<std::uint8_t>& src, Op& held) {
  rig.spy->hold_host_copies(true);
  held = s.copy_h2d(dst, 0, src.data(), src.size());
  if (!rig.spy->wait_for_held_copy(5s)) return ::testing::AssertionFailure() << "no staging copy was held within 5 s";
  return ::testing::AssertionSuccess();
}

// Resets racing a submitter whose staged H2Ds are being copied into staging outside the engine
// lock: every op completes exactly once (ok or cancelled), nothing leaks, and the engine works
// afterwards.
TEST(Reset, RacesStagedCopies) {
  Rig rig = make_rig();
  Engine& e = *rig.engine;
  Stream s = e.create_stream();
  constexpr std::uint64_t n = 16 * MiB;
  DeviceBuffer buf = e.allocate(n);
  std::vector<std::uint8_t> src = pattern(n, 91);
  constexpr std::size_t kOps = 24;
  CompletionLog log(kOps);
  std::atomic<bool> submitting{true};
  std::thread submitter([&] {
    for (std::size_t i = 0; i < kOps; ++i) s.copy_h2d(buf, 0, src.data(), n, log.callback(i));
    submitting = false;
  });
  int resets = 0;
  while (submitting.load() || resets < 3) {
    SPYRE_EXPECT_OK(e.reset());
    ++resets;
    std::this_thread::sleep_for(2ms);
  }
  submitter.join();
  SPYRE_ASSERT_OK(e.synchronize(kWait));
  ASSERT_TRUE(eventually([&] { return log.order().size() == kOps; }));
  EXPECT_TRUE(log.exactly_once());
  for (const auto& [i, code] : log.codes()) {
    EXPECT_TRUE(code == ErrorCode::kOk || code == ErrorCode::kCancelled) << i << ": " << to_string(code);
  }
  EXPECT_TRUE(eventually([&] { return e.stats().tags_in_use == 0; }));
  EXPECT_EQ(e.stats().quarantined_staging, 0u);
  (void)s.synchronize(kWait);  // clears a cancellation
  EXPECT_TRUE(round_trips(s, buf, pattern(n, 92)));
}

// reset() drops the engine lock while it waits for a staging thread mid-copy. An op submitted in
// that window is issued once the rings are reprogrammed, not into the rings being reset (where it
// was lost, and the slot reserved for a copy-in with it).
TEST(Reset, OpsSubmittedWhileItWaitsRunOnTheResetDevice) {
  Rig rig = make_rig();
  Engine& e = *rig.engine;
  Stream staged = e.create_stream(), other = e.create_stream();
  constexpr std::uint64_t n = 4 * MiB;
  DeviceBuffer a = e.allocate(n), b = e.allocate(n);
  std::vector<std::uint8_t> src = pattern(n, 93);

  const std::uint64_t resets = rig.spy->resets_seen();  // the engine's own, at start
  Op held;
  ASSERT_TRUE(hold_a_staged_copy(rig, staged, a, src, held));
  Status reset;
  std::thread resetter([&] { reset = e.reset(); });
  ASSERT_TRUE(eventually([&] { return rig.spy->resets_seen() == resets + 1; }));
  // The resetter now waits for the staging thread, without the lock.
  Op fill = other.fill(b, 0, n, 0x01020304u);
  std::this_thread::sleep_for(20ms);  // time for a wrongly issued CB to reach the old rings
  EXPECT_FALSE(fill.done());
  rig.spy->hold_host_copies(false);
  resetter.join();
  SPYRE_EXPECT_OK(reset);
  EXPECT_EQ(held.wait(kWait).code(), ErrorCode::kCancelled);
  SPYRE_EXPECT_OK(fill.wait(5s));  // submitted after the reset cancelled everything: it runs

  std::vector<std::uint8_t> out(n, 0);
  other.copy_d2h(out.data(), b, 0, n);
  SPYRE_ASSERT_OK(other.synchronize(kWait));
  for (std::uint64_t i = 0; i < n; i += 4) {
    ASSERT_EQ(out[i], 0x04) << i;
    ASSERT_EQ(out[i + 3], 0x01) << i;
  }
  (void)staged.synchronize(kWait);  // clears the cancellation
  EXPECT_TRUE(round_trips(staged, a, src));
  EXPECT_EQ(e.stats().tags_in_use, 0u);
  EXPECT_EQ(rig.spy->overruns(), 0u);
}

// Two resets at once: the second waits for the first, then resets the device again.
TEST(Reset, ConcurrentResetsFollowEachOther) {
  Rig rig = make_rig();
  Engine& e = *rig.engine;
  Stream s = e.create_stream();
  constexpr std::uint64_t n = 4 * MiB;
  DeviceBuffer a = e.allocate(n);
  std::vector<std::uint8_t> src = pattern(n, 94);

  const std::uint64_t resets = rig.spy->resets_seen();
  Op held;
  ASSERT_TRUE(hold_a_staged_copy(rig, s, a, src, held));
  Status first, second;
  std::thread t1([&] { first = e.reset(); });
  ASSERT_TRUE(eventually([&] { return rig.spy->resets_seen() == resets + 1; }));
  std::thread t2([&] { second = e.reset(); });
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(rig.spy->resets_seen(), resets + 1);  // the second has not touched the device
  rig.spy->hold_host_copies(false);
  t1.join();
  t2.join();
  SPYRE_EXPECT_OK(first);
  SPYRE_EXPECT_OK(second);
  EXPECT_EQ(rig.spy->resets_seen(), resets + 2);
  EXPECT_EQ(held.wait(kWait).code(), ErrorCode::kCancelled);
  (void)s.synchronize(kWait);  // clears the cancellation
  EXPECT_TRUE(round_trips(s, a, src));
  EXPECT_EQ(e.stats().tags_in_use, 0u);
}

}  // namespace
}  // namespace spyre_dma::test
