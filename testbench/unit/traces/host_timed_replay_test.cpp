// A replay of a capture that recorded host times (traces/README.md, "Replay"): the caller's waits
// are kept (an op is called only once the ops its caller had seen done are done), an op held to
// its captured call is held on the host's clock (which runs ahead of the device's while the host
// copies through staging), and a sample of a size's copies keeps a transfer split over streams
// whole.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <vector>

#include "sim_capture.hpp"
#include "spyre_dma/traces/calibrate.hpp"
#include "spyre_dma/traces/compare.hpp"
#include "spyre_dma/traces/replay.hpp"

namespace st = spyre_dma::traces;
using namespace std::chrono_literals;

namespace {

constexpr std::uint64_t kSplit = 4;            // streams a transfer is split over
constexpr std::uint64_t kBytes = 256ull << 10;  // one transfer

spyre_dma::model::SimConfig config(const char* preset = "spyre-gen5x16") { return spyre_dma::test::burst_config(preset); }

// What a bandwidth sweep does, three rounds of: a pageable D2H split over four streams, all
// waited for; a pageable D2H on one stream, waited for; a registered H2D, waited for. A pageable
// D2H's copy-out keeps the host busy after the device is done, which is where a replay that held
// ops on the device's clock fell behind the capture.
st::Trace capture() {
  spyre_dma::test::RecordedEngine rec = spyre_dma::test::recorded_engine(config());
  spyre_dma::Engine* engine = rec.engine.get();
  std::vector<spyre_dma::Stream> streams;
  for (std::uint64_t i = 0; i < kSplit; ++i) streams.push_back(engine->create_stream());
  spyre_dma::DeviceBuffer buf = engine->allocate(kBytes);
  spyre_dma::HostBuffer registered = engine->allocate_host(kBytes);
  std::vector<std::uint8_t> heap(kBytes, 0x5a);
  const std::uint64_t part = kBytes / kSplit;
  for (int round = 0; round < 3; ++round) {
    for (std::uint64_t i = 0; i < kSplit; ++i) streams[i].copy_d2h(heap.data() + i * part, buf, i * part, part);
    EXPECT_TRUE(engine->synchronize(60s).ok());
    EXPECT_TRUE(streams[0].copy_d2h(heap.data(), buf, 0, kBytes).wait(60s).ok());
    EXPECT_TRUE(streams[0].copy_h2d(buf, 0, registered.data(), kBytes).wait(60s).ok());
  }
  return rec.recorder->trace();
}

double max_abs_error(const st::Comparison& c) {
  double worst = 0;
  for (const auto& o : c.ops) worst = std::max(worst, std::abs(o.rel_error));
  return worst;
}

}  // namespace

TEST(HostTimedReplay, HeldToItsCallsTheReplayOnTheSameModelGivesBothTimesBack) {
  const st::Trace t = capture();
  ASSERT_EQ(t.ops.size(), 3 * (kSplit + 2));
  st::ReplayOptions ro;
  ro.honour_start_times = true;
  const st::ReplayResult r = st::replay_on_sim(t, config(), ro);
  ASSERT_TRUE(r.data_ok) << r.data_error;
  const st::Comparison device = st::compare(t, r);
  const st::Comparison host = st::compare(t, r, st::Timing::kHost);
  ASSERT_EQ(device.ops.size(), t.ops.size());
  ASSERT_EQ(host.ops.size(), t.ops.size());
  // The same model, workload and calls: every op to within the replay's own issue cost.
  EXPECT_LT(max_abs_error(device), 0.01) << device.table();
  EXPECT_LT(max_abs_error(host), 0.01) << host.table();
}

TEST(HostTimedReplay, OnASlowerModelTheCallerWaitsAreKept) {
  const st::Trace t = capture();
  // A narrower link and slower staging: every copy takes longer than it did in the capture. The
  // replay (as fast as it may: no start times held) must still call each op only after the ops
  // its caller had seen done, so copies the caller serialised do not overlap.
  auto slow = config("gen4x16");
  slow.host_cost.staging_gbps = 2;
  const st::ReplayResult r = st::replay_on_sim(t, slow, {});
  ASSERT_TRUE(r.data_ok) << r.data_error;
  ASSERT_EQ(r.ops.size(), t.ops.size());
  std::size_t checked = 0;
  for (std::size_t j = 0; j < t.ops.size(); ++j) {
    for (std::size_t i = 0; i < j; ++i) {
      const st::Op &a = t.ops[i], &b = t.ops[j];
      if (*b.host_start_ns < *a.host_start_ns + *a.host_duration_ns) continue;  // called while a was outstanding
      ++checked;
      EXPECT_GE(r.ops[j].host_start_ns, r.ops[i].host_start_ns + r.ops[i].host_duration_ns)
          << "op " << b.id << " was called after its caller saw op " << a.id << " done";
    }
  }
  EXPECT_GT(checked, t.ops.size());
  // And the ops of one split transfer were called together: each before the first was done.
  EXPECT_LT(r.ops[1].host_start_ns, r.ops[0].host_start_ns + r.ops[0].host_duration_ns);
}

TEST(HostTimedReplay, ASampleOfEachSizeKeepsATransferSplitOverStreamsWhole) {
  const st::Trace t = capture();
  const std::vector<bool> all(t.ops.size(), true);
  // The first of each size: the first split transfer (its four parts are one size, called
  // together), the first whole pageable D2H and the first registered H2D.
  const std::vector<bool> one = st::first_copies_per_size(t, all, 1);
  std::vector<std::uint64_t> kept;
  for (std::size_t i = 0; i < t.ops.size(); ++i)
    if (one[i]) kept.push_back(t.ops[i].id);
  ASSERT_EQ(kept.size(), kSplit + 2);
  for (std::size_t i = 0; i < kept.size(); ++i) EXPECT_EQ(kept[i], t.ops[i].id);
  // Without host times nothing says which copies were called together: each counts alone.
  st::Trace bare = t;
  for (st::Op& op : bare.ops) op.host_start_ns.reset();
  const std::vector<bool> alone = st::first_copies_per_size(bare, all, 1);
  EXPECT_EQ(std::count(alone.begin(), alone.end(), true), 3);
  // 0 keeps the mask as it is, and a copy the mask leaves out stays out.
  EXPECT_EQ(st::first_copies_per_size(t, all, 0), all);
  std::vector<bool> some = all;
  some[0] = false;
  EXPECT_FALSE(st::first_copies_per_size(t, some, 1)[0]);
}
