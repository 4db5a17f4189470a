// Small-op latency: a 4 KiB copy submitted and synchronized on refdev, one at a time, against the
// least any two-thread design can do for it, measured in the same process.
//
//   BM_HandoffBaseline  the floor: a caller hands a request to a second thread through a mutex and
//                       condition variable, that thread does the same 4 KiB memcpy and hands the
//                       answer back the same way (two wake-ups, one copy). Recorded first.
//   BM_RoundTrip/...    Stream::copy_h2d or copy_d2h of 4 KiB, then Stream::synchronize: the
//                       engine builds the CB, rings the doorbell, a refdev worker copies and
//                       writes the RB, the waiting thread reaps it.
//       /h2d_registered, /d2h_registered   host memory from Engine::allocate_host (direct DMA)
//       /h2d_pageable,   /d2h_pageable     a std::vector (staged: one more host copy)
//
// Counters:
//   us_per_op     wall-clock microseconds per round trip (the mean)
//   p50_us, p90_us, p99_us, p999_us   the distribution of single round trips (nearest rank)
//   vs_handoff    us_per_op / the baseline's                     (target for registered: <= 1.5)
//   p99_vs_handoff  p99_us / the baseline's p99_us
// The baseline is measured on the spot (median of 5) when it was filtered out of the run.
//
// Run: build/default/testbench/bench/roundtrip_latency; `taskset -c 0 ...` gives one core's
//      figure, where the waiter, the device worker and the baseline's two threads share it.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "bench_util.hpp"
#include "spyre_dma/refdev/ref_device.hpp"
#include "spyre_dma/spyre_dma.hpp"

namespace {

using namespace spyre_dma;
using spyre_bench::HostBlock;
using spyre_bench::WallTimer;

constexpr std::size_t kOpBytes = 4096;
constexpr auto kWait = std::chrono::seconds(5);

// --- The baseline: a request/answer handoff between two threads ------------------------------

class Handoff {
 public:
  Handoff() : src_(kOpBytes, 1), dst_(kOpBytes, 2), worker_([this] { serve(); }) {}
  ~Handoff() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    request_cv_.notify_one();
    worker_.join();
  }
  // One round trip: request, wait for the answer.
  void round_trip() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      requested_ = true;
    }
    request_cv_.notify_one();
    std::unique_lock<std::mutex> lock(mu_);
    answer_cv_.wait(lock, [this] { return answered_; });
    answered_ = false;
  }

 private:
  void serve() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      request_cv_.wait(lock, [this] { return requested_ || stop_; });
      if (stop_) return;
      requested_ = false;
      lock.unlock();
      std::memcpy(dst_.data(), src_.data(), kOpBytes);
      benchmark::ClobberMemory();
      lock.lock();
      answered_ = true;
      lock.unlock();
      answer_cv_.notify_one();
      lock.lock();
    }
  }

  HostBlock src_, dst_;
  std::mutex mu_;
  std::condition_variable request_cv_, answer_cv_;
  bool requested_ = false, answered_ = false, stop_ = false;
  std::thread worker_;
};

constexpr const char* kBaselineKey = "handoff_ns";
constexpr const char* kBaselineP99Key = "handoff_p99_us";  // recorded only when the baseline row ran

void BM_HandoffBaseline(benchmark::State& state) {
  Handoff h;
  for (int i = 0; i < 100; ++i) h.round_trip();  // both threads warm
  spyre_bench::LatencySamples samples;
  WallTimer t;
  for (auto _ : state) samples.time([&] { h.round_trip(); });
  const double ns = t.seconds() * 1e9 / static_cast<double>(state.iterations());
  spyre_bench::record_rate(kBaselineKey, ns);
  state.counters["us_per_op"] = ns / 1e3;
  samples.report(state);
  spyre_bench::record_rate(kBaselineP99Key, state.counters["p99_us"]);
}

double baseline_ns() {
  if (auto r = spyre_bench::find_rate(kBaselineKey)) return *r;
  Handoff h;
  std::vector<double> runs;
  for (int rep = 0; rep < 5; ++rep) {
    WallTimer t;
    for (int i = 0; i < 2000; ++i) h.round_trip();
    runs.push_back(t.seconds() * 1e9 / 2000);
  }
  std::sort(runs.begin(), runs.end());
  spyre_bench::record_rate(kBaselineKey, runs[2]);
  return runs[2];
}

// --- The engine ------------------------------------------------------------------------------

struct Rig {
  std::shared_ptr<refdev::RefDevice> dev = std::make_shared<refdev::RefDevice>();
  std::unique_ptr<Engine> engine = Engine::open(dev);
  Stream stream = engine->create_stream();
  DeviceBuffer buf = engine->allocate(kOpBytes);
  HostBuffer registered = engine->allocate_host(kOpBytes);
  std::vector<std::uint8_t> pageable = std::vector<std::uint8_t>(kOpBytes, 7);
};

void BM_RoundTrip(benchmark::State& state, bool h2d, bool registered) {
  const double base = baseline_ns();
  Rig rig;
  std::uint8_t* host = registered ? static_cast<std::uint8_t*>(rig.registered.data()) : rig.pageable.data();
  auto one = [&]() -> Status {
    if (h2d) rig.stream.copy_h2d(rig.buf, 0, host, kOpBytes);
    else rig.stream.copy_d2h(host, rig.buf, 0, kOpBytes);
    return rig.stream.synchronize(kWait);
  };
  for (int i = 0; i < 100; ++i) (void)one();  // threads and pages warm
  const std::uint64_t staged_before = rig.engine->stats().bytes_staged;
  spyre_bench::LatencySamples samples;
  WallTimer t;
  for (auto _ : state) {
    const Status st = samples.time(one);
    if (!st.ok()) {
      state.SkipWithError(st.to_string().c_str());
      return;
    }
  }
  const double ns = t.seconds() * 1e9 / static_cast<double>(state.iterations());
  const bool staged = rig.engine->stats().bytes_staged != staged_before;
  if (staged == registered) {
    state.SkipWithError(registered ? "registered memory was staged" : "pageable memory was not staged");
    return;
  }
  state.counters["us_per_op"] = ns / 1e3;
  state.counters["vs_handoff"] = ns / base;
  samples.report(state);
  if (auto p99 = spyre_bench::find_rate(kBaselineP99Key)) state.counters["p99_vs_handoff"] = state.counters["p99_us"] / *p99;
}

void Common(benchmark::internal::Benchmark* b) {
  b->UseRealTime()->MinTime(spyre_bench::min_time(0.3))->Unit(benchmark::kMicrosecond);
}

// Registered in this order: the baseline runs (and is recorded) first.
BENCHMARK(BM_HandoffBaseline)->Apply(Common);
BENCHMARK_CAPTURE(BM_RoundTrip, h2d_registered, true, true)->Apply(Common);
BENCHMARK_CAPTURE(BM_RoundTrip, d2h_registered, false, true)->Apply(Common);
BENCHMARK_CAPTURE(BM_RoundTrip, h2d_pageable, true, false)->Apply(Common);
BENCHMARK_CAPTURE(BM_RoundTrip, d2h_pageable, false, false)->Apply(Common);

}  // namespace
