// A real profile replayed on both data paths: the A100 profile in traces/data (a training step's
// kernels, H2D copies and fills on two streams, issued as fast as the engine takes them) on
// `gen4x16`, once with the SystemC data path and once with the RTL. Every op's device time
// agrees within 5% (or 10 ns: a 512-byte fill lasts about 150 ns, a few of the RTL's cycles),
// and both replays leave the data the trace says.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "spyre_dma/model/config_loader.hpp"
#include "spyre_dma/traces/replay.hpp"
#include "spyre_dma/traces/trace_io.hpp"

namespace spyre_dma::rtl::test {
namespace {

std::string data_dir() {
  std::string f = __FILE__;
  return f.substr(0, f.rfind("testbench/")) + "traces/data/";
}

traces::ReplayResult replay_with(model::DataPathKind data_path, const traces::Trace& trace) {
  model::SimConfig config = model::preset("gen4x16");
  config.data_path = data_path;
  return traces::replay_on_sim(trace, config, {});
}

TEST(ReplayedProfile, EveryOpsTimeAgreesWithinFivePercent) {
  const traces::Trace trace = traces::read_trace(data_dir() + "alexnet-a100.jsonl");
  const traces::ReplayResult sim = replay_with(model::DataPathKind::kSystemC, trace);
  const traces::ReplayResult rtl = replay_with(model::DataPathKind::kRtl, trace);
  EXPECT_TRUE(sim.data_ok) << sim.data_error;
  EXPECT_TRUE(rtl.data_ok) << rtl.data_error;
  ASSERT_EQ(sim.ops.size(), rtl.ops.size());
  ASSERT_GT(sim.ops.size(), 50u);
  double worst = 0;
  std::size_t compared = 0;
  for (std::size_t i = 0; i < sim.ops.size(); ++i) {
    ASSERT_EQ(sim.ops[i].id, rtl.ops[i].id);
    const double d_sim = sim.ops[i].duration_ns, d_rtl = rtl.ops[i].duration_ns;
    if (d_sim == 0 && d_rtl == 0) continue;  // host-only ops
    ++compared;
    worst = std::max(worst, std::abs(d_rtl - d_sim) / d_sim);
    EXPECT_LE(std::abs(d_rtl - d_sim), 0.05 * d_sim + 10) << "op " << sim.ops[i].id << ": sim " << d_sim
                                                          << " ns, rtl " << d_rtl << " ns";
  }
  EXPECT_GT(compared, 50u);
  const double total_rel = (rtl.total_ns - sim.total_ns) / sim.total_ns;
  std::printf("[ timing ] %zu ops: largest difference %.2f%%; total %.0f ns on sim, %.0f on rtl (%+.3f%%)\n",
              compared, worst * 100, sim.total_ns, rtl.total_ns, total_rel * 100);
  EXPECT_LE(std::abs(total_rel), 0.01);
}

}  // namespace
}  // namespace spyre_dma::rtl::test
