// Link effects seen through the engine: LCRC errors cost replays (time, never data), and
// flow-control credits cap posted-write bandwidth at credits / credit loop.
#include <gtest/gtest.h>

#include <cstring>

#include "spyre_dma/model/sim_device.hpp"
#include "spyre_dma/spyre_dma.hpp"

namespace spyre_dma::model {
namespace {

struct D2hRun {
  double gbps = 0;
  nlohmann::json stats;
  bool data_ok = false;
};

D2hRun d2h(const SimConfig& config) {
  auto dev = std::make_shared<SimDevice>(config);
  auto engine = Engine::open(dev);
  auto stream = engine->create_stream();
  constexpr std::size_t kBytes = 4 << 20;
  auto buf = engine->allocate(kBytes);
  auto in = engine->allocate_host(kBytes);
  auto out = engine->allocate_host(kBytes);
  for (std::size_t i = 0; i < kBytes; ++i) static_cast<std::uint8_t*>(in.data())[i] = static_cast<std::uint8_t>(i * 7);
  stream.copy_h2d(buf, 0, in.data(), kBytes);
  Op op = stream.copy_d2h(out.data(), buf, 0, kBytes);
  EXPECT_TRUE(stream.synchronize(std::chrono::seconds(60)).ok());
  D2hRun r;
  r.gbps = double(kBytes) / double(op.device_end_ns() - op.device_start_ns());
  r.stats = dev->statistics();
  r.data_ok = std::memcmp(in.data(), out.data(), kBytes) == 0;
  return r;
}

TEST(SimLinkEffects, LcrcErrorsCostReplaysNotData) {
  const D2hRun clean = d2h(SimConfig{});
  SimConfig noisy;
  noisy.link.lcrc_error_rate = 0.02;
  const D2hRun replayed = d2h(noisy);
  EXPECT_EQ(clean.stats["link"]["replays"], 0);
  EXPECT_GT(replayed.stats["link"]["replays"].get<std::uint64_t>(), 100u);
  EXPECT_TRUE(clean.data_ok);
  EXPECT_TRUE(replayed.data_ok);
  EXPECT_LT(replayed.gbps, clean.gbps * 0.99);
}

TEST(SimLinkEffects, PostedCreditsCapWriteBandwidth) {
  SimConfig tight;
  tight.link.host_rx.posted_data = 64;  // 1 KiB of posted data in flight
  tight.link.host_rx.posted_header = 256;
  const D2hRun r = d2h(tight);
  // Each credit comes back one wire latency plus the update latency after its TLP left.
  const double loop_ns = tight.link.latency_ns + tight.link.credit_update_ns;
  const double cap = 64.0 * 16 / loop_ns;  // bytes per ns
  EXPECT_TRUE(r.data_ok);
  EXPECT_GT(r.stats["link"]["credit_stalls"].get<std::uint64_t>(), 0u);
  EXPECT_LT(r.gbps, cap * 1.02);
  EXPECT_GT(r.gbps, cap * 0.8);
}

}  // namespace
}  // namespace spyre_dma::model
