// Replay on refdev and on sim: data reproduced and checked, dependencies kept, determinism on
// sim, captured start times honoured, and the model's staging cost.
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "spyre_dma/engine.hpp"
#include "spyre_dma/refdev/ref_device.hpp"
#include "spyre_dma/traces/replay.hpp"

#if defined(SPYRE_DMA_HAVE_MODEL)
#include "spyre_dma/model/sim_device.hpp"
#endif

namespace st = spyre_dma::traces;
using namespace std::chrono_literals;

namespace {

st::Op make(std::uint64_t id, std::uint32_t stream, st::OpKind kind, std::uint64_t bytes = 0) {
  st::Op op;
  op.id = id;
  op.stream = stream;
  op.kind = kind;
  op.bytes = bytes;
  return op;
}

// Stream 0 writes two ranges, a fill and a device copy; stream 1 reads them back after
// depending on the writers; a long compute on stream 0 delays the writer of range B.
st::Trace data_trace() {
  st::Trace t;
  t.allocations.push_back({1, 1 << 20, 0});
  t.allocations.push_back({2, 1 << 20, 64 << 10});
  auto h2d = make(1, 0, st::OpKind::kH2D, 256 << 10);
  h2d.host = st::HostMemory::kPageable;
  h2d.dst_alloc = 1;
  t.ops.push_back(h2d);
  auto fill = make(2, 0, st::OpKind::kFill, 64 << 10);
  fill.dst_alloc = 1;
  fill.dst_offset = 512 << 10;
  fill.pattern = 0xa5a5f00d;
  t.ops.push_back(fill);
  auto compute = make(3, 0, st::OpKind::kCompute);
  compute.compute_ns = 200000;
  t.ops.push_back(compute);
  auto d2d = make(4, 0, st::OpKind::kD2D, 128 << 10);
  d2d.src_alloc = 1;
  d2d.src_offset = 128 << 10;
  d2d.dst_alloc = 2;
  d2d.dst_offset = 4096;
  t.ops.push_back(d2d);
  auto reg = make(5, 0, st::OpKind::kH2D, 64 << 10);
  reg.host = st::HostMemory::kRegistered;
  reg.dst_alloc = 2;
  reg.dst_offset = 512 << 10;
  t.ops.push_back(reg);
  auto d2h1 = make(6, 1, st::OpKind::kD2H, 576 << 10);
  d2h1.host = st::HostMemory::kRegistered;
  d2h1.src_alloc = 1;
  d2h1.deps = {2};
  t.ops.push_back(d2h1);
  auto d2h2 = make(7, 1, st::OpKind::kD2H, 576 << 10);
  d2h2.host = st::HostMemory::kPageable;
  d2h2.src_alloc = 2;
  d2h2.deps = {5};
  t.ops.push_back(d2h2);
  return t;
}

const st::OpTiming& timing(const st::ReplayResult& r, std::uint64_t id) {
  for (const auto& t : r.ops) {
    if (t.id == id) return t;
  }
  throw std::out_of_range("no op");
}

}  // namespace

TEST(Replay, RefdevReproducesDataAndKeepsDeps) {
  auto dev = std::make_shared<spyre_dma::refdev::RefDevice>();
  spyre_dma::refdev::SparseMemory* mem = &dev->memory();
  const st::ReplayResult r = st::replay(data_trace(), dev, mem, {});
  EXPECT_TRUE(r.data_ok) << r.data_error;
  ASSERT_EQ(r.ops.size(), 7u);
  EXPECT_GT(r.total_ns, 0);
  EXPECT_GT(timing(r, 1).duration_ns, 0);
  // Op 7 depends on op 5, which follows the 200 us compute on stream 0.
  EXPECT_GE(timing(r, 7).start_ns, timing(r, 5).start_ns + timing(r, 5).duration_ns);
  EXPECT_GE(timing(r, 6).start_ns, timing(r, 2).start_ns + timing(r, 2).duration_ns);
}

