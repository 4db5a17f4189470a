// CB submission cost per op on one core, with and without submission batching.
//
// The reference device is paused while the ops are submitted, so its workers neither fetch CBs
// nor compete for the CPU: what is timed is the engine's host-side work per op (validation, op
// state, scheduling, CB encode into the ring, the doorbell). Each op is a 128-byte fill, one CB.
//
// Per iteration: submit N ops (timed); then, untimed, resume the device, synchronize and pause it
// again. Rings are sized so that a whole batch fits (refdev depth and EngineOptions::ring_slots
// 65536 on DMAI), so no submission ever waits for a queue slot.
//
// The baseline, measured first in the same process: BM_RingStoreBaseline, what handing a CB to a
// device costs at the least: a 128-byte CB image (its tag and address changed per CB) stored into
// the next slot of a ring of the same size, the producer index published with a release store
// once per N CBs.
//
// A second reference row, BM_HandleContractFloor: the synchronisation a thread-safe submission
// with shared op handles needs per op, and nothing else. It does the atomic operations the
// engine's handles and lock imply (lock the engine's weak reference and let it go, reference the
// destination buffer, take and release one lock, queue a reference to the op, drop the caller's
// handle) and the 128-byte ring store, on objects that already exist: the least a single-CB op
// costs on this machine without changing what the handles promise.
//
// Counters:
//   items_per_second  CBs submitted per second of (real) submission time
//   ns_per_cb         submission time per CB, in nanoseconds
//                     (targets: <= 100 ns per single-CB op, <= 50 ns per CB of a large op)
//   vs_ring_store     ns_per_cb / the baseline's ns per CB
//   vs_floor          single-CB rows: ns_per_cb / BM_HandleContractFloor's ns per op
//   doorbells_per_cb  doorbells the engine rang per CB (1 unbatched, ~1/N batched)
//   stalls            queue-full / staging stalls seen (must be 0: else the ring is too small)
//
// Run: build/default/testbench/bench/cb_submission
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "spyre_dma/hw/contract.hpp"
#include "spyre_dma/refdev/ref_device.hpp"
#include "spyre_dma/spyre_dma.hpp"

namespace {

using namespace spyre_dma;

constexpr std::uint32_t kRingSlots = 65536;
constexpr std::uint64_t kFillBytes = 128;
constexpr std::uint64_t kBufferBytes = 1u << 20;  // fills cycle over this buffer

struct Rig {
  std::shared_ptr<refdev::RefDevice> dev;
  std::unique_ptr<Engine> engine;
  Stream stream;
  DeviceBuffer buf;

  explicit Rig(std::uint64_t max_cb_bytes = 4u << 20) {
    refdev::RefDeviceConfig cfg;
    cfg.depth = {256, kRingSlots, kRingSlots};
    dev = std::make_shared<refdev::RefDevice>(cfg);
    EngineOptions opt;
    opt.ring_slots = {256, kRingSlots, kRingSlots};
    opt.max_cb_bytes = max_cb_bytes;
    engine = Engine::open(dev, opt);
    stream = engine->create_stream();
    buf = engine->allocate(kBufferBytes);
    // Touch the device pages once so the first timed round is like the others.
    stream.fill(buf, 0, kBufferBytes, 0);
    (void)stream.synchronize(std::chrono::seconds(30));
  }
};

// The benchmark loop shared by every variant: `submit()` runs timed with the device paused; the
// drain (resume, synchronize, pause) is untimed. Returns the submission nanoseconds, by our own
// clock over exactly the timed regions.
template <class Submit>
double timed_submissions(benchmark::State& state, Rig& rig, Submit submit) {
  double submit_ns = 0;
  rig.dev->pause();
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    submit();
    submit_ns += std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    state.PauseTiming();
    rig.dev->resume();
    const Status st = rig.stream.synchronize(std::chrono::seconds(60));
    rig.dev->pause();
    if (!st.ok()) {
      state.SkipWithError(("synchronize failed: " + st.to_string()).c_str());
      state.ResumeTiming();
      break;
    }
    state.ResumeTiming();
  }
  rig.dev->resume();
  return submit_ns;
}

// --- The baseline: stores into a ring ---------------------------------------------------------

constexpr const char* kBaselineKey = "ring_store_ns";

