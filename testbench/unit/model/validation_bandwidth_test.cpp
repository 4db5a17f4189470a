// Sustained bandwidth of the model against the pcie-bench analytical model (Neugebauer et al.,
// "Understanding PCIe performance for end host networking", SIGCOMM 2018), as the figures in the
// project's facts sheet give it for large transfers, 64-bit addressing and no ECRC. The engine
// drives the SystemC model exactly as it drives any device: this is the whole path (CB fetch,
// read engine with tags, completions, write engine, RBs), not the link formula alone.
#include <gtest/gtest.h>

#include <string>

#include "spyre_dma/model/sim_device.hpp"
#include "spyre_dma/spyre_dma.hpp"

namespace spyre_dma::model {
namespace {

struct LinkCase {
  const char* name;
  std::uint32_t generation, lanes, mps, mrrs;
  double write_gbps, read_gbps;  // published: device writes host memory (D2H) / reads it (H2D)
};

// pcie-bench figures (GB/s per direction, large transfers): Gen3 x8, Gen4 x16, Gen5 x16 at
// MPS 256 / MRRS 512 and MPS 512 / MRRS 4096.
const LinkCase kCases[] = {
    {"gen3x8_mps256", 3, 8, 256, 512, 6.62, 6.71},
    {"gen3x8_mps512", 3, 8, 512, 4096, 6.84, 6.89},
    {"gen4x16_mps256", 4, 16, 256, 512, 25.99, 26.37},
    {"gen4x16_mps512", 4, 16, 512, 4096, 27.37, 27.58},
    {"gen5x16_mps256", 5, 16, 256, 512, 51.98, 52.73},
    {"gen5x16_mps512", 5, 16, 512, 4096, 54.75, 55.16},
};

// Steady-state GB/s of `ops` back-to-back copies of `bytes` in one direction: from the end of
// the first to the end of the last, so start-up latency does not count.
double sustained_gbps(const LinkCase& c, bool h2d, Fidelity fidelity) {
  SimConfig config;
  config.link.generation = c.generation;
  config.link.lanes = c.lanes;
  config.link.mps = c.mps;
  config.link.mrrs = c.mrrs;
  config.fidelity = fidelity;
  auto engine = Engine::open(std::make_shared<SimDevice>(config));
  auto stream = engine->create_stream();
  constexpr std::size_t kBytes = 8 << 20;
  constexpr int kOps = 6;
  auto buf = engine->allocate(kBytes);
  auto host = engine->allocate_host(kBytes);
  std::vector<Op> ops;
  for (int i = 0; i < kOps; ++i) {
    ops.push_back(h2d ? stream.copy_h2d(buf, 0, host.data(), kBytes) : stream.copy_d2h(host.data(), buf, 0, kBytes));
  }
  const Status s = stream.synchronize(std::chrono::seconds(120));
  EXPECT_TRUE(s.ok()) << s.to_string();
  const double ns = double(ops.back().device_end_ns() - ops.front().device_end_ns());
  return double(kBytes) * (kOps - 1) / ns;
}

class SustainedBandwidth : public ::testing::TestWithParam<LinkCase> {};

TEST_P(SustainedBandwidth, ReadsWithinOnePercentOfPcieBench) {
  const LinkCase& c = GetParam();
  const double got = sustained_gbps(c, true, Fidelity::kTlp);
  EXPECT_NEAR(got / c.read_gbps, 1.0, 0.01) << c.name << ": " << got << " GB/s vs " << c.read_gbps;
}

TEST_P(SustainedBandwidth, WritesWithinOnePercentOfPcieBench) {
  const LinkCase& c = GetParam();
  const double got = sustained_gbps(c, false, Fidelity::kTlp);
  EXPECT_NEAR(got / c.write_gbps, 1.0, 0.01) << c.name << ": " << got << " GB/s vs " << c.write_gbps;
}

TEST_P(SustainedBandwidth, BurstFidelityAgreesWithinTwoPercent) {
  const LinkCase& c = GetParam();
  for (bool h2d : {true, false}) {
    const double tlp = sustained_gbps(c, h2d, Fidelity::kTlp);
    const double burst = sustained_gbps(c, h2d, Fidelity::kBurst);
    EXPECT_NEAR(burst / tlp, 1.0, 0.02) << c.name << (h2d ? " H2D" : " D2H");
  }
}

INSTANTIATE_TEST_SUITE_P(PcieBench, SustainedBandwidth, ::testing::ValuesIn(kCases),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

}  // namespace
}  // namespace spyre_dma::model
