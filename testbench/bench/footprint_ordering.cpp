// What ordering by footprint costs per op (docs/engine.md, "Ordering by footprint"), against the
// same program ordered with explicit events, and against no cross-stream order at all (the
// baseline: racy, the least the engine can do).
//
// The program: a producer stream writes 4 KiB slots of a device buffer (fills) and a consumer
// stream reads each slot back (D2H into registered memory) right after it was written; every
// read must follow its write. Modes:
//   none       no order between the streams (the baseline)
//   events     record an event on the producer after each write, wait on it on the consumer
//   footprint  EngineOptions::order_by_footprint, no events
//
// BM_Submit: the reference device is paused while `pairs` write/read pairs are submitted, so what
// is timed is the engine's host-side work: submission, and for footprint the scan of the live
// ops' ranges (there are up to 2 x pairs live ops, so the scan grows with them). Untimed: resume,
// synchronize, pause.
// BM_RoundTrip: the device runs; each iteration submits `pairs` pairs and synchronizes.
//
// Counters:
//   ns_per_pair   time per write/read pair
//   vs_none       ns_per_pair / the `none` row's of the same pairs (measured first, same run)
//
// Run: build/default/testbench/bench/footprint_ordering
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bench_util.hpp"
#include "spyre_dma/refdev/ref_device.hpp"
#include "spyre_dma/spyre_dma.hpp"

namespace {

using namespace spyre_dma;

constexpr std::uint64_t kSlot = 4096;
constexpr std::uint32_t kRingSlots = 4096;
enum Mode : int { kNone, kEvents, kFootprint };
const char* const kModeNames[] = {"none", "events", "footprint"};

// ns per pair of each (benchmark, pairs) in mode none, for vs_none.
std::map<std::pair<std::string, int>, double>& baselines() {
  static std::map<std::pair<std::string, int>, double> b;
  return b;
}

struct Rig {
  std::shared_ptr<refdev::RefDevice> dev;
  std::unique_ptr<Engine> engine;
  Stream producer, consumer;
  DeviceBuffer buf;
  HostBuffer out;
  Event event;

  Rig(Mode mode, std::uint64_t pairs) {
    refdev::RefDeviceConfig cfg;
    cfg.depth = {256, kRingSlots, kRingSlots};
    dev = std::make_shared<refdev::RefDevice>(cfg);
    EngineOptions o;
    o.ring_slots = {256, kRingSlots, kRingSlots};
    o.order_by_footprint = mode == kFootprint;
    engine = Engine::open(dev, o);
    producer = engine->create_stream();
    consumer = engine->create_stream();
    buf = engine->allocate(pairs * kSlot);
    out = engine->allocate_host(pairs * kSlot);
    event = engine->create_event();
    producer.fill(buf, 0, pairs * kSlot, 0);  // touch every page once, untimed
    (void)engine->synchronize(std::chrono::seconds(30));
  }

  void submit(Mode mode, std::uint64_t pairs) {
    for (std::uint64_t i = 0; i < pairs; ++i) {
      producer.fill(buf, i * kSlot, kSlot, static_cast<std::uint32_t>(i));
      if (mode == kEvents) {
        producer.record(event);
        consumer.wait(event);
      }
      consumer.copy_d2h(static_cast<std::uint8_t*>(out.data()) + i * kSlot, buf, i * kSlot, kSlot);
    }
  }
};

void report(benchmark::State& state, const char* bench, Mode mode, int pairs, double seconds) {
  const double per_pair = seconds * 1e9 / (static_cast<double>(state.iterations()) * pairs);
  state.counters["ns_per_pair"] = per_pair;
  auto& b = baselines();
  const auto key = std::make_pair(std::string(bench), pairs);
  if (mode == kNone) b[key] = per_pair;
  if (auto it = b.find(key); it != b.end() && it->second > 0) state.counters["vs_none"] = per_pair / it->second;
  state.SetLabel(kModeNames[mode]);
}

void BM_Submit(benchmark::State& state) {
  const auto mode = static_cast<Mode>(state.range(0));
  const int pairs = static_cast<int>(state.range(1));
  Rig rig(mode, static_cast<std::uint64_t>(pairs));
  double seconds = 0;
  for (auto _ : state) {
    rig.dev->pause();
    const auto t0 = std::chrono::steady_clock::now();
    rig.submit(mode, static_cast<std::uint64_t>(pairs));
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rig.dev->resume();
    if (!rig.engine->synchronize(std::chrono::seconds(60)).ok()) state.SkipWithError("synchronize failed");
  }
  report(state, "submit", mode, pairs, seconds);
}

void BM_RoundTrip(benchmark::State& state) {
  const auto mode = static_cast<Mode>(state.range(0));
  const int pairs = static_cast<int>(state.range(1));
  Rig rig(mode, static_cast<std::uint64_t>(pairs));
  double seconds = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    rig.submit(mode, static_cast<std::uint64_t>(pairs));
    if (!rig.engine->synchronize(std::chrono::seconds(60)).ok()) state.SkipWithError("synchronize failed");
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  report(state, "round_trip", mode, pairs, seconds);
}

// The baseline (mode none) of each size runs first.
void args(benchmark::internal::Benchmark* b) {
  for (const int pairs : {16, 256, 1024}) {
    for (const int mode : {kNone, kEvents, kFootprint}) b->Args({mode, pairs});
  }
  b->MinTime(spyre_bench::min_time(0.3));
  b->UseRealTime();
}

BENCHMARK(BM_Submit)->Apply(args);
BENCHMARK(BM_RoundTrip)->Apply(args);

}  // namespace
