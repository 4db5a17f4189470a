// The engine, unchanged, on the SystemC model: data moves byte-exact, simulated time advances only
// with the workload, and the same workload gives the same timestamps twice.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "spyre_dma/model/sim_device.hpp"
#include "spyre_dma/spyre_dma.hpp"

namespace spyre_dma::model {
namespace {

struct RunResult {
  std::vector<std::uint64_t> stamps;
  std::vector<std::uint8_t> data;
};

RunResult run_round_trip(Fidelity fidelity, std::size_t bytes) {
  SimConfig config;
  config.fidelity = fidelity;
  auto dev = std::make_shared<SimDevice>(config);
  auto engine = Engine::open(dev);
  auto stream = engine->create_stream();
  auto buf = engine->allocate(bytes);
  auto host = engine->allocate_host(bytes);
  auto back = engine->allocate_host(bytes);
  auto* in = static_cast<std::uint8_t*>(host.data());
  for (std::size_t i = 0; i < bytes; ++i) in[i] = static_cast<std::uint8_t>(i * 13 + 7);
  Op a = stream.copy_h2d(buf, 0, in, bytes);
  Op b = stream.copy_d2h(back.data(), buf, 0, bytes);
  Status s = stream.synchronize(std::chrono::seconds(60));
  EXPECT_TRUE(s.ok()) << s.to_string();
  RunResult r;
  r.stamps = {a.device_start_ns(), a.device_end_ns(), b.device_start_ns(), b.device_end_ns()};
  auto* out = static_cast<std::uint8_t*>(back.data());
  r.data.assign(out, out + bytes);
  EXPECT_EQ(0, std::memcmp(in, out, bytes));
  return r;
}

TEST(SimEngine, RoundTripTlpMode) {
  const RunResult r = run_round_trip(Fidelity::kTlp, (8 << 20) + 300);
  EXPECT_GT(r.stamps[1], r.stamps[0]);
  EXPECT_GE(r.stamps[2], r.stamps[1]) << "strict mode: the D2H starts after the H2D retired";
  const double h2d_gbps = double((8 << 20) + 300) / double(r.stamps[1] - r.stamps[0]);
  EXPECT_GT(h2d_gbps, 30.0);
  EXPECT_LT(h2d_gbps, 63.1);
}

TEST(SimEngine, DeterministicTimestamps) {
  const RunResult a = run_round_trip(Fidelity::kTlp, 3 << 20);
  const RunResult b = run_round_trip(Fidelity::kTlp, 3 << 20);
  EXPECT_EQ(a.stamps, b.stamps);
  EXPECT_EQ(a.data, b.data);
}

TEST(SimEngine, BurstModeAgreesWithTlpMode) {
  const std::size_t n = 16 << 20;
  const RunResult t = run_round_trip(Fidelity::kTlp, n);
  const RunResult b = run_round_trip(Fidelity::kBurst, n);
  const double h2d_t = double(t.stamps[1] - t.stamps[0]), h2d_b = double(b.stamps[1] - b.stamps[0]);
  const double d2h_t = double(t.stamps[3] - t.stamps[2]), d2h_b = double(b.stamps[3] - b.stamps[2]);
  EXPECT_NEAR(h2d_b / h2d_t, 1.0, 0.02);
  EXPECT_NEAR(d2h_b / d2h_t, 1.0, 0.02);
}

// Per-op latency of single ops of 64 KiB and more: burst fidelity within 2% of TLP fidelity.
TEST(SimEngine, BurstPerOpLatencyAgreesFrom64KiB) {
  for (std::size_t n : {std::size_t(64) << 10, std::size_t(256) << 10, std::size_t(1) << 20, std::size_t(4) << 20}) {
    const RunResult t = run_round_trip(Fidelity::kTlp, n);
    const RunResult b = run_round_trip(Fidelity::kBurst, n);
    for (int k : {0, 2}) {
      const double lt = double(t.stamps[k + 1] - t.stamps[k]), lb = double(b.stamps[k + 1] - b.stamps[k]);
      EXPECT_NEAR(lb / lt, 1.0, 0.02) << n << " bytes, " << (k == 0 ? "H2D" : "D2H") << ": burst " << lb
                                      << " ns, TLP " << lt << " ns";
    }
  }
}

}  // namespace
}  // namespace spyre_dma::model
