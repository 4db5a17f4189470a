// Ordering within a stream: FIFO in each ordering mode, completion (callback) order, the strict
// mode's barriers (counted on the wire by SpyDevice, and proved by data where pipelines change),
// host-memory hazards through staging. Cross-stream ordering is in cross_stream_test.cpp.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "engine_fixture.hpp"

namespace spyre_dma::test {
namespace {

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
// (the DMAO RB of an op may be drained after the DMAI RB of the op behind it). Pipeline-FIFO
// promises that per pipeline only, and host callbacks after everything before them.
TEST_P(Fifo, CallbacksFireInSubmissionOrder) {
  const bool per_pipeline = std::get<0>(GetParam()) == Ordering::kPipelineFifo;
  constexpr std::size_t kOps = 240, kBytes = 4096 + 128;
  DeviceBuffer a = e_.allocate(kBytes), b = e_.allocate(kBytes), c = e_.allocate(kBytes);
  Host in = host(kBytes), out = host(kBytes);
  fill_pattern(in.p, kBytes, 9);
  // Pipeline-FIFO overlaps the D2Hs with the DMAI ops: let them read memory nothing writes.
  SPYRE_ASSERT_OK(s_.copy_h2d(c, 0, in.p, kBytes).wait(kWait));
  const DeviceBuffer& read_from = per_pipeline ? c : a;
  CompletionLog log(kOps);
  std::vector<Op> ops;
  for (std::size_t i = 0; i < kOps; ++i) {
    switch (i % 6) {
      case 0: ops.push_back(s_.copy_h2d(a, 0, in.p, kBytes, log.callback(i))); break;
      case 1: ops.push_back(s_.copy_d2h(out.p, read_from, 0, kBytes, log.callback(i))); break;
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
  if (!per_pipeline) {
    for (std::size_t i = 0; i < kOps; ++i) ASSERT_EQ(order[i], i) << "completion " << i;
  } else {
    // Op i runs on: 0, 2, 3 DMAI; 1 DMAO; 4 COMPUTE; 5 a host callback.
    auto group = [](std::size_t i) { return i % 6 == 2 || i % 6 == 3 ? 0 : i % 6; };
    std::vector<std::size_t> position(kOps);
    for (std::size_t k = 0; k < kOps; ++k) position[order[k]] = k;
    for (std::size_t i = 0; i < kOps; ++i) {
      for (std::size_t j = 0; j < i; ++j) {
        if (group(i) == 5 || group(j) == group(i)) {
          ASSERT_LT(position[j], position[i]) << "op " << j << " completed after op " << i;
        }
      }
    }
  }
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
    // Disjoint memory per pipeline, so that the modes that overlap DMAI with DMAO race on nothing.
    DeviceBuffer a = e.allocate(4096), b = e.allocate(9 * MiB), c = e.allocate(9 * MiB);
    HostBuffer in = e.allocate_host(4096), out = e.allocate_host(9 * MiB);
    std::memset(in.data(), 1, 4096);
    // DMAI DMAI | DMAO(3 CBs) DMAO | DMAI(fill, 3 CBs) | DMAO | COMPUTE | DMAI | DMAI (d2d)
    s.copy_h2d(a, 0, in.data(), 4096);
    s.copy_h2d(a, 0, in.data(), 4096);
    s.copy_d2h(out.data(), b, 0, 9 * MiB);
    s.copy_d2h(out.data(), b, 0, 4096);
    s.fill(c, 0, 9 * MiB, 3);
    s.copy_d2h(out.data(), b, 0, 4096);
    s.compute(1us);
    s.copy_h2d(a, 0, in.data(), 4096);
    s.copy_d2d(c, 0, a, 0, 4096);
    SPYRE_ASSERT_OK(s.synchronize(kWait));
    const auto cbs = rig.spy->cbs();
    ASSERT_EQ(cbs.size(), 13u);
    const std::size_t want = mode == Ordering::kStrict ? 5 : 0;
    EXPECT_EQ(rig.spy->barrier_cbs(), want);
    if (mode == Ordering::kStrict) {
      // In hand-over order per pipeline: the barrier CBs are the d2h's first, the fill's first,
      // the second d2h, the compute and the third h2d.
      std::vector<bool> dmao, dmai, compute;
      for (const SeenCb& cb : cbs) {
        (cb.pipe == hw::Pipeline::kDmao ? dmao : cb.pipe == hw::Pipeline::kDmai ? dmai : compute).push_back(cb.barrier);
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

}  // namespace
}  // namespace spyre_dma::test
