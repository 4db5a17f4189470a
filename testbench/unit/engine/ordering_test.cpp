// Ordering: FIFO within a stream in each ordering mode, completion (callback) order, the strict
// mode's barriers (counted on the wire by SpyDevice, and proved by data where pipelines change),
// host-memory hazards through staging, events across streams, host callbacks, priorities, and
// the caller-driven completion mode.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "engine_fixture.hpp"

namespace spyre_dma::test {
namespace {

const char* name(Ordering o) {
  switch (o) {
    case Ordering::kStrict: return "Strict";
    case Ordering::kOpOrdered: return "OpOrdered";
    case Ordering::kPipelineFifo: return "PipelineFifo";
  }
  return "?";
}

StreamOptions with(Ordering o, int priority = 0) {
  StreamOptions so;
  so.ordering = o;
  so.priority = priority;
  return so;
}

// --- FIFO within a stream -------------------------------------------------------------------

// (ordering, registered host memory, completion mode)
using FifoParam = std::tuple<Ordering, bool, CompletionMode>;
class Fifo : public ::testing::TestWithParam<FifoParam> {
 protected:
  Rig rig_ = make_rig([] {
    EngineOptions o;
    o.completion = std::get<2>(GetParam());
    return o;
  }());
  Engine& e_ = *rig_.engine;
  Stream s_ = e_.create_stream(with(std::get<0>(GetParam())));