#if defined(SPYRE_DMA_HAVE_MODEL)

TEST(Replay, SimReproducesDataAndIsDeterministic) {
  spyre_dma::model::SimConfig config;
  const st::ReplayResult a = st::replay_on_sim(data_trace(), config, {});
  EXPECT_TRUE(a.data_ok) << a.data_error;
  EXPECT_GE(timing(a, 7).start_ns, timing(a, 5).start_ns + timing(a, 5).duration_ns);
  EXPECT_GE(timing(a, 4).start_ns, timing(a, 3).start_ns + timing(a, 3).duration_ns);
  const st::ReplayResult b = st::replay_on_sim(data_trace(), config, {});
  ASSERT_EQ(a.ops.size(), b.ops.size());
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    EXPECT_EQ(a.ops[i].start_ns, b.ops[i].start_ns) << a.ops[i].id;
    EXPECT_EQ(a.ops[i].duration_ns, b.ops[i].duration_ns) << a.ops[i].id;
  }
  EXPECT_EQ(a.total_ns, b.total_ns);
}

TEST(Replay, HonourStartTimesDelaysOps) {
  st::Trace t;
  t.allocations.push_back({1, 1 << 20, 0});
  for (std::uint64_t i = 1; i <= 3; ++i) {
    auto op = make(i, 0, st::OpKind::kH2D, 4096);
    op.host = st::HostMemory::kRegistered;
    op.dst_alloc = 1;
    op.dst_offset = (i - 1) * 4096;
    op.start_ns = 1000.0 + static_cast<double>(i - 1) * 50000.0;  // 50 us apart
    t.ops.push_back(op);
  }
  spyre_dma::model::SimConfig config;
  const st::ReplayResult fast = st::replay_on_sim(t, config, {});
  st::ReplayOptions honour;
  honour.honour_start_times = true;
  const st::ReplayResult held = st::replay_on_sim(t, config, honour);
  EXPECT_TRUE(held.data_ok) << held.data_error;
  EXPECT_LT(timing(fast, 3).start_ns, 50000.0);
  EXPECT_GE(timing(held, 2).start_ns, 49000.0);
  EXPECT_GE(timing(held, 3).start_ns, 99000.0);
  EXPECT_LT(timing(held, 3).start_ns, 101000.0 + 5000.0);
}

TEST(Replay, StagingCostSlowsPageableCopies) {
  const std::uint64_t bytes = 16ull << 20;
  st::Trace t;
  t.allocations.push_back({1, bytes, 0});
  auto op = make(1, 0, st::OpKind::kH2D, bytes);
  op.host = st::HostMemory::kPageable;
  op.dst_alloc = 1;
  t.ops.push_back(op);
  spyre_dma::model::SimConfig config;
  config.fidelity = spyre_dma::model::Fidelity::kBurst;
  const st::ReplayResult free_copy = st::replay_on_sim(t, config, {});
  config.host_cost.staging_gbps = 10.0;
  const st::ReplayResult charged = st::replay_on_sim(t, config, {});
  ASSERT_TRUE(free_copy.data_ok && charged.data_ok);
  // 16 MiB at 10 GB/s is 1.68 ms of host copying; the device overlaps what it can of the
  // pipelined 4 MiB pieces but waits at least for the first and then for the slower host.
  const double extra = charged.ops[0].duration_ns + charged.ops[0].start_ns -
                       (free_copy.ops[0].duration_ns + free_copy.ops[0].start_ns);
  const double copy_ns = static_cast<double>(bytes) / 10.0;
  EXPECT_GT(charged.total_ns, free_copy.total_ns);
  EXPECT_GT(extra + (charged.total_ns - free_copy.total_ns), 0);
  EXPECT_GT(charged.total_ns, copy_ns * 0.7) << "free " << free_copy.total_ns;
  EXPECT_LT(charged.total_ns, copy_ns * 1.3 + free_copy.total_ns) << "free " << free_copy.total_ns;
}

#endif
