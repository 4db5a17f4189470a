// Calibration against real captures: fit on part of a capture, predict the rest.
#include <gtest/gtest.h>

#include <string>

#include "spyre_dma/model/config_loader.hpp"
#include "spyre_dma/traces/bandwidth_test.hpp"
#include "spyre_dma/traces/calibrate.hpp"
#include "spyre_dma/traces/kineto.hpp"

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

}  // namespace
