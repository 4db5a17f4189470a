// How fast the SystemC model simulates, against memcpy of the same bytes measured in the same run:
// TLP fidelity in TLPs per wall second, burst fidelity in simulated bytes per wall second (data
// really moved through host and device memory in both). Simulated time is not the point here;
// wall time is: the model must not be the bottleneck of a regression.
#include <benchmark/benchmark.h>

#include <cstring>
#include <memory>
#include <vector>

#include "bench_util.hpp"
#include "spyre_dma/model/sim_device.hpp"
#include "spyre_dma/spyre_dma.hpp"

namespace {

using namespace spyre_dma;

enum class Direction { kH2d, kD2h, kBoth };

void run_sim(benchmark::State& state, model::Fidelity fidelity, Direction direction) {
  const std::size_t bytes = static_cast<std::size_t>(state.range(0));
  model::SimConfig config;
  config.fidelity = fidelity;
  auto dev = std::make_shared<model::SimDevice>(config);
  auto engine = Engine::open(dev);
  auto stream = engine->create_stream();
  auto buf = engine->allocate(bytes);
  auto host = engine->allocate_host(bytes);
  std::memset(host.data(), 0x5A, bytes);
  // Warm up: touch device and host pages once in both directions.
  stream.copy_h2d(buf, 0, host.data(), bytes);
  stream.copy_d2h(host.data(), buf, 0, bytes);
  if (!stream.synchronize(std::chrono::seconds(600)).ok()) state.SkipWithError("warm-up failed");
  const auto before = dev->statistics();
  for (auto _ : state) {
    if (direction != Direction::kD2h) stream.copy_h2d(buf, 0, host.data(), bytes);
    if (direction != Direction::kH2d) stream.copy_d2h(host.data(), buf, 0, bytes);
    if (!stream.synchronize(std::chrono::seconds(600)).ok()) state.SkipWithError("transfer failed");
  }
  const auto after = dev->statistics();
  auto tlps = [](const nlohmann::json& j) {
    const auto& t = j["link"]["tlps"];
    return t["MWr"].get<double>() + t["MRd"].get<double>() + t["CplD"].get<double>() + t["Cpl"].get<double>();
  };
  const std::int64_t copies = direction == Direction::kBoth ? 2 : 1;
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * copies * static_cast<std::int64_t>(bytes));
  state.counters["tlps_per_s"] = benchmark::Counter(tlps(after) - tlps(before), benchmark::Counter::kIsRate);
  state.counters["sim_ns_per_iter"] =
      (after["time_ns"].get<double>() - before["time_ns"].get<double>()) / double(state.iterations());
}

void BM_SimTlpFidelity(benchmark::State& state) { run_sim(state, model::Fidelity::kTlp, Direction::kBoth); }
void BM_SimTlpFidelityH2d(benchmark::State& state) { run_sim(state, model::Fidelity::kTlp, Direction::kH2d); }
void BM_SimTlpFidelityD2h(benchmark::State& state) { run_sim(state, model::Fidelity::kTlp, Direction::kD2h); }
void BM_SimBurstFidelity(benchmark::State& state) { run_sim(state, model::Fidelity::kBurst, Direction::kBoth); }

// The baseline: one H2D and one D2H worth of single-thread memcpy between pre-faulted buffers.
void BM_Memcpy(benchmark::State& state) {
  const std::size_t bytes = static_cast<std::size_t>(state.range(0));
  std::vector<std::uint8_t> a(bytes, 1), b(bytes, 2);
  for (auto _ : state) {
    std::memcpy(b.data(), a.data(), bytes);
    std::memcpy(a.data(), b.data(), bytes);
    benchmark::DoNotOptimize(a.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * 2 * bytes));
}

// Memcpy and TLP fidelity over H2D+D2H also at 256 MiB and 1 GiB: the wall time per byte must not
// grow with the transfer (first-touch page faults of fresh memory happen in the untimed warm-up).
// A quick run (the CTest entry) keeps to 64 MiB.
void BySize(benchmark::internal::Benchmark* b) {
  b->Arg(64 << 20);
  if (spyre_bench::min_time(1.0) >= 1.0) b->Arg(256 << 20)->Arg(1 << 30);
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

BENCHMARK(BM_Memcpy)->Apply(BySize);
BENCHMARK(BM_SimTlpFidelity)->Apply(BySize);
BENCHMARK(BM_SimTlpFidelityH2d)->Arg(64 << 20)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SimTlpFidelityD2h)->Arg(64 << 20)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SimBurstFidelity)->Arg(64 << 20)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
