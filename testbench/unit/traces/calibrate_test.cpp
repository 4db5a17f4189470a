// Calibration against real captures: fit on part of a capture, predict the rest.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "spyre_dma/model/config_loader.hpp"
#include "spyre_dma/traces/bandwidth_test.hpp"
#include "spyre_dma/traces/calibrate.hpp"
#include "spyre_dma/traces/kineto.hpp"
#include "spyre_dma/traces/replay.hpp"
#include "spyre_dma/model/backend.hpp"

namespace {

using namespace spyre_dma::traces;

std::string data_dir() {
  std::string f = __FILE__;
  return f.substr(0, f.rfind("testbench/")) + "traces/data/";
}

// Median |relative error| of the held-out copies of at least `min_bytes`.
double holdout_median(const CalibrationResult& r, std::uint64_t min_bytes) {
  std::vector<double> e;
  for (const auto& o : r.holdout.ops)
    if (!o.bound && o.bytes >= min_bytes) e.push_back(std::fabs(o.rel_error));
  std::sort(e.begin(), e.end());
  if (e.empty()) return 1e9;
  return e.size() % 2 ? e[e.size() / 2] : 0.5 * (e[e.size() / 2 - 1] + e[e.size() / 2]);
}

TEST(Selection, ParsesSizesAndHalves) {
  EXPECT_EQ(parse_bytes("4MiB"), 4u << 20);
  EXPECT_EQ(parse_bytes("1MB"), 1000000u);
  EXPECT_EQ(parse_selection("below:4MiB").hi, 4u << 20);
  EXPECT_EQ(parse_selection("atleast:1MB").lo, 1000000u);
  EXPECT_EQ(parse_selection("odd").half, 1);
  EXPECT_THROW(parse_selection("above:1"), std::invalid_argument);
  EXPECT_THROW(parse_bytes("4 parsecs"), std::invalid_argument);
  Trace t;
  for (std::uint64_t i = 0; i < 4; ++i) {
    Op op;
    op.id = i + 1;
    op.bytes = 1000 * (4 - i);  // sizes 4000, 3000, 2000, 1000: ranks 3, 2, 1, 0
    t.ops.push_back(op);
  }
  const auto even = select_ops(t, parse_selection("even"));
  EXPECT_EQ(even, (std::vector<bool>{false, true, false, true}));
}

// The fit replays two copies of each even size (fit_copies_per_size), 24 times at burst
// fidelity: about 35 s on 2 cores. docs/traces.md has the figures.
TEST(Calibrate, V100ShmooHalfPredictsTheOtherHalfWithinFivePercentFrom1MB) {
  const Trace t = import_bandwidth_test(data_dir() + "cuda_memory_h2d_bw.log", {"Tesla V100-PCIE-32GB", "PCIe Gen3 x16"});
  CalibrateOptions o;
  o.base = base_for_header(t.header, nullptr);
  EXPECT_EQ(o.base.preset, "gen3x16");
  o.fit = parse_selection("even");
  o.max_replays = 24;
  const CalibrationResult r = calibrate(t, o);
  const double e = holdout_median(r, 1000000);
  RecordProperty("holdout_median_from_1MB", std::to_string(e));
  EXPECT_LT(e, 0.05) << r.summary();
  // The preset file loads to the fitted configuration.
  EXPECT_TRUE(spyre_dma::model::config_from_json(r.preset_json(), "fitted") == r.config);
}

// The staging rate and the staging piece (the replay's EngineOptions::staging_buffer_bytes) are
// fitted on the copies below 4 MiB only; the three copies of 15.6-144 MiB are predicted. The
// trace is small: the fit converges in about 110 replays, a few seconds.
TEST(Calibrate, AlexnetBelow4MiBPredictsLargerCopiesWithinTenPercent) {
  ImportReport report;
  Trace t = import_kineto(data_dir() + "benchmark_result_2869224_1695835535_trace.json.gz", report);
  t.header.link = "PCIe Gen4 x16";
  CalibrateOptions o;
  o.base = base_for_header(t.header, nullptr);
  o.fit = parse_selection("below:4MiB");
  o.max_replays = 120;
  const CalibrationResult r = calibrate(t, o);
  // The piece is fitted, not the engine's 4 MiB default, and the holdout is all three large copies.
  EXPECT_GT(r.staging_buffer_bytes, 0u);
  EXPECT_LT(r.staging_buffer_bytes, 4u << 20);
  std::size_t large = 0;
  for (const auto& op : r.holdout.ops) large += op.bytes >= (4u << 20) ? 1 : 0;
  EXPECT_EQ(large, 3u);
  for (const auto& op : r.fit.ops) EXPECT_LT(op.bytes, 4u << 20);
  const double e = holdout_median(r, 4u << 20);
  RecordProperty("holdout_median_from_4MiB", std::to_string(e));
  EXPECT_LT(e, 0.10) << r.summary();
}

// A profile of a busy node in miniature: registered H2D copies at the few GB/s a device gets of
// a shared host, device copies and a fill at HBM speed, on streams of their own. Each path's
// parameter is judged by its own copies: the device copies do not pull the host copies' bandwidth
// up (they did when one bandwidth was judged by every copy of 1 MiB and more).
TEST(Calibrate, EachPathIsFittedOnItsOwnCopies) {
  Trace t;
  t.header.resolution_ns = 1000;
  std::uint64_t id = 0;
  double at = 0;
  auto add = [&](OpKind kind, std::uint64_t bytes, double gbps, std::uint32_t stream) {
    Op op;
    op.id = ++id;
    op.kind = kind;
    op.stream = stream;
    op.bytes = bytes;
    const std::uint64_t alloc = id;
    t.allocations.push_back({alloc, bytes, 0});
    op.dst_alloc = alloc;
    if (kind == OpKind::kH2D) op.host = HostMemory::kRegistered;
    if (kind == OpKind::kD2D) {
      t.allocations.push_back({1000 + id, bytes, 0});
      op.src_alloc = 1000 + id;
    }
    op.start_ns = at;
    op.duration_ns = static_cast<double>(bytes) / gbps;
    at += *op.duration_ns + 10000;
    t.ops.push_back(op);
  };
  for (std::uint64_t mib : {1, 2, 4, 8, 16}) add(OpKind::kH2D, mib << 20, 6.0, 0);
  for (std::uint64_t mib : {16, 64}) add(OpKind::kD2D, mib << 20, 700.0, 1);
  add(OpKind::kFill, 32u << 20, 1400.0, 1);
  CalibrateOptions o;
  o.base = spyre_dma::model::preset("gen4x16");
  o.max_replays = 40;
  const CalibrationResult r = calibrate(t, o);
  double engine = 0, dram = 0;
  for (const auto& p : r.parameters) {
    if (p.key == "device.dma_engine_gbps") engine = p.value;
    if (p.key == "device.dram_gbps") dram = p.value;
  }
  EXPECT_NEAR(engine, 6.0, 1.0) << r.summary();
  EXPECT_GT(dram, 1000.0) << r.summary();
  for (const auto& op : r.fit.ops) {
    if (op.bound) continue;
    EXPECT_LT(std::fabs(op.rel_error), op.direction == "h2d registered" ? 0.05 : 0.30)
        << op.direction << " " << op.bytes << "\n" << r.summary();
  }
}


// Two ranks of one node whose devices sit behind one switch. Rank 0 copies 16 MiB while rank 1
// does (the two share the switch's uplink), then, after a long compute, again alone. Their
// captured durations are those of that server with DMA engines of 40 GB/s. Fitted together the
// engine's rate comes back and every copy fits; rank 0 fitted alone cannot fit both its copies
// (one engine rate for a shared and an unshared copy).
TEST(Calibrate, RanksFittedTogetherSeeTheSharedUplink) {
  constexpr std::uint64_t kBytes = 16u << 20;
  auto copy = [](std::uint64_t id) {
    Op op;
    op.id = id;
    op.kind = OpKind::kH2D;
    op.host = HostMemory::kRegistered;
    op.bytes = kBytes;
    op.dst_alloc = 1;
    return op;
  };
  Trace rank0, rank1;
  for (Trace* t : {&rank0, &rank1}) {
    t->header.resolution_ns = 1000;
    t->allocations.push_back({1, kBytes, 0});
  }
  rank0.header.source = "rank 0";
  rank1.header.source = "rank 1";
  rank0.ops.push_back(copy(1));
  Op wait;
  wait.id = 2;
  wait.kind = OpKind::kCompute;
  wait.compute_ns = 2'000'000;  // rank 1's copy is long done by then
  rank0.ops.push_back(wait);
  rank0.ops.push_back(copy(3));
  rank1.ops.push_back(copy(1));

  spyre_dma::model::SimConfig truth;
  truth.fidelity = spyre_dma::model::Fidelity::kBurst;
  truth.topology.devices = 2;
  truth.topology.devices_per_switch = 2;
  truth.host.memory_gbps = 1000.0;  // out of the way: the uplink is what they share
  truth.device.dma_engine_gbps = 40.0;
  {
    // The captured durations: what compare() takes from the truth's replay for each copy.
    for (Trace* t : {&rank0, &rank1})
      for (Op& op : t->ops)
        if (op.kind == OpKind::kH2D) op.duration_ns = 1e6;  // a placeholder above the resolution
    const auto replayed = replay_together({&rank0, &rank1}, spyre_dma::model::open_server(truth), {});
    Trace* ranks[] = {&rank0, &rank1};
    for (std::size_t k = 0; k < 2; ++k) {
      ASSERT_TRUE(replayed[k].data_ok) << replayed[k].data_error;
      for (const OpComparison& o : compare(*ranks[k], replayed[k]).ops)
        for (Op& op : ranks[k]->ops)
          if (op.id == o.id) op.duration_ns = o.simulated_ns;
    }
  }
  ASSERT_GT(*rank0.ops[0].duration_ns, 1.2 * *rank0.ops[2].duration_ns) << "the shared copy must be slower";

  CalibrateOptions o;
  o.base = truth;
  o.base.device.dma_engine_gbps = 15.0;
  o.parameters = {"device.dma_engine_gbps"};
  o.max_replays = 40;
  const CalibrationResult together = calibrate_together({&rank0, &rank1}, o);
  ASSERT_EQ(together.parameters.size(), 1u);
  EXPECT_NEAR(together.parameters[0].value, 40.0, 2.0) << together.summary();
  EXPECT_LT(together.rms_log_error, 0.02) << together.summary();
  EXPECT_EQ(together.fit.ops.size(), 3u) << together.summary();

  CalibrateOptions alone_options = o;
  alone_options.base.topology.devices = 1;
  alone_options.base.topology.devices_per_switch = 0;
  const CalibrationResult alone = calibrate(rank0, alone_options);
  EXPECT_GT(alone.rms_log_error, 0.1) << alone.summary();
  std::printf("[ fit ] together: engine %.2f GB/s, rms log error %.4f; rank 0 alone: engine %.2f GB/s, rms log "
              "error %.4f\n",
              together.parameters[0].value, together.rms_log_error, alone.parameters[0].value, alone.rms_log_error);

  // Fitted on rank 0 alone, with rank 1 replayed alongside, rank 1's copy is predicted. (Not the
  // other way round: rank 1's one copy is bound by the shared uplink, so any engine rate above
  // the uplink's share fits it.)
  CalibrateOptions rank0_only = o;
  rank0_only.fit_ranks = {0};
  const CalibrationResult predicted = calibrate_together({&rank0, &rank1}, rank0_only);
  EXPECT_NEAR(predicted.parameters[0].value, 40.0, 2.0) << predicted.summary();
  EXPECT_EQ(predicted.fit.ops.size(), 2u) << predicted.summary();
  ASSERT_EQ(predicted.holdout.ops.size(), 1u) << predicted.summary();
  EXPECT_LT(std::fabs(predicted.holdout.ops[0].rel_error), 0.02) << predicted.summary();

  CalibrateOptions no_such_rank = o;
  no_such_rank.fit_ranks = {2};
  EXPECT_THROW(calibrate_together({&rank0, &rank1}, no_such_rank), std::invalid_argument);
  EXPECT_THROW(calibrate(rank0, rank0_only), std::invalid_argument);  // one trace: nothing to choose
  // More traces than a server holds devices: the loader names topology.devices.
  const std::vector<const Trace*> seventeen(17, &rank1);
  EXPECT_THROW(calibrate_together(seventeen, o), spyre_dma::model::ConfigError);
  EXPECT_THROW(calibrate_together({}, o), std::invalid_argument);
}

}  // namespace
