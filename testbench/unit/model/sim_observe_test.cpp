// What the sim backend reports about a run: the statistics tree (with latency histograms, queue
// occupancy and the resolved configuration) and a Perfetto / chrome://tracing trace of its CBs.
#include <gtest/gtest.h>

#include <cstdio>
#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "wave_reader.hpp"

#include "spyre_dma/model/config_loader.hpp"
#include "spyre_dma/model/wave_writer.hpp"
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
// CB's RB is an instant with a flow from the CB, and the queue depth is a counter that rises with
// the doorbells and falls with the RBs, back to 0 at the end.
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
  int cbs = 0, rbs = 0, slot_tracks = 0;
  std::map<std::string, std::vector<std::pair<double, int>>> queues;  // counter -> (ts, CBs queued)
  for (const auto& e : trace["traceEvents"]) {
    const std::string ph = e["ph"];
    if (ph == "X" && e["name"] == "CB") {
      ++cbs;
      by_track[e["tid"]].push_back({e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>()});
    }
    if (ph == "i" && e["name"] == "RB") ++rbs;
    if (ph == "C") queues[e["name"]].push_back({e["ts"].get<double>(), e["args"]["CBs queued"].get<int>()});
    if (ph == "s") ++flow_ends[e["id"].get<std::uint64_t>()];
    if (ph == "f") flow_ends[e["id"].get<std::uint64_t>()] += 10;
    if (ph == "M" && e["name"] == "thread_name" &&
        e["args"]["name"].get<std::string>().find(" slot ") != std::string::npos) {
      ++slot_tracks;
    }
  }
  EXPECT_EQ(cbs, 80);
  EXPECT_EQ(rbs, 80);
  ASSERT_EQ(queues.size(), 2u) << "a queue counter for DMAI and one for DMAO, no credits without trace_tlps";
  for (const auto& [name, values] : queues) {
    int most = 0;
    for (std::size_t i = 0; i < values.size(); ++i) {
      EXPECT_GE(values[i].second, 0) << name;
      if (i) {
        EXPECT_LT(values[i - 1].first, values[i].first) << name << ": one value per instant, in time order";
      }
      most = std::max(most, values[i].second);
    }
    EXPECT_GT(most, 1) << name << ": CBs were rung ahead of their RBs";
    EXPECT_EQ(values.back().second, 0) << name;
  }
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

