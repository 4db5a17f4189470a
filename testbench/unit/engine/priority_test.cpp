// Priority on the device (docs/engine.md, "Priority"): while a stream of higher priority is active,
// streams below it keep only a share of each DMA pipeline's ring, in CBs of at most half of it, so
// that a small copy of the higher stream waits behind that share and not behind everything they
// queued. Runs on every backend; the test of its time only where time is simulated.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <vector>

#include "engine_fixture.hpp"

namespace spyre_dma::test {
namespace {

constexpr std::uint64_t kShare = 64 * KiB;

EngineOptions share_options(std::chrono::nanoseconds hold) {
  EngineOptions o;
  o.priority_share_bytes = kShare;
  o.priority_hold = hold;
  return o;
}

// A copy on the high stream, waited for: from then on it counts as active for the hold.
void make_active(Engine& e, Stream& high) {
  DeviceBuffer d = e.allocate(4096);
  HostBuffer h = e.allocate_host(4096);
  SPYRE_ASSERT_OK(high.copy_h2d(d, 0, h.data(), 4096).wait(kWait));
}

std::uint64_t largest_cb(const std::vector<SeenCb>& cbs) {
  std::uint64_t most = 0;
  for (const SeenCb& c : cbs) most = std::max(most, c.bytes);
  return most;
}

TEST(RingShare, StreamsBelowAnActiveHigherOneKeepToTheShareAndMoveEveryByte) {
  Rig rig = make_rig(share_options(std::chrono::hours(1)));
  Engine& e = *rig.engine;
  Stream high = e.create_stream(with(Ordering::kStrict, 10));
  make_active(e, high);
  rig.spy->clear();

  constexpr std::uint64_t n = 1 * MiB;
  constexpr int kStreams = 4;
  std::vector<Stream> lows;
  std::vector<DeviceBuffer> bufs;
  std::vector<std::vector<std::uint8_t>> src, out;
  std::vector<HostBuffer> reg_in, reg_out;
  for (int i = 0; i < kStreams; ++i) {
    lows.push_back(e.create_stream(with(Ordering::kStrict, 0)));
    bufs.push_back(e.allocate(n));
    src.push_back(pattern(n, 100 + i));
    reg_in.push_back(e.allocate_host(n));
    reg_out.push_back(e.allocate_host(n));
    std::memcpy(reg_in.back().data(), src.back().data(), n);
  }
  for (int i = 0; i < kStreams; ++i) {
    lows[i].copy_h2d(bufs[i], 0, reg_in[i].data(), n);
    lows[i].copy_d2h(reg_out[i].data(), bufs[i], 0, n);
  }
  SPYRE_ASSERT_OK(e.synchronize(kWait));
  for (int i = 0; i < kStreams; ++i) EXPECT_TRUE(bytes_equal(src[i].data(), reg_out[i].data(), n)) << "stream " << i;

  const std::vector<SeenCb> cbs = rig.spy->cbs();
  EXPECT_EQ(cbs.size(), std::size_t{kStreams} * 2 * (n / (kShare / 2)));  // every CB half the share
  EXPECT_EQ(largest_cb(cbs), kShare / 2);
  EXPECT_GT(e.stats().priority_yields, 0u);  // four streams, one share: they waited for it
  EXPECT_EQ(rig.spy->overruns(), 0u);
}

// After a high stream's copy, a low stream copies 1 MiB in whole CBs: nothing holds it.
void expect_a_low_copy_in_whole_cbs(EngineOptions o) {
  Rig rig = make_rig(o);
  Engine& e = *rig.engine;
  Stream high = e.create_stream(with(Ordering::kStrict, 10));
  make_active(e, high);
  rig.spy->clear();
  Stream low = e.create_stream(with(Ordering::kStrict, 0));
  constexpr std::uint64_t n = 1 * MiB;
  DeviceBuffer buf = e.allocate(n);
  HostBuffer h = e.allocate_host(n);
  SPYRE_ASSERT_OK(low.copy_h2d(buf, 0, h.data(), n).wait(kWait));
  EXPECT_EQ(largest_cb(rig.spy->cbs()), std::min<std::uint64_t>(n, e.limits().max_cb_bytes));
  EXPECT_EQ(e.stats().priority_yields, 0u);
}

TEST(RingShare, AHigherStreamIdleLongerThanTheHoldHoldsNothing) {
  expect_a_low_copy_in_whole_cbs(share_options(std::chrono::nanoseconds(0)));  // no hold after its copy
}

TEST(RingShare, AShareOfZeroTurnsItOff) {
  EngineOptions o = share_options(std::chrono::hours(1));
  o.priority_share_bytes = 0;
  expect_a_low_copy_in_whole_cbs(o);
}

// The high stream's copy, submitted behind 64 MiB the low streams queued, completes while most of
// it is still to come: it waited behind the share, not behind the queue.
TEST(RingShare, ASmallCopyOvertakesQueuedBulkCopies) {
  Rig rig = make_rig(share_options(std::chrono::hours(1)));
  Engine& e = *rig.engine;
  Stream high = e.create_stream(with(Ordering::kStrict, 10));
  make_active(e, high);
  constexpr std::uint64_t piece = 1 * MiB;
  constexpr int kStreams = 4, kOps = 16;
  std::vector<Stream> lows;
  std::vector<DeviceBuffer> bufs;
  HostBuffer src = e.allocate_host(piece);
  std::atomic<int> low_done{0};
  for (int i = 0; i < kStreams; ++i) {
    lows.push_back(e.create_stream(with(Ordering::kStrict, 0)));
    bufs.push_back(e.allocate(piece));
  }
  for (int k = 0; k < kOps; ++k)
    for (int i = 0; i < kStreams; ++i) lows[i].copy_h2d(bufs[i], 0, src.data(), piece, [&](const Status&) { ++low_done; });
  DeviceBuffer d = e.allocate(4096);
  HostBuffer h = e.allocate_host(4096);
  int done_before = -1;
  Op small = high.copy_h2d(d, 0, h.data(), 4096, [&](const Status&) { done_before = low_done.load(); });
  SPYRE_ASSERT_OK(small.wait(kWait));
  SPYRE_ASSERT_OK(e.synchronize(kWait));
  ASSERT_TRUE(eventually([&] { return done_before >= 0; }));
  EXPECT_LT(done_before, kStreams * kOps / 2) << "low copies done before the small one";
}

// Where time is simulated (sim, rtl) it is exact: the small copy behind 8 streams of bulk copies
// takes at most twice its time alone (docs/engine.md, "Priority", has the figures).
TEST(RingShare, ASmallCopyBehindBulkTakesAtMostTwiceItsTimeAloneInSimulatedTime) {
  const std::string b = test_backend();
  if (b != "sim" && b != "rtl") GTEST_SKIP() << "time is simulated only on sim and rtl (here: " << b << ")";
  auto small_copy_ns = [](int bulk_streams) {
    Rig rig = make_rig(share_options(std::chrono::hours(1)));
    Engine& e = *rig.engine;
    Stream high = e.create_stream(with(Ordering::kStrict, 10));
    make_active(e, high);
    constexpr std::uint64_t n = 4 * MiB;
    HostBuffer src = e.allocate_host(n);
    std::vector<Stream> lows;
    std::vector<DeviceBuffer> bufs;
    for (int i = 0; i < bulk_streams; ++i) {
      lows.push_back(e.create_stream(with(Ordering::kStrict, 0)));
      bufs.push_back(e.allocate(n));
      lows.back().copy_h2d(bufs.back(), 0, src.data(), n);
    }
    DeviceBuffer d = e.allocate(4096);
    HostBuffer h = e.allocate_host(4096);
    Op small = high.copy_h2d(d, 0, h.data(), 4096);
    EXPECT_TRUE(small.wait(kWait).ok());
    EXPECT_TRUE(e.synchronize(kWait).ok());
    return small.host_end_ns() - small.host_start_ns();
  };
  const std::uint64_t alone = small_copy_ns(0), loaded = small_copy_ns(8);
  ASSERT_GT(alone, 0u);
  EXPECT_LE(loaded, 2 * alone) << "alone " << alone << " ns, behind 8 streams " << loaded << " ns";
}

// Pooled streams, as a runtime takes them: in turn from a pool per class, the high ones above.
TEST(PooledStreams, AreHandedOutInTurnPerClassAndTheHighOnesRankAbove) {
  EngineOptions o;
  o.pooled_streams = 3;
  Rig rig = make_rig(o);
  Engine& e = *rig.engine;
  std::vector<Stream> low, high;
  for (int i = 0; i < 4; ++i) low.push_back(e.pooled_stream());
  for (int i = 0; i < 4; ++i) high.push_back(e.pooled_stream(true));
  EXPECT_EQ(low[0].id(), low[3].id());  // three per class, then round again
  EXPECT_NE(low[0].id(), low[1].id());
  EXPECT_NE(low[1].id(), low[2].id());
  EXPECT_EQ(high[0].id(), high[3].id());
  EXPECT_NE(high[0].id(), low[0].id());
  EXPECT_EQ(low[2].options().priority, 0);
  EXPECT_EQ(high[2].options().priority, Engine::kPooledHighPriority);
  EXPECT_EQ(high[1].options().name, "pool-high-1");
  DeviceBuffer buf = e.allocate(4096);
  SPYRE_ASSERT_OK(high[1].fill(buf, 0, 4096, 7).wait(kWait));
}

TEST(RingShare, OptionsOutOfRangeAreRefusedByName) {
  for (std::uint64_t bad : {std::uint64_t{128}, std::uint64_t{1000}}) {
    EngineOptions o;
    o.priority_share_bytes = bad;
    try {
      make_rig(o);
      ADD_FAILURE() << "priority_share_bytes = " << bad << " accepted";
    } catch (const InvalidArgument& ex) {
      EXPECT_NE(std::string(ex.what()).find("priority_share_bytes = " + std::to_string(bad)), std::string::npos)
          << ex.what();
    }
  }
  EngineOptions o;
  o.priority_hold = std::chrono::nanoseconds(-1);
  EXPECT_THROW(make_rig(o), InvalidArgument);
  EngineOptions no_pool;
  no_pool.pooled_streams = 0;
  EXPECT_THROW(make_rig(no_pool), InvalidArgument);
}

}  // namespace
}  // namespace spyre_dma::test
