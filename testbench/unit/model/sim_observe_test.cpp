// What the sim backend reports about a run: the statistics tree (with latency histograms, queue
// occupancy and the resolved configuration) and a Perfetto / chrome://tracing trace of its CBs.
#include <gtest/gtest.h>

#include <cstdio>
#include <algorithm>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "spyre_dma/model/config_loader.hpp"
#include "spyre_dma/model/sim_device.hpp"
#include "spyre_dma/spyre_dma.hpp"

namespace spyre_dma::model {
namespace {

TEST(SimObserve, StatisticsTreeAndTrace) {
  const std::string trace_path = ::testing::TempDir() + "sim_observe_trace.json";
  nlohmann::json stats;
  {
    auto dev = std::make_shared<SimDevice>(preset("gen4x16"), trace_path);
    auto engine = Engine::open(dev);
    auto stream = engine->create_stream();
    auto buf = engine->allocate(1 << 20);
    auto host = engine->allocate_host(1 << 20);
    for (int i = 0; i < 4; ++i) {
      stream.copy_h2d(buf, 0, host.data(), 1 << 20);
      stream.copy_d2h(host.data(), buf, 0, 1 << 20);
    }
    ASSERT_TRUE(stream.synchronize(std::chrono::seconds(30)).ok());
    stats = dev->statistics();
  }
  EXPECT_EQ(stats["config"]["preset"], "gen4x16");
  EXPECT_EQ(stats["config"]["link"]["generation"], 4);
  EXPECT_EQ(stats["controller"]["pipelines"]["DMAI"]["cbs"], 4);
  EXPECT_EQ(stats["controller"]["pipelines"]["DMAO"]["cbs"], 4);
  EXPECT_EQ(stats["controller"]["pipelines"]["DMAI"]["cb_latency_ns"]["count"], 4);
  EXPECT_GT(stats["controller"]["pipelines"]["DMAI"]["cb_latency_ns"]["p50"].get<double>(), 1000.0);
  EXPECT_TRUE(stats["controller"]["pipelines"]["DMAO"].contains("queue_occupancy"));
  const std::uint64_t data_reads = 4u * (1 << 20) / 512;  // MRRS 512
  EXPECT_EQ(stats["controller"]["read_requests"].get<std::uint64_t>(), data_reads);
  std::uint64_t fetches = 0;
  for (const char* p : {"COMPUTE", "DMAI", "DMAO"}) fetches += stats["controller"]["pipelines"][p]["fetches"].get<std::uint64_t>();
  EXPECT_EQ(stats["link"]["tlps"]["MRd"].get<std::uint64_t>(), data_reads + fetches);
  EXPECT_EQ(stats["link"]["protocol"]["violations"], 0);

  std::ifstream in(trace_path);
  ASSERT_TRUE(in.good());
  const nlohmann::json trace = nlohmann::json::parse(in);
  int cbs = 0;
  for (const auto& e : trace["traceEvents"]) cbs += e["ph"] == "X" && e["name"] == "CB";
  EXPECT_EQ(cbs, 8);
  EXPECT_EQ(trace["otherData"]["preset"], "gen4x16");
  std::remove(trace_path.c_str());
}

// Many small CBs on both pipelines: a CB is issued while the last one's data still moves, so the
// CBs of a pipeline overlap. No two slices of one track overlap (a viewer would nest them), each
// CB's RB is an instant with a flow from the CB, and the queue depth is a counter.
TEST(SimObserve, TraceTracksNeverOverlapAndEachCbFlowsToItsRb) {
  const std::string trace_path = ::testing::TempDir() + "sim_observe_slots.json";
  {
    auto dev = std::make_shared<SimDevice>(preset("spyre-gen5x16"), trace_path);
    auto engine = Engine::open(dev);
    StreamOptions so;
    so.ordering = Ordering::kPipelineFifo;
    auto stream = engine->create_stream(so);
    auto buf = engine->allocate(4 << 20);
    auto host = engine->allocate_host(4 << 20);
    for (int i = 0; i < 40; ++i) {
      stream.copy_h2d(buf, std::uint64_t(i) << 16, static_cast<std::uint8_t*>(host.data()) + (i << 16), 1 << 16);
      stream.copy_d2h(static_cast<std::uint8_t*>(host.data()) + (2 << 20) + (i << 14), buf, std::uint64_t(i) << 16,
                      1 << 14);
    }
    ASSERT_TRUE(stream.synchronize(std::chrono::seconds(30)).ok());
  }
  std::ifstream in(trace_path);
  ASSERT_TRUE(in.good());
  const nlohmann::json trace = nlohmann::json::parse(in);
  std::map<int, std::vector<std::pair<double, double>>> by_track;  // tid -> [ts, ts + dur)
  std::map<std::uint64_t, int> flow_ends;
  int cbs = 0, rbs = 0, counters = 0, slot_tracks = 0;
  for (const auto& e : trace["traceEvents"]) {
    const std::string ph = e["ph"];
    if (ph == "X" && e["name"] == "CB") {
      ++cbs;
      by_track[e["tid"]].push_back({e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>()});
    }
    if (ph == "i" && e["name"] == "RB") ++rbs;
    if (ph == "C") ++counters;
    if (ph == "s") ++flow_ends[e["id"].get<std::uint64_t>()];
    if (ph == "f") flow_ends[e["id"].get<std::uint64_t>()] += 10;
    if (ph == "M" && e["name"] == "thread_name" &&
        e["args"]["name"].get<std::string>().find(" slot ") != std::string::npos) {
      ++slot_tracks;
    }
  }
  EXPECT_EQ(cbs, 80);
  EXPECT_EQ(rbs, 80);
  EXPECT_EQ(counters, 80);
  ASSERT_EQ(flow_ends.size(), 80u);
  for (const auto& [id, n] : flow_ends) EXPECT_EQ(n, 11) << "flow " << id << " has one start and one end";
  EXPECT_GT(slot_tracks, 3) << "the CBs overlapped: more than one slot track per pipeline";
  for (auto& [tid, spans] : by_track) {
    std::sort(spans.begin(), spans.end());
    for (std::size_t i = 1; i < spans.size(); ++i) {
      EXPECT_LE(spans[i - 1].second, spans[i].first + 1e-9) << "track " << tid << " slice " << i;
    }
  }
  std::remove(trace_path.c_str());
}

TEST(SimObserve, TraceOfTlpsOnRequest) {
  const std::string trace_path = ::testing::TempDir() + "sim_observe_tlps.json";
  {
    SimConfig config;
    config.trace_tlps = true;
    auto engine = Engine::open(std::make_shared<SimDevice>(config, trace_path));
    auto stream = engine->create_stream();
    auto buf = engine->allocate(64 << 10);
    auto host = engine->allocate_host(64 << 10);
    stream.copy_h2d(buf, 0, host.data(), 64 << 10);
    ASSERT_TRUE(stream.synchronize(std::chrono::seconds(30)).ok());
  }
  std::ifstream in(trace_path);
  const nlohmann::json trace = nlohmann::json::parse(in);
  int mrd = 0, cpld = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    mrd += e["name"] == "MRd";
    cpld += e["name"] == "CplD";
  }
  EXPECT_EQ(mrd, 16 + 1) << "64 KiB at MRRS 4096, plus the CB fetch";
  EXPECT_EQ(cpld, 64 * 1024 / 512 + 1) << "completions at MPS 512, plus the CB fetch's";
  std::remove(trace_path.c_str());
}

}  // namespace
}  // namespace spyre_dma::model