// A waveform of the model's state: each pipeline's CBs queued, the read tags in flight and the
// credits in use, in VCD or FST. Every level stays within what the configuration allows, rises
// above 0 and is back at 0 once the work is done; the same run writes the same bytes.
std::string run_with_wave(const std::string& wave_path, const std::string& trace_path = {}) {
  SimConfig config = preset("spyre-gen5x16");
  config.trace_tlps = !trace_path.empty();
  auto dev = std::make_shared<SimDevice>(config, trace_path, wave_path);
  {
    auto engine = Engine::open(dev);
    auto stream = engine->create_stream();
    auto buf = engine->allocate(4 << 20);
    auto host = engine->allocate_host(4 << 20);
    for (int i = 0; i < 8; ++i) {
      stream.copy_h2d(buf, std::uint64_t(i) << 18, static_cast<std::uint8_t*>(host.data()) + (i << 18), 1 << 18);
      stream.copy_d2h(static_cast<std::uint8_t*>(host.data()) + (2 << 20) + (i << 16), buf, std::uint64_t(i) << 18,
                      1 << 16);
    }
    EXPECT_TRUE(stream.synchronize(std::chrono::seconds(30)).ok());
  }
  dev.reset();  // the waveform is closed with the simulation
  std::ifstream in(wave_path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

void expect_model_state(const spyre_dma::testing::Wave& w) {
  const SimConfig c = preset("spyre-gen5x16");
  const std::map<std::string, std::uint64_t> limits = {
      {"device0.DMAI.cbs_queued", c.device.depth[1]},
      {"device0.DMAO.cbs_queued", c.device.depth[2]},
      {"device0.read_tags", c.device.read_tags},
      {"device0.link.posted_header_credits", c.link.host_rx.posted_header},
      {"device0.link.posted_data_credits", c.link.host_rx.posted_data},
      {"device0.link.nonposted_header_credits", c.link.host_rx.nonposted_header}};
  for (const auto& [name, limit] : limits) {
    ASSERT_EQ(w.changes.count(name), 1u) << name;
    const auto& changes = w.changes.at(name);
    std::uint64_t most = 0;
    for (const auto& [t, bits] : changes) most = std::max(most, spyre_dma::testing::Wave::number(bits));
    EXPECT_GT(most, 0u) << name;
    EXPECT_LE(most, limit) << name;
    EXPECT_EQ(spyre_dma::testing::Wave::number(changes.back().second), 0u) << name << " at the end";
  }
  EXPECT_EQ(w.at("device0.COMPUTE.cbs_queued", ~std::uint64_t{0}), "0");
}

TEST(SimObserve, WaveformOfTheModelsState) {
  const std::string vcd = ::testing::TempDir() + "sim_state.vcd";
  const std::string first = run_with_wave(vcd);
  expect_model_state(spyre_dma::testing::read_vcd(vcd));
  EXPECT_EQ(run_with_wave(vcd), first) << "the same run writes the same bytes";
  std::remove(vcd.c_str());
  if (!fst_supported()) return;
#if SPYRE_DMA_HAVE_FST
  const std::string fst = ::testing::TempDir() + "sim_state.fst";
  run_with_wave(fst);
  expect_model_state(spyre_dma::testing::read_fst(fst));
  std::remove(fst.c_str());
#endif
}

// With the trace's TLPs on, the credits and tags are counters of the trace too, and agree with the
// waveform: the last value each counter takes is 0, and no value exceeds its capacity.
TEST(SimObserve, CreditAndTagCountersInTheTraceOfTlps) {
  const std::string vcd = ::testing::TempDir() + "sim_state_counters.vcd";
  const std::string json_path = ::testing::TempDir() + "sim_state_counters.json";
  run_with_wave(vcd, json_path);
  std::ifstream in(json_path);
  const nlohmann::json trace = nlohmann::json::parse(in);
  std::map<std::string, nlohmann::json> last;
  std::map<std::string, int> seen;
  std::uint64_t most_tags = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "C") continue;
    last[e["name"]] = e["args"];
    ++seen[e["name"]];
    if (e["name"] == "read tags") most_tags = std::max(most_tags, e["args"]["in flight"].get<std::uint64_t>());
  }
  for (const char* name : {"posted credits in use", "non-posted credits in use", "read tags"}) {
    EXPECT_GT(seen[name], 10) << name;
  }
  EXPECT_EQ(last["posted credits in use"]["header"], 0);
  EXPECT_EQ(last["posted credits in use"]["data"], 0);
  EXPECT_EQ(last["read tags"]["in flight"], 0);
  const spyre_dma::testing::Wave w = spyre_dma::testing::read_vcd(vcd);
  std::uint64_t wave_most = 0;
  for (const auto& [t, bits] : w.changes.at("device0.read_tags")) {
    wave_most = std::max(wave_most, spyre_dma::testing::Wave::number(bits));
  }
  EXPECT_EQ(most_tags, wave_most);
  std::remove(vcd.c_str());
  std::remove(json_path.c_str());
}

TEST(SimObserve, AWaveFileItCannotWriteIsATypedError) {
  EXPECT_THROW(SimDevice(SimConfig{}, {}, ::testing::TempDir() + "state.txt"), WaveError);
  EXPECT_THROW(SimDevice(SimConfig{}, {}, "/nonexistent-dir/state.vcd"), WaveError);
}

}  // namespace
}  // namespace spyre_dma::model
