// refdev H2D and D2H throughput with registered host buffers, against plain memcpy.
//
// BM_Memcpy/<size>: one thread memcpy's <size> bytes between two pre-faulted, page-aligned host
// buffers: the ceiling for a device whose data path is one memcpy per CB on one worker thread.
// BM_RefdevH2D/<size>, BM_RefdevD2H/<size>: one copy_h2d / copy_d2h of <size> bytes between a
// registered host buffer (Engine::allocate_host) and a device buffer, then synchronize. The
// engine cuts it into CBs of EngineOptions::max_cb_bytes (default 4 MiB). Before timing, a warm-up
// round trip touches every device page (refdev allocates device memory on first write) and
// checks the data byte for byte.
//
// Counters:
//   bytes_per_second  wall-clock throughput (Google Benchmark prints it with binary prefixes:
//                     "G/s" is GiB/s)
//   vs_memcpy         this benchmark's rate / BM_Memcpy's rate for the same size in this run
//                     (the "refdev / memcpy" figure; target >= 0.8). If BM_Memcpy was filtered
//                     out, a quick median-of-5 memcpy measurement stands in.
//
// Run: build/default/testbench/bench/refdev_throughput
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstring>
#include <map>
#include <memory>

#include "bench_util.hpp"
#include "spyre_dma/refdev/ref_device.hpp"
#include "spyre_dma/spyre_dma.hpp"

namespace {

using namespace spyre_dma;
using spyre_bench::HostBlock;
using spyre_bench::kMiB;
using spyre_bench::WallTimer;

constexpr auto kWait = std::chrono::seconds(60);

std::string memcpy_key(std::size_t bytes) { return "memcpy/" + std::to_string(bytes); }

double memcpy_rate(std::size_t bytes) {
  if (auto r = spyre_bench::find_rate(memcpy_key(bytes))) return *r;
  const double r = spyre_bench::measure_copy_rate(bytes);
  spyre_bench::record_rate(memcpy_key(bytes), r);
  return r;
}

void BM_Memcpy(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  HostBlock src(bytes, 1), dst(bytes, 2);
  WallTimer t;
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::ClobberMemory();
  }
  const double secs = t.seconds();
  spyre_bench::record_rate(memcpy_key(bytes), static_cast<double>(bytes) * static_cast<double>(state.iterations()) / secs);
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes) * state.iterations());
}

// One engine on a fresh refdev per size, kept for the whole run (Google Benchmark calls a
// benchmark function several times while it sizes the iteration count).
struct Rig {
  std::shared_ptr<refdev::RefDevice> dev;
  std::unique_ptr<Engine> engine;
  Stream stream;
  DeviceBuffer buf;
  HostBuffer in, out;
  std::string error;  // set when the warm-up round trip failed

  explicit Rig(std::size_t bytes) {
    dev = std::make_shared<refdev::RefDevice>();
    engine = Engine::open(dev);
    stream = engine->create_stream();
    buf = engine->allocate(bytes);
    in = engine->allocate_host(bytes);
    out = engine->allocate_host(bytes);
    HostBlock pattern(bytes, 7);
    std::memcpy(in.data(), pattern.data(), bytes);  // also faults every page in
    std::memset(out.data(), 0, bytes);
    // Warm-up: touches every device page, and checks the round trip once.
    stream.copy_h2d(buf, 0, in.data(), bytes);
    stream.copy_d2h(out.data(), buf, 0, bytes);
    const Status st = stream.synchronize(kWait);
    if (!st.ok()) error = "warm-up failed: " + st.to_string();
    else if (std::memcmp(in.data(), out.data(), bytes) != 0) error = "warm-up round trip: data mismatch";
    else if (engine->stats().bytes_staged != 0) error = "registered buffers were staged";
  }

  static Rig& get(std::size_t bytes) {
    static std::map<std::size_t, std::unique_ptr<Rig>> rigs;
    auto& r = rigs[bytes];
    if (!r) r = std::make_unique<Rig>(bytes);
    return *r;
  }
};

template <bool kH2D>
void BM_Refdev(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  const double baseline = memcpy_rate(bytes);  // before timing: it may have to measure
  Rig& rig = Rig::get(bytes);
  if (!rig.error.empty()) {
    state.SkipWithError(rig.error.c_str());
    return;
  }
  WallTimer t;
  for (auto _ : state) {
    if constexpr (kH2D) rig.stream.copy_h2d(rig.buf, 0, rig.in.data(), bytes);
    else rig.stream.copy_d2h(rig.out.data(), rig.buf, 0, bytes);
    const Status st = rig.stream.synchronize(kWait);
    if (!st.ok()) {
      state.SkipWithError(st.to_string().c_str());
      return;
    }
  }
  const double rate = static_cast<double>(bytes) * static_cast<double>(state.iterations()) / t.seconds();
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes) * state.iterations());
  state.counters["vs_memcpy"] = rate / baseline;
}

void Sizes(benchmark::internal::Benchmark* b) {
  b->Arg(64 * kMiB)->Arg(256 * kMiB)->UseRealTime()->MinTime(spyre_bench::min_time(0.5))->Unit(benchmark::kMillisecond);
}

// Registered in this order, so the baseline runs (and is recorded) first.
BENCHMARK(BM_Memcpy)->Apply(Sizes);
BENCHMARK_TEMPLATE(BM_Refdev, true)->Name("BM_RefdevH2D")->Apply(Sizes);
BENCHMARK_TEMPLATE(BM_Refdev, false)->Name("BM_RefdevD2H")->Apply(Sizes);

}  // namespace
