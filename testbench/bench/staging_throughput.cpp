// Pageable-memory throughput through the engine's staging pipeline, against its two stages.
//
// A pageable H2D is two stages that the engine overlaps: (a) a host copy of each piece into a
// registered staging buffer (EngineOptions default: 8 buffers of 4 MiB), then (b) the device's DMA
// out of that buffer. D2H runs the other way: DMA into staging, then a copy out. All three are
// measured here on 256 MiB in the same run:
//
//   BM_StageHostCopy/to_staging     (a) for H2D: memcpy of 256 MiB from a pre-faulted pageable
//                                   buffer into a ring of 8 x 4 MiB buffers, 4 MiB at a time
//   BM_StageHostCopy/from_staging   (a) for D2H: the same, ring -> pageable
//   BM_StageDmaH2D, BM_StageDmaD2H  (b): refdev with registered buffers of 256 MiB (no staging)
//   BM_PageableH2D, BM_PageableD2H  the real thing: std::vector (pre-faulted) <-> device,
//       /one_op    as one copy_h2d / copy_d2h of 256 MiB (how a caller would write it)
//       /ops_4MiB  as 64 back-to-back ops of 4 MiB (one staging buffer each), one synchronize
//       /one_op_no_staging_threads  one_op with EngineOptions::staging_threads = 0
//
// Counters of the pageable rows:
//   vs_slower_stage  pageable rate / min(stage a, stage b) of the same direction (target >= 0.8)
//   stage_a_GiBps, stage_b_GiBps  the two stage rates it was compared with, in GiB/s (the unit of
//                    the bytes_per_second column, which Google Benchmark prints as "G/s")
//   staging_stalls   times per transfer an op found no free staging buffer
// Stages filtered out of the run are measured quickly (median of 5) in their place.
//
// Run: build/default/testbench/bench/staging_throughput
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "bench_util.hpp"
#include "spyre_dma/refdev/ref_device.hpp"
#include "spyre_dma/spyre_dma.hpp"

namespace {

using namespace spyre_dma;
using spyre_bench::HostBlock;
using spyre_bench::kMiB;
using spyre_bench::WallTimer;

constexpr std::size_t kBytes = 256 * kMiB;
// A 256 MiB transfer takes tens of milliseconds; anything near this is a stall.
constexpr auto kWait = std::chrono::seconds(5);
// The engine's default staging geometry: what the pipeline runs with.
const std::size_t kStageBytes = EngineOptions{}.staging_buffer_bytes;
const std::size_t kStageCount = EngineOptions{}.staging_buffers;

// --- (a) the host copy stage ----------------------------------------------------------------

struct CopyStage {
  std::vector<std::uint8_t> pageable;
  std::vector<std::unique_ptr<HostBlock>> ring;
  CopyStage() : pageable(kBytes) {
    HostBlock seed(kBytes, 3);
    std::memcpy(pageable.data(), seed.data(), kBytes);  // pre-faults
    for (std::size_t i = 0; i < kStageCount; ++i) ring.push_back(std::make_unique<HostBlock>(kStageBytes));
  }
  // One pass of kBytes through the ring, piece by piece.
  void pass(bool to_staging) {
    std::size_t slot = 0;
    for (std::size_t off = 0; off < kBytes; off += kStageBytes) {
      const std::size_t n = std::min(kStageBytes, kBytes - off);
      std::uint8_t* staging = ring[slot]->data();
      if (to_staging) std::memcpy(staging, pageable.data() + off, n);
      else std::memcpy(pageable.data() + off, staging, n);
      slot = (slot + 1) % ring.size();
    }
  }
  static CopyStage& get() {
    static CopyStage s;
    return s;
  }
};

std::string key(const char* stage, bool h2d) { return std::string(stage) + (h2d ? "/h2d" : "/d2h"); }

void BM_StageHostCopy(benchmark::State& state, bool to_staging) {
  CopyStage& s = CopyStage::get();
  WallTimer t;
  for (auto _ : state) {
    s.pass(to_staging);
    benchmark::ClobberMemory();
  }
  const double rate = static_cast<double>(kBytes) * static_cast<double>(state.iterations()) / t.seconds();
  spyre_bench::record_rate(key("host_copy", to_staging), rate);
  state.SetBytesProcessed(static_cast<std::int64_t>(kBytes) * state.iterations());
}

// --- (b) the DMA stage and the pageable pipeline: one engine each, kept for the run -----------

struct Rig {
  bool registered;
  std::shared_ptr<refdev::RefDevice> dev;
  std::unique_ptr<Engine> engine;
  Stream stream;
  DeviceBuffer buf;
  HostBuffer reg_in, reg_out;                 // registered
  std::vector<std::uint8_t> page_in, page_out;  // pageable
  std::uint8_t* in = nullptr;
  std::uint8_t* out = nullptr;
  std::string error;

