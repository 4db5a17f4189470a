// Traffic both ways on one link, through the engine (docs/model-pcie.md, "Traffic in both
// directions"): read requests behind the posted writes queued before them, ACK and UpdateFC DLLPs
// on the reverse wire at the spec's intervals, and a root port that carries both directions
// together at host.root_port_ratio times its link's raw rate, serving reads and writes in turn.
#include <gtest/gtest.h>

#include <cstring>

#include "pcie/link_math.hpp"
#include "spyre_dma/model/config_loader.hpp"
#include "spyre_dma/model/sim_device.hpp"
#include "spyre_dma/spyre_dma.hpp"

namespace spyre_dma::model {
namespace {

constexpr std::uint64_t kMiB = 1ull << 20;

struct Copies {
  double h2d_gbps = 0;  // 0: not run
  double d2h_gbps = 0;
  nlohmann::json stats;
};

// An H2D of h2d_bytes and a D2H of d2h_bytes (0: none) on two streams at once, registered memory;
// each copy's GB/s on the device clock, as nvbandwidth's bidirectional testcases time them.
Copies copies(const SimConfig& config, std::uint64_t h2d_bytes, std::uint64_t d2h_bytes) {
  auto dev = std::make_shared<SimDevice>(config);
  auto engine = Engine::open(dev);
  Stream in = engine->create_stream(), out = engine->create_stream();
  const std::uint64_t n = std::max(h2d_bytes, d2h_bytes);
  DeviceBuffer a = engine->allocate(n), b = engine->allocate(n);
  HostBuffer src = engine->allocate_host(n), dst = engine->allocate_host(n);
  std::memset(src.data(), 0x5a, n);
  std::optional<Op> h2d, d2h;
  if (h2d_bytes) h2d = in.copy_h2d(a, 0, src.data(), h2d_bytes);
  if (d2h_bytes) d2h = out.copy_d2h(dst.data(), b, 0, d2h_bytes);
  EXPECT_TRUE(in.synchronize(std::chrono::seconds(120)).ok());
  EXPECT_TRUE(out.synchronize(std::chrono::seconds(120)).ok());
  Copies r;
  const auto gbps = [](const Op& op, std::uint64_t bytes) {
    return double(bytes) / double(op.device_end_ns() - op.device_start_ns());
  };
  if (h2d) r.h2d_gbps = gbps(*h2d, h2d_bytes);
  if (d2h) r.d2h_gbps = gbps(*d2h, d2h_bytes);
  r.stats = dev->statistics();
  return r;
}

TEST(BothWays, ReadRequestsWaitBehindTheWritesQueuedBeforeThem) {
  // Few posted credits: the writes wait for them, and a read request queued behind a waiting
  // write waits with it (a request may not pass a posted write).
  SimConfig config = preset("gen4x16");
  config.host.root_port_ratio = 0;       // the link alone
  config.device.read_tags = 24;          // reads bound by their round trip
  config.link.host_rx.posted_data = 64;  // 1 KiB: four 256-byte writes in flight
  const Copies alone = copies(config, 8 * kMiB, 0);
  const Copies both = copies(config, 8 * kMiB, 16 * kMiB);
  EXPECT_GT(both.stats["link"]["credit_stalls"].get<std::uint64_t>(), 1000u);
  const auto holds = both.stats["link"]["request_holds"].get<std::uint64_t>();
  EXPECT_GT(holds, 1000u) << both.stats["link"].dump();
  // Alone, a request waits at most for an RB written just before it (one per CB).
  EXPECT_LE(alone.stats["link"]["request_holds"].get<std::uint64_t>(), 8u);
  EXPECT_LT(both.h2d_gbps, 0.9 * alone.h2d_gbps) << "held requests lengthen the reads' round trip";
}

TEST(BothWays, DllpsGoOnTheReverseWireAtTheSpecIntervals) {
  for (const char* name : {"gen3x8", "gen4x16", "spyre-gen5x16"}) {
    SimConfig config = preset(name);
    config.host.root_port_ratio = 0;
    const Copies d2h = copies(config, 0, 16 * kMiB);
    const pcie::LinkParams p = pcie::link_params(config.link);
    // One ACK and one UpdateFC per ack_limit / fc_update symbol times of TLPs received; a symbol
    // time is one byte on each lane.
    const double symbol_ns = p.lanes / pcie::raw_bytes_per_ns(p);
    const double per_ns = 1.0 / (pcie::ack_limit_symbols(p.generation, p.lanes, p.mps) * symbol_ns) +
                          1.0 / (pcie::fc_update_symbols(p.generation, p.lanes, p.mps) * symbol_ns);
    const double up_tlp_ns = d2h.stats["link"]["wire_bytes"]["up"].get<double>() / pcie::tlp_bytes_per_ns(p);
    const double expected = up_tlp_ns * per_ns;
    const double down = d2h.stats["link"]["dllps"]["down"].get<double>();
    EXPECT_NEAR(down, expected, 0.01 * expected + 8) << name;
    // On a wide link they are a small share of the reverse wire: 8 bytes on every lane at once.
    EXPECT_LT(down * pcie::kDllpBytes / pcie::raw_bytes_per_ns(p), 0.02 * up_tlp_ns) << name;
  }
}

TEST(BothWays, OnTheLinkAloneEachDirectionKeepsAlmostItsOneWayRate) {
  // Without a root port limit only the link's own mechanisms act: the requests' and the DLLPs'
  // wire time, a few percent at most.
  SimConfig config = preset("spyre-gen5x16");
  config.host.root_port_ratio = 0;
  const Copies h2d = copies(config, 16 * kMiB, 0), d2h = copies(config, 0, 16 * kMiB);
  const Copies both_h2d = copies(config, 16 * kMiB, 32 * kMiB), both_d2h = copies(config, 32 * kMiB, 16 * kMiB);
  EXPECT_GT(both_h2d.h2d_gbps, 0.97 * h2d.h2d_gbps);
  EXPECT_LT(both_h2d.h2d_gbps, h2d.h2d_gbps * 1.0001);
  EXPECT_GT(both_d2h.d2h_gbps, 0.94 * d2h.d2h_gbps);
  EXPECT_LT(both_d2h.d2h_gbps, 0.995 * d2h.d2h_gbps) << "the requests and DLLPs take some of the upstream wire";
}

TEST(BothWays, ARootPortCarriesBothDirectionsTogetherAtItsRatio) {
  SimConfig config = preset("gen4x16");
  const double raw = pcie::raw_bytes_per_ns(pcie::link_params(config.link));
  const Copies h2d = copies(config, 16 * kMiB, 0), d2h = copies(config, 0, 16 * kMiB);
  // One way, the port (1.4 x raw) is no limit.
  SimConfig unlimited = config;
  unlimited.host.root_port_ratio = 0;
  EXPECT_NEAR(h2d.h2d_gbps, copies(unlimited, 16 * kMiB, 0).h2d_gbps, 1e-9);
  EXPECT_NEAR(d2h.d2h_gbps, copies(unlimited, 0, 16 * kMiB).d2h_gbps, 1e-9);
  // Both ways, as nvbandwidth measures them: each direction's copy while the other direction
  // copies twice as much, so the other runs all along. Both sides busy, the port is shared, and
  // the two shares add up to the port's rate, or to the two links' when the port has more.
  for (const double ratio : {1.2, 1.4, 1.8}) {
    config.host.root_port_ratio = ratio;
    const double h2d_share = copies(config, 16 * kMiB, 32 * kMiB).h2d_gbps;
    const double d2h_share = copies(config, 32 * kMiB, 16 * kMiB).d2h_gbps;
    const double expected = std::min(ratio * raw, 0.97 * (h2d.h2d_gbps + d2h.d2h_gbps));
    EXPECT_NEAR(h2d_share + d2h_share, expected, 0.03 * expected) << "ratio " << ratio;
  }
}

TEST(BothWays, ARootPortServesReadsAndWritesInTurn) {
  // Both sides with more to move than half the port: each gets half, however many reads it keeps
  // in flight; a side that asks for less leaves the rest to the other.
  SimConfig config = preset("gen4x16");  // MRRS 512; the port carries 1.4 x 31.5 GB/s
  const double half = 1.4 * pcie::raw_bytes_per_ns(pcie::link_params(config.link)) / 2;
  for (const std::uint32_t tags : {128u, 256u}) {
    config.device.read_tags = tags;
    EXPECT_NEAR(copies(config, 16 * kMiB, 32 * kMiB).h2d_gbps, half, 0.04 * half) << tags << " tags";
    EXPECT_NEAR(copies(config, 32 * kMiB, 16 * kMiB).d2h_gbps, half, 0.04 * half) << tags << " tags";
  }
  config.device.read_tags = 8;  // 4 KiB of reads in flight: their round trip holds them well below half
  const Copies few = copies(config, 16 * kMiB, 32 * kMiB), few_d2h = copies(config, 32 * kMiB, 16 * kMiB);
  EXPECT_LT(few.h2d_gbps, 0.6 * half);
  EXPECT_GT(few_d2h.d2h_gbps, 1.1 * half) << "the writes take what the reads leave";
}

TEST(BothWays, ReadsWaitForTheWritesBeforeThemToBeInHostMemory) {
  // With posted writes taking host memory's time, a read behind them at the root complex waits
  // until they are in (a read may not pass a posted write there either).
  SimConfig config = preset("gen4x16");
  config.host.root_port_ratio = 0;
  config.host.memory_write_gbps = 20;  // below the link: the writes queue at the root complex
  const Copies both = copies(config, 8 * kMiB, 16 * kMiB);
  EXPECT_GT(both.stats["root_complex"]["read_holds"].get<std::uint64_t>(), 1000u);
  EXPECT_LT(both.d2h_gbps, 20.5);
  config.host.memory_write_gbps = 0;
  const Copies absorbed = copies(config, 8 * kMiB, 16 * kMiB);
  EXPECT_LE(absorbed.stats["root_complex"]["read_holds"].get<std::uint64_t>(), 64u);
}

}  // namespace
}  // namespace spyre_dma::model
