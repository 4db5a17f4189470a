// Ops per second from several threads, each submitting to its own stream of one engine on refdev,
// against the rate of one thread measured in the same run.
//
//   BM_StreamScaling/threads:N   N threads, each with its own stream, each submitting kWindow
//                                4 KiB H2D copies from registered memory and synchronizing its
//                                stream, over and over. The engine's lock, tags, rings and
//                                completion path are shared; the device's DMAI pipeline too.
//
// Counters:
//   ops_per_second   all threads together, wall clock
//   vs_linear        ops_per_second / (N x the 1-thread rate)   (target: >= 0.7 up to the cores)
// The 1-thread rate is the threads:1 row when it ran first, else measured on the spot.
//
// Run: build/default/testbench/bench/stream_scaling
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.hpp"
#include "spyre_dma/refdev/ref_device.hpp"
#include "spyre_dma/spyre_dma.hpp"

namespace {

using namespace spyre_dma;
using spyre_bench::WallTimer;

constexpr std::size_t kOpBytes = 4096;
constexpr int kWindow = 16;             // ops in flight per thread between synchronizes
constexpr int kRoundsPerIteration = 64;  // synchronizes per thread per benchmark iteration
constexpr auto kWait = std::chrono::seconds(5);

struct Rig {
  std::shared_ptr<refdev::RefDevice> dev = std::make_shared<refdev::RefDevice>();
  std::unique_ptr<Engine> engine = Engine::open(dev);
  struct PerThread {
    Stream stream;
    DeviceBuffer buf;
    HostBuffer host;
  };
  std::vector<PerThread> threads;
  explicit Rig(int n) {
    for (int i = 0; i < n; ++i) {
      threads.push_back({engine->create_stream(), engine->allocate(kOpBytes * kWindow),
                         engine->allocate_host(kOpBytes * kWindow)});
    }
  }
};

// Every thread runs `rounds` windows; returns the wall-clock seconds of the slowest, or a failure.
double run(Rig& rig, int rounds, std::string& error) {
  const int n = static_cast<int>(rig.threads.size());
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::string> errors(n);
  std::vector<std::thread> workers;
  for (int t = 0; t < n; ++t) {
    workers.emplace_back([&, t] {
      Rig::PerThread& me = rig.threads[t];
      const auto* host = static_cast<const std::uint8_t*>(me.host.data());
      ready.fetch_add(1);
      while (!go.load()) std::this_thread::yield();
      for (int r = 0; r < rounds; ++r) {
        for (int i = 0; i < kWindow; ++i) me.stream.copy_h2d(me.buf, i * kOpBytes, host + i * kOpBytes, kOpBytes);
        const Status st = me.stream.synchronize(kWait);
        if (!st.ok()) {
          errors[t] = st.to_string();
          return;
        }
      }
    });
  }
  while (ready.load() < n) std::this_thread::yield();
  WallTimer timer;
  go.store(true);
  for (auto& w : workers) w.join();
  const double seconds = timer.seconds();
  for (const auto& e : errors) {
    if (!e.empty()) error = e;
  }
  return seconds;
}

constexpr const char* kOneThreadKey = "stream_scaling_1";

double one_thread_rate() {
  if (auto r = spyre_bench::find_rate(kOneThreadKey)) return *r;
  Rig rig(1);
  std::string error;
  (void)run(rig, 8, error);  // warm
  std::vector<double> rates;
  for (int i = 0; i < 5; ++i) rates.push_back(kRoundsPerIteration * kWindow / run(rig, kRoundsPerIteration, error));
  std::sort(rates.begin(), rates.end());
  spyre_bench::record_rate(kOneThreadKey, rates[2]);
  return rates[2];
}

void BM_StreamScaling(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  Rig rig(n);
  std::string error;
  (void)run(rig, 8, error);  // threads, pages and tags warm
  double seconds = 0;
  for (auto _ : state) {
    const double s = run(rig, kRoundsPerIteration, error);
    if (!error.empty()) {
      state.SkipWithError(error.c_str());
      return;
    }
    seconds += s;
    state.SetIterationTime(s);  // the threads' time, not their start-up
  }
  const double ops = static_cast<double>(n) * kRoundsPerIteration * kWindow * static_cast<double>(state.iterations());
  const double rate = ops / seconds;
  if (n == 1) spyre_bench::record_rate(kOneThreadKey, rate);
  state.counters["ops_per_second"] = rate;
  state.counters["vs_linear"] = rate / (n * one_thread_rate());
}

BENCHMARK(BM_StreamScaling)
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->Arg(4)
    ->UseManualTime()
    ->MinTime(spyre_bench::min_time(0.5))
    ->Unit(benchmark::kMillisecond);

}  // namespace
