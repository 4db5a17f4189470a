// The statistics tree: counters through handles, time-weighted gauges, histogram quantiles within
// one bin's resolution, path rules and the JSON shape.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "spyre_dma/model/stats.hpp"

namespace spyre_dma::model {
namespace {

using nlohmann::json;

TEST(ObserveStats, CountersAreHandles) {
  StatsRegistry stats;
  Counter& mwr = stats.counter("link.up.tlps.MWr");
  mwr.inc();
  mwr.add(41);
  EXPECT_EQ(mwr.value(), 42u);
  // The same path gives the same counter; a scope prefixes its names.
  EXPECT_EQ(&stats.counter("link.up.tlps.MWr"), &mwr);
  StatsScope up = stats.scope("link.up");
  EXPECT_EQ(&up.scope("tlps").counter("MWr"), &mwr);
  EXPECT_EQ(up.prefix(), "link.up");
  ASSERT_NE(stats.find_counter("link.up.tlps.MWr"), nullptr);
  EXPECT_EQ(stats.find_counter("link.up.tlps.MWr")->value(), 42u);
  EXPECT_EQ(stats.find_counter("link.up.tlps.MRd"), nullptr);
  EXPECT_EQ(stats.find_gauge("link.up.tlps.MWr"), nullptr);  // wrong kind
}

TEST(ObserveStats, HandlesStayValidAsTheTreeGrows) {
  StatsRegistry stats;
  Counter& first = stats.counter("a.first");
  for (int i = 0; i < 1000; ++i) stats.counter("b.c" + std::to_string(i)).inc();
  first.inc();
  EXPECT_EQ(stats.find_counter("a.first")->value(), 1u);
}

TEST(ObserveStats, PathRules) {
  StatsRegistry stats;
  stats.counter("dmai.read_engine.tag_stalls");
  EXPECT_THROW(stats.gauge("dmai.read_engine.tag_stalls"), StatsError);      // other kind
  EXPECT_THROW(stats.counter("dmai.read_engine.tag_stalls.x"), StatsError);  // leaf as group
  EXPECT_THROW(stats.counter("dmai.read_engine"), StatsError);               // group as leaf
  for (const char* bad : {"", ".a", "a.", "a..b", "a b", "a/b", "a~b", "a\"b"})
    EXPECT_THROW(stats.counter(bad), StatsError) << bad;
  EXPECT_NO_THROW(stats.counter("dmai.read_engine_x"));  // a sibling sharing a prefix string
  EXPECT_EQ(stats.paths(),
            (std::vector<std::string>{"dmai.read_engine.tag_stalls", "dmai.read_engine_x"}));
}

TEST(ObserveStats, GaugeIsTimeWeighted) {
  Gauge g;            // 0 from t = 0
  g.set(4.0, 10.0);   // 4 during [10, 30)
  g.add(-2.0, 30.0);  // 2 during [30, ...)
  EXPECT_DOUBLE_EQ(g.value(), 2.0);
  EXPECT_DOUBLE_EQ(g.max(), 4.0);
  EXPECT_DOUBLE_EQ(g.min(), 0.0);
  EXPECT_DOUBLE_EQ(g.mean(40.0), (0 * 10 + 4 * 20 + 2 * 10) / 40.0);
  EXPECT_DOUBLE_EQ(g.mean(50.0), (0 * 10 + 4 * 20 + 2 * 20) / 50.0);

  // Several updates at one instant: only the last value is held.
  g.set(100.0, 50.0);
  g.set(1.0, 50.0);
  EXPECT_DOUBLE_EQ(g.mean(60.0), (80 + 2 * 20 + 1 * 10) / 60.0);
  EXPECT_DOUBLE_EQ(g.max(), 100.0);

  // An update in the past counts at the latest instant seen.
  g.set(3.0, 55.0);
  EXPECT_DOUBLE_EQ(g.mean(60.0), (80 + 2 * 20 + 1 * 5 + 3 * 5) / 60.0);

  // A new window.
  g.reset(60.0);
  EXPECT_DOUBLE_EQ(g.mean(60.0), 3.0);
  g.set(5.0, 70.0);
  EXPECT_DOUBLE_EQ(g.mean(80.0), (3 * 10 + 5 * 10) / 20.0);
  EXPECT_DOUBLE_EQ(g.min(), 3.0);
  EXPECT_DOUBLE_EQ(g.max(), 5.0);
  const json j = g.to_json(80.0);
  EXPECT_DOUBLE_EQ(j["mean"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(j["span_ns"].get<double>(), 20.0);
  EXPECT_DOUBLE_EQ(j["current"].get<double>(), 5.0);
}

// The exact q-quantile (nearest rank) of sorted values.
double exact_quantile(const std::vector<double>& sorted, double q) {
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::min(sorted.size() - 1, rank == 0 ? 0 : rank - 1)];
}

TEST(ObserveStats, HistogramQuantilesWithinBinResolution) {
  LatencyHistogram h;
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> latency(std::log(600.0), 0.6);  // ns, a DMA-read-like spread
  std::vector<double> values;
  for (int i = 0; i < 20000; ++i) {
    values.push_back(latency(rng));
    h.record(values.back());
  }
  std::sort(values.begin(), values.end());
  const double ratio = h.bin_ratio();
  EXPECT_NEAR(ratio, std::pow(10.0, 1.0 / 20), 1e-9);
  for (double q : {0.01, 0.1, 0.5, 0.9, 0.99, 0.999}) {
    const double exact = exact_quantile(values, q);
    const double got = h.quantile(q);
    EXPECT_GE(got, exact / ratio) << "q=" << q;
    EXPECT_LE(got, exact * ratio) << "q=" << q;
  }
  EXPECT_EQ(h.count(), 20000u);
  EXPECT_DOUBLE_EQ(h.min(), values.front());
  EXPECT_DOUBLE_EQ(h.max(), values.back());
  double sum = 0;
  for (double v : values) sum += v;
  EXPECT_NEAR(h.mean(), sum / values.size(), 1e-9 * sum / values.size());
}

TEST(ObserveStats, HistogramSmallCountsAndOuterBins) {
  LatencyHistogram h(HistogramAxis{10.0, 1e4, 10});
  EXPECT_EQ(h.quantile(0.5), 0.0);
  h.record(546.0);
  EXPECT_DOUBLE_EQ(h.quantile(0.5), 546.0);  // clamped to what was observed
  EXPECT_DOUBLE_EQ(h.quantile(0.99), 546.0);
  h.record(2.0);   // underflow
  h.record(5e4);   // overflow
  h.record(-1.0);  // counts as 0
  EXPECT_EQ(h.count(), 4u);
  EXPECT_DOUBLE_EQ(h.min(), 0.0);
  EXPECT_DOUBLE_EQ(h.max(), 5e4);
  EXPECT_DOUBLE_EQ(h.quantile(1.0), 5e4);
  EXPECT_LE(h.quantile(0.25), 10.0);
  EXPECT_GE(h.quantile(0.99), 1e4);
  const json j = h.to_json();
  ASSERT_EQ(j["bins"].size(), 3u);
  EXPECT_EQ(j["bins"][0], json::array({0.0, 10.0, 2}));
  EXPECT_TRUE(j["bins"][2][1].is_null());  // the overflow bin has no upper edge
  EXPECT_EQ(j["bins"][2][2], 1);
  h.reset();
  EXPECT_EQ(h.count(), 0u);
  EXPECT_TRUE(h.to_json()["p50"].is_null());
  EXPECT_THROW(LatencyHistogram(HistogramAxis{0.0, 10.0, 10}), StatsError);
}

TEST(ObserveStats, JsonShape) {
  StatsRegistry stats;
  stats.counter("link.up.tlps.MWr").add(3);
  stats.counter("link.up.tlps.CplD").add(5);
  stats.counter("link.up.bytes").add(1536);
  stats.gauge("dmai.queue.occupancy").set(2.0, 0.0);
  auto& lat = stats.histogram("dmai.read_engine.latency");
  lat.record(500.0);
  lat.record(700.0);
  const json j = stats.to_json(100.0);
  EXPECT_EQ(j["link"]["up"]["tlps"]["MWr"], 3);
  EXPECT_EQ(j["link"]["up"]["tlps"]["CplD"], 5);
  EXPECT_EQ(j["link"]["up"]["bytes"], 1536);
  EXPECT_DOUBLE_EQ(j["dmai"]["queue"]["occupancy"]["mean"].get<double>(), 2.0);
  const json& h = j["dmai"]["read_engine"]["latency"];
  EXPECT_EQ(h["count"], 2);
  EXPECT_DOUBLE_EQ(h["mean"].get<double>(), 600.0);
  EXPECT_DOUBLE_EQ(h["max"].get<double>(), 700.0);
  for (const char* key : {"min", "p50", "p90", "p99", "unit", "bins"})
    EXPECT_TRUE(h.contains(key)) << key;
  // Keys sorted: the dump is a pure function of the registered values.
  EXPECT_EQ(j["link"]["up"]["tlps"].dump(), R"({"CplD":5,"MWr":3})");

  StatsRegistry again;  // registered in another order
  again.histogram("dmai.read_engine.latency").record(700.0);
  again.histogram("dmai.read_engine.latency").record(500.0);
  again.gauge("dmai.queue.occupancy").set(2.0, 0.0);
  again.counter("link.up.bytes").add(1536);
  again.counter("link.up.tlps.CplD").add(5);
  again.counter("link.up.tlps.MWr").add(3);
  EXPECT_EQ(again.to_json(100.0).dump(), j.dump());
}

TEST(ObserveStats, RegistryReset) {
  StatsRegistry stats;
  Counter& c = stats.counter("c");
  Gauge& g = stats.gauge("g");
  LatencyHistogram& h = stats.histogram("h");
  c.add(7);
  g.set(4.0, 10.0);
  h.record(100.0);
  stats.reset(20.0);
  EXPECT_EQ(c.value(), 0u);
  EXPECT_EQ(h.count(), 0u);
  EXPECT_DOUBLE_EQ(g.mean(30.0), 4.0);  // the window starts at 20 with the level held
  EXPECT_DOUBLE_EQ(stats.to_json(30.0)["g"]["span_ns"].get<double>(), 10.0);
}

}  // namespace
}  // namespace spyre_dma::model
