// `spyre-dma regress --duration T`: a soak. Seeds are drawn one after another until T has passed;
// this keeps the figures a soak is judged by: the invariant counters (lost, duplicated and
// corrupted data must all stay zero) and the resident memory of every worker process, sampled
// between its tests, with the heap it still had allocated. A worker's allocator caches and free
// lists fill over its first tests, so the growth that counts is from the end of a warm-up to its
// last test: a leak grows on after that, a cache that has filled does not.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report.hpp"

namespace spyre_dma_cli {

// "90s", "30m", "1h", "1h30m" or plain seconds ("3600"); nullopt when it is none of these.
std::optional<std::chrono::seconds> parse_duration(const std::string& text);

// Resident set size of a process in bytes (from /proc/PID/statm), 0 when it cannot be read.
std::uint64_t resident_bytes(pid_t pid);

// The key of a soak worker's result line that carries its heap in use after the test (bytes
// allocated and not freed, glibc's mallinfo2: arenas plus mmapped blocks).
inline constexpr const char* kHeapInUseKey = "soak_heap_in_use_bytes";

// In a soak's worker process, before its first test: allocator settings under which the RSS the
// parent samples is what the process holds.
void prepare_soak_worker();
// In a soak's worker process, after a test: hands freed heap back to the system and adds the heap
// still in use to the test's result line (kHeapInUseKey).
void add_heap_in_use(nlohmann::json& result);

class SoakMonitor {
 public:
  using Clock = std::chrono::steady_clock;
  // Samples taken before `settled_at` are the warm-up; the first one after it is the baseline.
  explicit SoakMonitor(Clock::time_point settled_at = {}) : settled_at_(settled_at) {}
  // A worker finished a test and waits for the next: sample its RSS now, with the heap in use it
  // reported (0: not reported).
  void sample(pid_t worker, std::uint64_t heap_in_use);
  // Adds the soak block to the summary table and to the JSON report.
  std::string summary(const spyre_dma::regress::Report& report, std::chrono::seconds duration) const;
  nlohmann::json to_json(const spyre_dma::regress::Report& report, std::chrono::seconds duration) const;
  // The largest growth of one worker's RSS from its baseline (its first sample after the warm-up,
  // or its first sample when it never got past the warm-up) to its last, in percent.
  double worst_growth_percent() const;
  // Lost, duplicated and corrupted findings over all tests; a soak passes only with zero.
  struct Invariants {
    std::uint64_t lost = 0, duplicated = 0, corrupted = 0;
  };
  static Invariants invariants(const spyre_dma::regress::Report& report);

 private:
  struct Memory {
    std::uint64_t first = 0, settled = 0, last = 0, peak = 0;  // RSS
    std::uint64_t heap_first = 0, heap_settled = 0, heap_last = 0;  // heap in use at the same samples
    std::uint64_t samples = 0, warmup_samples = 0;  // warm-up: samples before the baseline
    std::vector<std::uint64_t> series, heap_series;  // every sample, in test order (for a plot of the soak)
  };
  static std::uint64_t baseline(const Memory& m) { return m.settled ? m.settled : m.first; }
  static std::uint64_t heap_baseline(const Memory& m) { return m.settled ? m.heap_settled : m.heap_first; }
  Clock::time_point settled_at_;
  std::map<pid_t, Memory> workers_;
};

}  // namespace spyre_dma_cli