struct Ring {
  spyre_bench::HostBlock slots{std::size_t{kRingSlots} * hw::kCbBytes};
  std::atomic<std::uint32_t> producer{0};
  std::uint32_t next = 0;
  hw::CbBytes image{};
  // Stores one CB (the `i`th of a run) into the next slot.
  void put(std::uint64_t i) {
    const std::uint64_t tag = next, address = (i % (kBufferBytes / kFillBytes)) * kFillBytes;
    std::memcpy(image.data(), &tag, sizeof tag);  // what differs from CB to CB
    std::memcpy(image.data() + 64, &address, sizeof address);
    std::memcpy(slots.data() + std::size_t(next % kRingSlots) * hw::kCbBytes, image.data(), hw::kCbBytes);
    ++next;
  }
  // Stores `n` CBs, publishing the index once at the end; returns wall-clock nanoseconds.
  double store(std::uint64_t n) {
    const auto t0 = std::chrono::steady_clock::now();
    for (std::uint64_t i = 0; i < n; ++i) put(i);
    producer.store(next, std::memory_order_release);
    benchmark::ClobberMemory();
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  }
};

void BM_RingStoreBaseline(benchmark::State& state) {
  const auto n = static_cast<std::uint64_t>(state.range(0));
  Ring ring;
  double ns = 0;
  for (auto _ : state) ns += ring.store(n);
  const double per_cb = ns / static_cast<double>(n * state.iterations());
  spyre_bench::record_rate(kBaselineKey, per_cb);
  state.SetItemsProcessed(static_cast<std::int64_t>(n * state.iterations()));
  state.counters["ns_per_cb"] = per_cb;
}

double baseline_ns_per_cb() {
  if (auto r = spyre_bench::find_rate(kBaselineKey)) return *r;
  Ring ring;
  std::vector<double> runs;
  for (int i = 0; i < 5; ++i) runs.push_back(ring.store(16384) / 16384);
  std::sort(runs.begin(), runs.end());
  spyre_bench::record_rate(kBaselineKey, runs[2]);
  return runs[2];
}

// --- The handle contract's floor ---------------------------------------------------------------

constexpr const char* kFloorKey = "handle_floor_ns";

struct FloorOp {
  std::weak_ptr<int> core;
  std::shared_ptr<int> dst;
};

void BM_HandleContractFloor(benchmark::State& state) {
  const auto n = static_cast<std::uint64_t>(state.range(0));
  auto core = std::make_shared<int>(1);
  const std::weak_ptr<int> weak_core = core;
  const auto dst = std::make_shared<int>(2);
  std::mutex engine_lock;
  std::vector<std::shared_ptr<FloorOp>> ops(n), handles(n);
  std::deque<std::shared_ptr<FloorOp>> window;
  Ring ring;
  double ns = 0;
  for (auto _ : state) {
    state.PauseTiming();  // fresh ops, as the engine's pool hands them out (made outside the timing)
    window.clear();
    for (std::uint64_t i = 0; i < n; ++i) handles[i] = ops[i] = std::make_shared<FloorOp>();
    state.ResumeTiming();
    const auto t0 = std::chrono::steady_clock::now();
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::shared_ptr<int> engine = weak_core.lock();  // Stream -> engine
      FloorOp& op = *ops[i];
      op.core = weak_core;  // the op's way back to its engine
      op.dst = dst;         // the op keeps its buffer alive
      {
        std::lock_guard<std::mutex> lock(engine_lock);
        window.push_back(ops[i]);  // the stream's reference
        ring.put(i);
        ring.producer.store(ring.next, std::memory_order_release);  // the doorbell, batched or not
      }
      handles[i].reset();  // the caller drops the returned handle
    }
    ns += std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  }
  const double per_op = ns / static_cast<double>(n * state.iterations());
  spyre_bench::record_rate(kFloorKey, per_op);
  state.SetItemsProcessed(static_cast<std::int64_t>(n * state.iterations()));
  state.counters["ns_per_cb"] = per_op;
}

// --- The engine ---------------------------------------------------------------------------------

