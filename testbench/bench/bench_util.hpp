// Helpers shared by the throughput benchmarks (header-only; every benchmark is its own executable).
//
//   * HostBlock: page-aligned host memory, pre-faulted (every page written) before any timing.
//   * A per-process table of rates measured in this run, so that a benchmark can report its
//     throughput relative to a baseline measured by another benchmark of the same run (same
//     machine, same moment): record_rate() / find_rate().
//   * measure_copy_rate(): a quick stand-alone memcpy measurement, used when the baseline
//     benchmark was filtered out of the run.
//   * LatencySamples: every op's latency, reported as its distribution.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "spyre_dma/percentiles.hpp"

namespace spyre_bench {

inline constexpr std::size_t kMiB = std::size_t{1} << 20;

inline std::string mib_label(std::size_t bytes) { return std::to_string(bytes / kMiB) + "MiB"; }

// A benchmark's minimum time, or a token one when SPYRE_DMA_BENCH_QUICK is set: the CTest entries
// (label `bench`) run every benchmark that way, to check that it runs, not how fast.
inline double min_time(double seconds) {
  const char* quick = std::getenv("SPYRE_DMA_BENCH_QUICK");
  return quick && *quick && std::strcmp(quick, "0") != 0 ? 0.001 : seconds;
}

// Page-aligned memory, every page touched (filled with `seed`-derived bytes) at construction.
class HostBlock {
 public:
  explicit HostBlock(std::size_t bytes, std::uint8_t seed = 0x5A) : bytes_(bytes) {
    const std::size_t rounded = (bytes + 4095) / 4096 * 4096;
    data_ = static_cast<std::uint8_t*>(std::aligned_alloc(4096, rounded));
    if (!data_) throw std::bad_alloc();
    fill(seed);
  }
  ~HostBlock() { std::free(data_); }
  HostBlock(const HostBlock&) = delete;
  HostBlock& operator=(const HostBlock&) = delete;

  std::uint8_t* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return bytes_; }
  // A non-constant pattern (so a lost or misplaced block shows up in a comparison).
  void fill(std::uint8_t seed) noexcept {
    auto* w = reinterpret_cast<std::uint64_t*>(data_);
    const std::size_t words = bytes_ / 8;
    std::uint64_t x = 0x9E3779B97F4A7C15ull * (seed + 1u);
    for (std::size_t i = 0; i < words; ++i) {
      x += 0x9E3779B97F4A7C15ull;
      w[i] = x;
    }
    for (std::size_t i = words * 8; i < bytes_; ++i) data_[i] = static_cast<std::uint8_t>(seed + i);
  }

 private:
  std::uint8_t* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// Rates (bytes per second of wall-clock time) measured in this process, by key.
inline std::map<std::string, double>& rate_table() {
  static std::map<std::string, double> table;
  return table;
}
inline void record_rate(const std::string& key, double bytes_per_second) {
  rate_table()[key] = bytes_per_second;
}
inline std::optional<double> find_rate(const std::string& key) {
  const auto& t = rate_table();
  const auto it = t.find(key);
  if (it == t.end()) return std::nullopt;
  return it->second;
}

// Wall-clock seconds since construction.
class WallTimer {
 public:
  WallTimer() : t0_(std::chrono::steady_clock::now()) {}
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }

 private:
  std::chrono::steady_clock::time_point t0_;
};

// The latency of every op of a row, reported next to its mean as the counters p50_us, p90_us,
// p99_us and p999_us (nearest rank): perftest, ucx_perftest and TransferBench report percentiles,
// and a runtime cares about the tail. The counters travel in the benchmark's JSON output
// (--benchmark_format=json, --benchmark_out).
class LatencySamples {
 public:
  LatencySamples() { us_.reserve(1 << 16); }
  // Times one call of `op` and returns what it returns.
  template <class Op>
  auto time(Op&& op) {
    const auto t0 = std::chrono::steady_clock::now();
    struct Record {
      LatencySamples& self;
      std::chrono::steady_clock::time_point t0;
      ~Record() { self.add(std::chrono::steady_clock::now() - t0); }
    } record{*this, t0};
    return op();
  }
  void add(std::chrono::steady_clock::duration d) {
    us_.push_back(std::chrono::duration<double, std::micro>(d).count());
  }
  spyre_dma::Percentiles summary() const { return spyre_dma::percentiles(us_); }
  void report(benchmark::State& state) const {
    const spyre_dma::Percentiles p = summary();
    state.counters["p50_us"] = p.p50;
    state.counters["p90_us"] = p.p90;
    state.counters["p99_us"] = p.p99;
    state.counters["p999_us"] = p.p999;
  }

 private:
  std::vector<double> us_;
};

// Median rate of `reps` single-thread memcpy passes of `bytes` between two pre-faulted blocks.
inline double measure_copy_rate(std::size_t bytes, int reps = 5) {
  HostBlock src(bytes, 1), dst(bytes, 2);
  std::vector<double> rates;
  for (int r = 0; r < reps; ++r) {
    WallTimer t;
    std::memcpy(dst.data(), src.data(), bytes);
    rates.push_back(static_cast<double>(bytes) / t.seconds());
  }
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() / 2];
}

}  // namespace spyre_bench
