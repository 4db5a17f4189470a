// A calibration that stays physical (docs/traces.md, "Calibrate"): every fitted parameter inside
// its physical bounds, the parameters the fit copies cannot see left at their defaults, and
// uncertainties and prediction intervals that hold what they claim. The captures are made here:
// a "truth" configuration's replay of a trace, its durations scattered by a known noise.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "spyre_dma/model/config_loader.hpp"
#include "spyre_dma/traces/calibrate.hpp"
#include "spyre_dma/traces/compare.hpp"
#include "spyre_dma/traces/replay.hpp"

namespace {

using namespace spyre_dma::traces;
namespace model = spyre_dma::model;

// Registered H2D copies back to back on one stream, `copies` of each size, their captured
// durations the truth's (the time each adds to its stream), scattered by exp(N(0, noise)).
Trace captured(const model::SimConfig& truth, const std::vector<std::uint64_t>& sizes, int copies, double noise) {
  Trace t;
  t.header.source = "synthetic";
  std::uint64_t id = 0;
  for (const std::uint64_t bytes : sizes) {
    t.allocations.push_back({t.allocations.size() + 1, bytes, 0});
    for (int c = 0; c < copies; ++c) {
      Op op;
      op.id = ++id;
      op.kind = OpKind::kH2D;
      op.host = HostMemory::kRegistered;
      op.bytes = bytes;
      op.dst_alloc = t.allocations.size();
      op.duration_ns = 1;  // replaced below
      t.ops.push_back(op);
    }
  }
  const ReplayResult r = replay_on_sim(t, truth, {});
  EXPECT_TRUE(r.data_ok) << r.data_error;
  std::mt19937_64 rng(7);
  std::normal_distribution<double> scatter(0.0, noise);
  const Comparison c = compare(t, r);
  for (std::size_t i = 0; i < t.ops.size(); ++i) t.ops[i].duration_ns = c.ops[i].simulated_ns * std::exp(scatter(rng));
  return t;
}

const FitParameter* find(const CalibrationResult& r, const std::string& key) {
  for (const FitParameter& p : r.parameters)
    if (p.key == key) return &p;
  return nullptr;
}

model::SimConfig truth_of(double gbps, double cb_overhead_ns, double latency_ns) {
  model::SimConfig c = model::preset("gen4x16");
  c.fidelity = model::Fidelity::kBurst;
  c.device.dma_engine_gbps = gbps;
  c.device.cb_overhead_ns = cb_overhead_ns;
  c.link.latency_ns = latency_ns;
  return c;
}

TEST(CalibratePhysical, AFitStaysInsideThePhysicalBounds) {
  // Small reads that only a 5 ns link gives: no PCIe hop is that short, so the fit stops at the
  // bound and says so.
  const Trace t = captured(truth_of(9.0, 50, 5), {4096, 8192, 16384, 32768, 1u << 20, 4u << 20}, 2, 0.0);
  CalibrateOptions o;
  o.base = model::preset("gen4x16");
  o.parameters = {"link.latency_ns", "device.dma_engine_gbps"};
  o.max_replays = 40;
  const CalibrationResult r = calibrate(t, o);
  const FitParameter* latency = find(r, "link.latency_ns");
  ASSERT_NE(latency, nullptr) << r.summary();
  EXPECT_GE(latency->value, 40.0) << r.summary();
  EXPECT_EQ(latency->physical_lo, 40.0);
  EXPECT_FALSE(latency->bounds.empty());
  bool said = false;
  for (const std::string& n : r.notes) said = said || n.find("link.latency_ns ended on its physical bound") == 0;
  EXPECT_TRUE(said) << r.summary();
  for (const FitParameter& p : r.parameters) {
    EXPECT_GE(p.value, p.physical_lo) << p.key;
    EXPECT_LE(p.value, p.physical_hi) << p.key;
  }
}

TEST(CalibratePhysical, AParameterTheCopiesCannotSeeIsLeftAtItsDefault) {
  // Copies of 1 MiB and more hardly feel the link's latency: asked to fit it, the calibration says
  // they cannot, and keeps the base's value.
  const Trace t = captured(truth_of(9.0, 50, 150), {1u << 20, 2u << 20, 4u << 20, 8u << 20}, 2, 0.0);
  CalibrateOptions o;
  o.base = model::preset("gen4x16");
  o.base.link.latency_ns = 300;
  o.parameters = {"link.latency_ns", "device.dma_engine_gbps"};
  o.max_replays = 30;
  const CalibrationResult r = calibrate(t, o);
  ASSERT_EQ(r.unidentified, std::vector<std::string>{"link.latency_ns"}) << r.summary();
  EXPECT_EQ(r.config.link.latency_ns, 300.0);
  EXPECT_EQ(find(r, "link.latency_ns"), nullptr);
  ASSERT_NE(find(r, "device.dma_engine_gbps"), nullptr);
  EXPECT_NEAR(find(r, "device.dma_engine_gbps")->value, 9.0, 0.2) << r.summary();
}

TEST(CalibratePhysical, IntervalsHoldWhatTheyClaim) {
  // 5% noise on every copy: the fit on half the sizes gets the engine's rate back within its
  // stated interval, and about 90% of the other half's copies fall inside their intervals.
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t b = 64u << 10; b <= (16u << 20); b *= 2) sizes.push_back(b), sizes.push_back(b + b / 2);
  const model::SimConfig truth = truth_of(9.0, 800, 150);
  const Trace t = captured(truth, sizes, 3, 0.05);
  CalibrateOptions o;
  o.base = model::preset("gen4x16");
  o.fit = parse_selection("even");
  o.parameters = {"device.dma_engine_gbps", "device.cb_overhead_ns"};
  o.fit_copies_per_size = 0;
  o.max_replays = 60;
  const CalibrationResult r = calibrate(t, o);
  const FitParameter* engine = find(r, "device.dma_engine_gbps");
  ASSERT_NE(engine, nullptr) << r.summary();
  ASSERT_TRUE(std::isfinite(engine->se_log)) << r.summary();
  const double w = 1.6448536269514722 * engine->se_log;
  EXPECT_LE(engine->value * std::exp(-w), 9.0) << r.summary();
  EXPECT_GE(engine->value * std::exp(w), 9.0) << r.summary();
  EXPECT_LT(w, 0.1) << "a 5% scatter over dozens of copies pins the rate well";
  std::size_t held = 0;
  for (const PredictionInterval& i : r.intervals) held += i.fit ? 0 : 1;
  EXPECT_GE(held, 24u);
  EXPECT_GE(r.holdout_coverage, 0.75) << r.summary();
  EXPECT_GE(r.fit_coverage, 0.75) << r.summary();
  std::printf("[ fit ] engine %.3f GB/s (90%%: %.3f..%.3f), held-out coverage %.0f%% of %zu\n", engine->value,
              engine->value * std::exp(-w), engine->value * std::exp(w), r.holdout_coverage * 100, held);
}

}  // namespace