  // Host memory for one copy: registered (direct DMA) or pageable (staged).
  struct Host {
    HostBuffer reg;
    std::vector<std::uint8_t> vec;
    std::uint8_t* p = nullptr;
  };
  Host host(std::size_t n) {
    Host h;
    if (std::get<1>(GetParam())) {
      h.reg = e_.allocate_host(n);
      h.p = static_cast<std::uint8_t*>(h.reg.data());
    } else {
      h.vec.resize(n);
      h.p = h.vec.data();
    }
    std::memset(h.p, 0, n);
    return h;
  }
};

// Each D2H sees exactly the H2D (or fill) submitted just before it to the same buffer, and after
// many alternating writes the last one wins.
TEST_P(Fifo, EachReadSeesThePrecedingWrite) {
  constexpr std::size_t kIters = 24, kBytes = 64 * KiB + 100;
  DeviceBuffer buf = e_.allocate(kBytes);
  std::vector<Host> in, out;
  for (std::size_t i = 0; i < kIters; ++i) {
    in.push_back(host(kBytes));
    out.push_back(host(kBytes));
    fill_pattern(in.back().p, kBytes, 1000 + i);
  }
  // Pipeline-FIFO orders DMAI against DMAO only through synchronisation.
  const bool fifo_only = std::get<0>(GetParam()) == Ordering::kPipelineFifo;
  for (std::size_t i = 0; i < kIters; ++i) {
    if (i % 3 == 2) {
      s_.fill(buf, 0, kBytes, static_cast<std::uint32_t>(0xF0F0'0000u + i));
    } else {
      s_.copy_h2d(buf, 0, in[i].p, kBytes);
    }
    if (fifo_only) SPYRE_ASSERT_OK(s_.synchronize(kWait));
    s_.copy_d2h(out[i].p, buf, 0, kBytes);
    if (fifo_only) SPYRE_ASSERT_OK(s_.synchronize(kWait));
  }
  if (fifo_only) SPYRE_ASSERT_OK(s_.synchronize(kWait));
  // Back-to-back writes without reads in between: the last one wins.
  for (std::size_t i = 0; i < kIters; ++i) s_.copy_h2d(buf, 0, in[i].p, kBytes);
  if (fifo_only) SPYRE_ASSERT_OK(s_.synchronize(kWait));
  Host last = host(kBytes);
  s_.copy_d2h(last.p, buf, 0, kBytes);
  SPYRE_ASSERT_OK(s_.synchronize(kWait));

  std::vector<std::uint8_t> filled(kBytes);
  for (std::size_t i = 0; i < kIters; ++i) {
    if (i % 3 == 2) {
      fill32_reference(filled.data(), kBytes, static_cast<std::uint32_t>(0xF0F0'0000u + i));
      EXPECT_TRUE(bytes_equal(filled.data(), out[i].p, kBytes)) << "read " << i;
    } else {
      EXPECT_TRUE(bytes_equal(in[i].p, out[i].p, kBytes)) << "read " << i;
    }
  }
  EXPECT_TRUE(bytes_equal(in.back().p, last.p, kBytes)) << "last write";
}

// on_complete callbacks of one stream fire in submission order, whatever pipelines the ops use
// (the DMAO RB of an op may be drained after the DMAI RB of the op behind it).
TEST_P(Fifo, CallbacksFireInSubmissionOrder) {
  if (std::get<0>(GetParam()) == Ordering::kPipelineFifo) GTEST_SKIP() << "FIFO per pipeline only";
  constexpr std::size_t kOps = 240, kBytes = 4096 + 128;
  DeviceBuffer a = e_.allocate(kBytes), b = e_.allocate(kBytes);
  Host in = host(kBytes), out = host(kBytes);
  fill_pattern(in.p, kBytes, 9);
  CompletionLog log(kOps);
  std::vector<Op> ops;
  for (std::size_t i = 0; i < kOps; ++i) {
    switch (i % 6) {
      case 0: ops.push_back(s_.copy_h2d(a, 0, in.p, kBytes, log.callback(i))); break;
      case 1: ops.push_back(s_.copy_d2h(out.p, a, 0, kBytes, log.callback(i))); break;
      case 2: ops.push_back(s_.fill(b, 0, kBytes, 7, log.callback(i))); break;
      case 3: ops.push_back(s_.copy_d2d(b, 0, a, 0, kBytes, log.callback(i))); break;
      case 4: ops.push_back(s_.compute(1us, log.callback(i))); break;
      case 5: ops.push_back(s_.host_callback([] {}, log.callback(i))); break;
    }
  }
  SPYRE_ASSERT_OK(s_.synchronize(kWait));
  ASSERT_TRUE(eventually([&] { return log.order().size() == kOps; }));
  EXPECT_TRUE(log.exactly_once());
  const auto order = log.order();
  for (std::size_t i = 0; i < kOps; ++i) ASSERT_EQ(order[i], i) << "completion " << i;
  for (std::size_t i = 1; i < kOps; ++i) EXPECT_LT(ops[i - 1].id(), ops[i].id());
  EXPECT_TRUE(bytes_equal(in.p, out.p, kBytes));
}

INSTANTIATE_TEST_SUITE_P(
    Modes, Fifo,
    ::testing::Combine(::testing::Values(Ordering::kStrict, Ordering::kOpOrdered, Ordering::kPipelineFifo),
                       ::testing::Bool(),
                       ::testing::Values(CompletionMode::kPollerThread, CompletionMode::kCallerDriven)),
    [](const ::testing::TestParamInfo<FifoParam>& p) {
      return std::string(name(std::get<0>(p.param))) + (std::get<1>(p.param) ? "_Registered" : "_Pageable") +
             (std::get<2>(p.param) == CompletionMode::kCallerDriven ? "_CallerDriven" : "_Poller");
    });

// --- Strict mode: barriers ------------------------------------------------------------------

// The first CB of an op that changes pipeline carries BARRIER, and no other CB does; the other
// modes never set it.
TEST(StrictBarrier, SetExactlyWherePipelineChanges) {
  for (Ordering mode : {Ordering::kStrict, Ordering::kOpOrdered, Ordering::kPipelineFifo}) {
    SCOPED_TRACE(name(mode));
    Rig rig = make_rig();
    Engine& e = *rig.engine;
    Stream s = e.create_stream(with(mode));
    DeviceBuffer a = e.allocate(9 * MiB), b = e.allocate(9 * MiB);
    HostBuffer h = e.allocate_host(9 * MiB);
    std::memset(h.data(), 1, 9 * MiB);
    // DMAI DMAI | DMAO(3 CBs) DMAO | DMAI(fill, 3 CBs) | DMAO | COMPUTE | DMAI | DMAI (d2d)
    s.copy_h2d(a, 0, h.data(), 4096);
    s.copy_h2d(a, 0, h.data(), 4096);
    s.copy_d2h(h.data(), a, 0, 9 * MiB);
    s.copy_d2h(h.data(), a, 0, 4096);
    s.fill(b, 0, 9 * MiB, 3);
    s.copy_d2h(h.data(), b, 0, 4096);
    s.compute(1us);
    s.copy_h2d(a, 0, h.data(), 4096);
    s.copy_d2d(b, 0, a, 0, 4096);
    SPYRE_ASSERT_OK(s.synchronize(kWait));
    const auto cbs = rig.spy->cbs();
    ASSERT_EQ(cbs.size(), 13u);
    const std::size_t want = mode == Ordering::kStrict ? 5 : 0;
    EXPECT_EQ(rig.spy->barrier_cbs(), want);
    if (mode == Ordering::kStrict) {
      // In hand-over order per pipeline: the barrier CBs are the d2h's first, the fill's first,
      // the second d2h, the compute and the third h2d.
      std::vector<bool> dmao, dmai, compute;
      for (const SeenCb& c : cbs) {
        (c.pipe == hw::Pipeline::kDmao ? dmao : c.pipe == hw::Pipeline::kDmai ? dmai : compute).push_back(c.barrier);
      }
      EXPECT_EQ(dmao, (std::vector<bool>{true, false, false, false, true}));
      EXPECT_EQ(dmai, (std::vector<bool>{false, false, true, false, false, true, false}));
      EXPECT_EQ(compute, (std::vector<bool>{true}));
    }
  }
}

// The contract's rule for the engine: a barrier CB's doorbell comes after the doorbells of every
// CB it must follow. Here every D2H CB precedes the DMAI barrier CB in program order.
void expect_barrier_after_dmao(const std::vector<SeenCb>& cbs) {
  std::uint64_t last_dmao = 0;
  std::size_t barriers = 0;
  for (const SeenCb& c : cbs) {
    if (c.pipe == hw::Pipeline::kDmao) last_dmao = std::max(last_dmao, c.doorbell);
  }
  for (const SeenCb& c : cbs) {
    if (c.pipe == hw::Pipeline::kDmai && c.barrier) {
      ++barriers;
      EXPECT_GT(c.doorbell, last_dmao) << "barrier CB tag " << c.tag << " shares or precedes a D2H doorbell";
    }
  }
  EXPECT_GE(barriers, 1u);
}

// A strict stream's H2D that overwrites what an earlier D2H (of many CBs) still has to read must
// wait for it, also when both are handed over in one doorbell round (a batch), where the DMAI
// doorbell is written before the DMAO one.
TEST(StrictBarrier, CrossPipelineOrderHeldWithinABatch) {
  constexpr std::uint64_t n = 32 * MiB, tail = 4096;
  Rig rig = make_rig();
  Engine& e = *rig.engine;
  Stream s = e.create_stream();
  DeviceBuffer buf = e.allocate(n);
  HostBuffer old_data = e.allocate_host(n), out = e.allocate_host(n), fresh = e.allocate_host(tail);
  fill_pattern(old_data.data(), n, 1);
  fill_pattern(fresh.data(), tail, 2);
  std::memset(out.data(), 0, n);
  SPYRE_ASSERT_OK(s.copy_h2d(buf, 0, old_data.data(), n).wait(kWait));

  rig.dev().pause();
  {
    auto batch = e.batch();
    s.copy_d2h(out.data(), buf, 0, n);                    // 8 CBs on DMAO
    s.copy_h2d(buf, n - tail, fresh.data(), tail);        // 1 CB on DMAI, BARRIER
  }
  rig.dev().resume();
  SPYRE_ASSERT_OK(s.synchronize(kWait));
  EXPECT_TRUE(bytes_equal(old_data.data(), out.data(), n)) << "the D2H saw the later H2D";
  expect_barrier_after_dmao(rig.spy->cbs());
}

// The same when the D2H did not fit the ring: its remaining CBs and the H2D behind it are handed
// over together as slots free up.
TEST(StrictBarrier, CrossPipelineOrderHeldWhenQueueFull) {
  constexpr std::uint64_t n = 32 * MiB, tail = 4096;
  EngineOptions o;
  o.ring_slots = {16, 16, 2};
  Rig rig = make_rig(o);
  Engine& e = *rig.engine;
  Stream s = e.create_stream();
  DeviceBuffer buf = e.allocate(n);
  HostBuffer old_data = e.allocate_host(n), out = e.allocate_host(n), fresh = e.allocate_host(tail);
  fill_pattern(old_data.data(), n, 3);
  fill_pattern(fresh.data(), tail, 4);
  std::memset(out.data(), 0, n);
  SPYRE_ASSERT_OK(s.copy_h2d(buf, 0, old_data.data(), n).wait(kWait));
  for (int round = 0; round < 3; ++round) {
    s.copy_d2h(out.data(), buf, 0, n);
    s.copy_h2d(buf, n - tail, fresh.data(), tail);
    SPYRE_ASSERT_OK(s.synchronize(kWait));
    EXPECT_TRUE(bytes_equal(old_data.data(), out.data(), n)) << "round " << round;
    expect_barrier_after_dmao(rig.spy->cbs());
    rig.spy->clear();
    std::memcpy(static_cast<std::uint8_t*>(old_data.data()) + n - tail, fresh.data(), tail);
    fill_pattern(fresh.data(), tail, 10 + round);
  }
  EXPECT_EQ(rig.spy->overruns(), 0u);
}

// A staged H2D's CBs reach the ring only after their copy into staging; a D2H behind it (another
// pipeline) must not be handed over before them.
TEST(StrictBarrier, D2hWaitsForStagedH2dStillBeingCopied) {
  constexpr std::uint64_t n = 32 * MiB, piece = 4 * MiB;
  Rig rig = make_rig();
  Engine& e = *rig.engine;
  Stream s = e.create_stream(), other = e.create_stream();
  DeviceBuffer buf = e.allocate(n), gate_buf = e.allocate(4096);
  std::vector<std::uint8_t> src = pattern(n, 5);
  HostBuffer out = e.allocate_host(piece);
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(round);
    std::memset(out.data(), 0, piece);
    fill_pattern(src.data(), n, 50 + round);
    // Hold the stream behind an event, so that the H2D's 8 staged CBs and the D2H are started by
    // the same pump once the event fires.
    Event ev = e.create_event();
    rig.dev().pause();
    other.fill(gate_buf, 0, 4096, 1);
    other.record(ev);
    s.wait(ev);
    s.copy_h2d(buf, 0, src.data(), n);            // staged: 8 CBs of 4 MiB
    s.copy_d2h(out.data(), buf, n - piece, piece);  // reads what the last staged CB writes
    rig.dev().resume();
    SPYRE_ASSERT_OK(s.synchronize(kWait));
    EXPECT_TRUE(bytes_equal(src.data() + n - piece, out.data(), piece));
  }
}

// --- Op-ordered and pipeline-FIFO modes -----------------------------------------------------

// With the device stopped, op-ordered hands over only the first op; strict and pipeline-FIFO hand
// over both (strict with a barrier on the second).
TEST(OrderingModes, WhatIsHandedOverWhileTheFirstOpRuns) {
  for (Ordering mode : {Ordering::kStrict, Ordering::kOpOrdered, Ordering::kPipelineFifo}) {
    SCOPED_TRACE(name(mode));
    Rig rig = make_rig();
    Engine& e = *rig.engine;
    Stream s = e.create_stream(with(mode));
    DeviceBuffer a = e.allocate(4096), b = e.allocate(4096);
    HostBuffer in = e.allocate_host(4096), out = e.allocate_host(4096);
    fill_pattern(in.data(), 4096, 77);
    SPYRE_ASSERT_OK(s.fill(b, 0, 4096, 0x55555555u).wait(kWait));
    rig.dev().pause();
    const auto before = e.stats().cbs_submitted;
    Op w = s.copy_h2d(a, 0, in.data(), 4096);
    Op r = s.copy_d2h(out.data(), b, 0, 4096);
    EXPECT_EQ(e.stats().cbs_submitted - before, mode == Ordering::kOpOrdered ? 1u : 2u);
    EXPECT_FALSE(r.done());
    rig.dev().resume();
    SPYRE_ASSERT_OK(w.wait(kWait));
    SPYRE_ASSERT_OK(r.wait(kWait));
    std::vector<std::uint8_t> want(4096);
    fill32_reference(want.data(), 4096, 0x55555555u);
    EXPECT_TRUE(bytes_equal(want.data(), out.data(), 4096));
    EXPECT_EQ(rig.spy->barrier_cbs(), mode == Ordering::kStrict ? 1u : 0u);
  }
}

// Pipeline-FIFO lets DMAI and DMAO overlap but still respects host-memory hazards through
// staging: a staged D2H into host memory, then an H2D out of it (read after write), and a staged
// H2D out of host memory, then a D2H into it (write after read).
TEST(OrderingModes, PipelineFifoRespectsStagedHostHazards) {
  constexpr std::uint64_t n = 12 * MiB + 640;
  Rig rig = make_rig();
  Engine& e = *rig.engine;
  Stream s = e.create_stream(with(Ordering::kPipelineFifo));
  DeviceBuffer a = e.allocate(n), b = e.allocate(n), c = e.allocate(n);
  std::vector<std::uint8_t> pa = pattern(n, 1), pb = pattern(n, 2);
  s.copy_h2d(a, 0, pa.data(), n);
  s.copy_h2d(b, 0, pb.data(), n);
  SPYRE_ASSERT_OK(s.synchronize(kWait));

  for (int round = 0; round < 4; ++round) {
    SCOPED_TRACE(round);
    std::vector<std::uint8_t> h(n, 0), check(n, 0);
    s.copy_d2h(h.data(), a, 0, n);  // RAW on h
    s.copy_h2d(c, 0, h.data(), n);
    SPYRE_ASSERT_OK(s.synchronize(kWait));  // DMAI against DMAO: ordered only by synchronisation
    s.copy_d2h(check.data(), c, 0, n);
    SPYRE_ASSERT_OK(s.synchronize(kWait));
    EXPECT_TRUE(bytes_equal(pa.data(), check.data(), n)) << "read after write";

    std::vector<std::uint8_t> g = pb;
    s.copy_h2d(c, 0, g.data(), n);  // WAR on g
    s.copy_d2h(g.data(), a, 0, n);
    SPYRE_ASSERT_OK(s.synchronize(kWait));
    s.copy_d2h(check.data(), c, 0, n);
    SPYRE_ASSERT_OK(s.synchronize(kWait));
    EXPECT_TRUE(bytes_equal(pb.data(), check.data(), n)) << "write after read";
    EXPECT_TRUE(bytes_equal(pa.data(), g.data(), n));
  }
}

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

// A callback that throws fails its op (kInvalidArgument) and the stream's error, not the engine.
TEST(HostCallbacks, ThrowingCallbackFailsItsOp) {
  Rig rig = make_rig();
  Engine& e = *rig.engine;
  Stream s = e.create_stream();
  Op bad = s.host_callback([] { throw std::runtime_error("boom"); });
  Op good = s.host_callback([] {});
  EXPECT_EQ(bad.wait(kWait).code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("boom"), std::string::npos);
  SPYRE_EXPECT_OK(good.wait(kWait));
  EXPECT_EQ(s.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(s.synchronize(kWait).code(), ErrorCode::kInvalidArgument);
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

}  // namespace
}  // namespace spyre_dma::test