template <bool kBatched>
void BM_Submit(benchmark::State& state) {
  const auto n = static_cast<std::uint64_t>(state.range(0));
  Rig rig;
  const EngineStats before = rig.engine->stats();
  const std::uint64_t slots = kBufferBytes / kFillBytes;
  // A byte-uniform pattern: refdev fills it with a plain memset, which keeps the untimed drain
  // short. The pattern does not affect submission.
  const std::uint32_t pattern = 0xA5A5A5A5u;
  const double submit_ns = timed_submissions(state, rig, [&] {
    if constexpr (kBatched) {
      auto batch = rig.engine->batch();
      for (std::uint64_t i = 0; i < n; ++i) {
        benchmark::DoNotOptimize(rig.stream.fill(rig.buf, (i % slots) * kFillBytes, kFillBytes, pattern));
      }
    } else {
      for (std::uint64_t i = 0; i < n; ++i) {
        benchmark::DoNotOptimize(rig.stream.fill(rig.buf, (i % slots) * kFillBytes, kFillBytes, pattern));
      }
    }
  });

  const EngineStats after = rig.engine->stats();
  const double cbs = static_cast<double>(after.cbs_submitted - before.cbs_submitted);
  const double doorbells = static_cast<double>(after.doorbells - before.doorbells);
  if (cbs != static_cast<double>(n * state.iterations())) {
    state.SkipWithError(("expected one CB per op, got " + std::to_string(cbs) + " CBs for " +
                         std::to_string(n * state.iterations()) + " ops").c_str());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(cbs));
  // A plain number (not a rate, which the report would print in seconds): wall-clock submission
  // nanoseconds per CB, the batch guard's closing doorbell included.
  state.counters["ns_per_cb"] = cbs > 0 ? submit_ns / cbs : 0.0;
  state.counters["vs_ring_store"] = cbs > 0 ? submit_ns / cbs / baseline_ns_per_cb() : 0.0;
  state.counters["doorbells_per_cb"] = cbs > 0 ? doorbells / cbs : 0.0;
  if (const auto floor = spyre_bench::find_rate(kFloorKey); floor && cbs > 0) {
    state.counters["vs_floor"] = submit_ns / cbs / *floor;
  }
  state.counters["stalls"] = static_cast<double>(after.queue_full_stalls - before.queue_full_stalls +
                                                 after.staging_stalls - before.staging_stalls);
}

void Sizes(benchmark::internal::Benchmark* b) {
  b->ArgName("ops")->Arg(256)->Arg(4096)->Arg(16384);
  // Real time: submission is one thread, and what a caller waits is wall-clock. The untimed drain
  // costs about as much again as the timed part, so MinTime stays small.
  b->UseRealTime()->MinTime(spyre_bench::min_time(0.2))->Unit(benchmark::kMicrosecond);
}

// CBs of ops that span many: each op is a fill of kCbsPerOp flits with CBs cut at one flit
// (EngineOptions::max_cb_bytes = 128), so the op's own overhead (validation, op state, the lock)
// is shared by its CBs and what remains is the per-CB path (cutting, tags, encoding, the ring).
void BM_SubmitManyCbsPerOp(benchmark::State& state) {
  constexpr std::uint64_t kCbsPerOp = 64;
  const auto ops = static_cast<std::uint64_t>(state.range(0));
  Rig rig(kFillBytes);
  const EngineStats before = rig.engine->stats();
  const std::uint64_t op_bytes = kCbsPerOp * kFillBytes;
  const std::uint64_t slots = kBufferBytes / op_bytes;
  const double submit_ns = timed_submissions(state, rig, [&] {
    for (std::uint64_t i = 0; i < ops; ++i) {
      benchmark::DoNotOptimize(rig.stream.fill(rig.buf, (i % slots) * op_bytes, op_bytes, 0xA5A5A5A5u));
    }
  });
  const EngineStats after = rig.engine->stats();
  const double cbs = static_cast<double>(after.cbs_submitted - before.cbs_submitted);
  state.SetItemsProcessed(static_cast<std::int64_t>(cbs));
  state.counters["ns_per_cb"] = cbs > 0 ? submit_ns / cbs : 0.0;
  state.counters["vs_ring_store"] = cbs > 0 ? submit_ns / cbs / baseline_ns_per_cb() : 0.0;
  state.counters["cbs_per_op"] = cbs / static_cast<double>(ops * state.iterations());
}

// Registered first: the baseline is recorded before the rows that are compared with it.
BENCHMARK(BM_RingStoreBaseline)->ArgName("cbs")->Arg(16384)->UseRealTime()->MinTime(spyre_bench::min_time(0.2))->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_HandleContractFloor)->ArgName("ops")->Arg(4096)->UseRealTime()->MinTime(spyre_bench::min_time(0.2))->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SubmitManyCbsPerOp)->ArgName("ops")->Arg(256)->UseRealTime()->MinTime(spyre_bench::min_time(0.2))->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_Submit, false)->Name("BM_SubmitUnbatched")->Apply(Sizes);
BENCHMARK_TEMPLATE(BM_Submit, true)->Name("BM_SubmitBatched")->Apply(Sizes);

}  // namespace