  Rig(bool reg, unsigned staging_threads) : registered(reg) {
    dev = std::make_shared<refdev::RefDevice>();
    EngineOptions options;
    options.staging_threads = staging_threads;
    engine = Engine::open(dev, options);
    stream = engine->create_stream();
    buf = engine->allocate(kBytes);
    if (registered) {
      reg_in = engine->allocate_host(kBytes);
      reg_out = engine->allocate_host(kBytes);
      in = static_cast<std::uint8_t*>(reg_in.data());
      out = static_cast<std::uint8_t*>(reg_out.data());
    } else {
      page_in.resize(kBytes);
      page_out.resize(kBytes);
      in = page_in.data();
      out = page_out.data();
    }
    HostBlock seed(kBytes, 9);
    std::memcpy(in, seed.data(), kBytes);  // pre-faults
    std::memset(out, 0, kBytes);
    // Warm-up round trip: touches every device page, checks the data and the path taken. In
    // staging-sized ops, so that it does not depend on how the engine handles one large op.
    submit(true, kStageBytes);
    submit(false, kStageBytes);
    const Status st = stream.synchronize(kWait);
    const std::uint64_t staged = engine->stats().bytes_staged;
    if (!st.ok()) fail("warm-up failed: " + st.to_string());
    else if (std::memcmp(in, out, kBytes) != 0) fail("warm-up round trip: data mismatch");
    else if (registered && staged != 0) fail("registered buffers were staged");
    else if (!registered && staged != 2 * kBytes) fail("pageable buffers were not (all) staged");
  }
  // Submits one direction's kBytes as ops of at most `op_bytes` (0: one op).
  void submit(bool h2d, std::size_t op_bytes) {
    const std::size_t step = op_bytes ? op_bytes : kBytes;
    for (std::size_t off = 0; off < kBytes; off += step) {
      const std::size_t n = std::min(step, kBytes - off);
      if (h2d) stream.copy_h2d(buf, off, in + off, n);
      else stream.copy_d2h(out + off, buf, off, n);
    }
  }
  // Records the error and cancels whatever is stuck, so the run (and the engine's shutdown,
  // which would otherwise wait out the CB timeout) goes on.
  void fail(const std::string& why) {
    if (error.empty()) error = why;
    recover();
  }
  void recover() {
    (void)engine->reset(std::chrono::seconds(10));
    (void)stream.synchronize(std::chrono::seconds(10));  // clears the stream's cancelled status
  }
  double transfer(bool h2d) {  // one transfer of kBytes in one op; returns seconds, < 0 on failure
    WallTimer t;
    submit(h2d, 0);
    if (!stream.synchronize(kWait).ok()) return -1;
    return t.seconds();
  }
  static Rig& get(bool registered, unsigned staging_threads = EngineOptions{}.staging_threads) {
    static std::map<std::pair<bool, unsigned>, std::unique_ptr<Rig>> rigs;
    auto& r = rigs[{registered, staging_threads}];
    if (!r) r = std::make_unique<Rig>(registered, staging_threads);
    return *r;
  }
};

// Times `kBytes` per iteration in ops of at most `op_bytes` (0: one op). A transfer that does not
// complete within kWait stops the benchmark with an error naming what the engine was waiting for.
void run_transfers(benchmark::State& state, Rig& rig, bool h2d, std::size_t op_bytes) {
  if (!rig.error.empty()) {
    state.SkipWithError(rig.error.c_str());
    return;
  }
  for (auto _ : state) {
    rig.submit(h2d, op_bytes);
    const Status st = rig.stream.synchronize(kWait);
    if (!st.ok()) {
      const EngineStats s = rig.engine->stats();
      const std::string why =
          st.to_string() + " (ops " + std::to_string(s.ops_completed) + "/" + std::to_string(s.ops_submitted) +
          " done, CBs " + std::to_string(s.cbs_completed) + "/" + std::to_string(s.cbs_submitted) +
          ", staging_stalls " + std::to_string(s.staging_stalls) + ", queue_full_stalls " +
          std::to_string(s.queue_full_stalls) + ")";
      rig.recover();  // the next benchmark starts from a working engine
      state.SkipWithError(why.c_str());
      return;
    }
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(kBytes) * state.iterations());
}

template <bool kH2D>
void BM_StageDma(benchmark::State& state) {
  Rig& rig = Rig::get(true);
  WallTimer t;
  run_transfers(state, rig, kH2D, 0);
  if (state.error_occurred()) return;
  spyre_bench::record_rate(key("dma", kH2D),
                           static_cast<double>(kBytes) * static_cast<double>(state.iterations()) / t.seconds());
}

// A stage rate from this run, or (filtered out) a quick median-of-5 measurement.
double stage_rate(const char* stage, bool h2d) {
  if (auto r = spyre_bench::find_rate(key(stage, h2d))) return *r;
  std::vector<double> rates;
  for (int i = 0; i < 5; ++i) {
    if (std::string(stage) == "host_copy") {
      WallTimer t;
      CopyStage::get().pass(h2d);
      rates.push_back(static_cast<double>(kBytes) / t.seconds());
    } else {
      const double s = Rig::get(true).transfer(h2d);
      rates.push_back(s > 0 ? static_cast<double>(kBytes) / s : 0.0);
    }
  }
  std::sort(rates.begin(), rates.end());
  spyre_bench::record_rate(key(stage, h2d), rates[2]);
  return rates[2];
}

// op_bytes 0: the whole 256 MiB as one copy_h2d / copy_d2h (how a user calls it); otherwise
// ops of that size, back to back, one synchronize.
template <bool kH2D>
void BM_Pageable(benchmark::State& state, std::size_t op_bytes, unsigned staging_threads) {
  const double a = stage_rate("host_copy", kH2D);
  const double b = stage_rate("dma", kH2D);
  Rig& rig = Rig::get(false, staging_threads);
  const EngineStats before = rig.engine->stats();
  WallTimer t;
  run_transfers(state, rig, kH2D, op_bytes);
  if (state.error_occurred()) return;
  const double rate = static_cast<double>(kBytes) * static_cast<double>(state.iterations()) / t.seconds();
  const EngineStats after = rig.engine->stats();
  state.counters["vs_slower_stage"] = rate / std::min(a, b);
  // In GiB/s, like the bytes_per_second column (Google Benchmark's "G/s" there is 2^30 bytes/s).
  state.counters["stage_a_GiBps"] = a / (1u << 30);
  state.counters["stage_b_GiBps"] = b / (1u << 30);
  state.counters["staging_stalls"] =
      static_cast<double>(after.staging_stalls - before.staging_stalls) / static_cast<double>(state.iterations());
}

void BM_PageableH2D(benchmark::State& state, std::size_t op_bytes, unsigned staging_threads) {
  BM_Pageable<true>(state, op_bytes, staging_threads);
}
void BM_PageableD2H(benchmark::State& state, std::size_t op_bytes, unsigned staging_threads) {
  BM_Pageable<false>(state, op_bytes, staging_threads);
}

void Common(benchmark::internal::Benchmark* b) {
  b->UseRealTime()->MinTime(spyre_bench::min_time(0.5))->Unit(benchmark::kMillisecond);
}

// Registered in this order: the stages run (and are recorded) before the pipeline.
BENCHMARK_CAPTURE(BM_StageHostCopy, to_staging, true)->Apply(Common);
BENCHMARK_CAPTURE(BM_StageHostCopy, from_staging, false)->Apply(Common);
BENCHMARK_TEMPLATE(BM_StageDma, true)->Name("BM_StageDmaH2D")->Apply(Common);
BENCHMARK_TEMPLATE(BM_StageDma, false)->Name("BM_StageDmaD2H")->Apply(Common);
BENCHMARK_CAPTURE(BM_PageableH2D, one_op, 0, 1)->Apply(Common);
BENCHMARK_CAPTURE(BM_PageableD2H, one_op, 0, 1)->Apply(Common);
BENCHMARK_CAPTURE(BM_PageableH2D, ops_4MiB, 4 * kMiB, 1)->Apply(Common);
BENCHMARK_CAPTURE(BM_PageableD2H, ops_4MiB, 4 * kMiB, 1)->Apply(Common);
// The same without staging threads: the submitting and completing threads copy.
BENCHMARK_CAPTURE(BM_PageableH2D, one_op_no_staging_threads, 0, 0)->Apply(Common);
BENCHMARK_CAPTURE(BM_PageableD2H, one_op_no_staging_threads, 0, 0)->Apply(Common);

}  // namespace
