// `spyre-dma regress --duration T`: a soak. Seeds are drawn one after another until T has passed;
// this keeps the figures a soak is judged by: the invariant counters (lost, duplicated and
// corrupted data must all stay zero) and the resident memory of every worker process, sampled
// between its tests, so that a leak shows as growth from its first test to its last.
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

class SoakMonitor {
 public:
  // A worker finished a test and waits for the next: sample its memory now.
  void sample(pid_t worker);
  // Adds the soak block to the summary table and to the JSON report.
  std::string summary(const spyre_dma::regress::Report& report, std::chrono::seconds duration) const;
  nlohmann::json to_json(const spyre_dma::regress::Report& report, std::chrono::seconds duration) const;
  // The largest growth of one worker's RSS from its first sample to its last, in percent.
  double worst_growth_percent() const;
  // Lost, duplicated and corrupted findings over all tests; a soak passes only with zero.
  struct Invariants {
    std::uint64_t lost = 0, duplicated = 0, corrupted = 0;
  };
  static Invariants invariants(const spyre_dma::regress::Report& report);

 private:
  struct Memory {
    std::uint64_t first = 0, last = 0, peak = 0;
    std::uint64_t samples = 0;
    std::vector<std::uint64_t> series;  // every sample, in test order (for a plot of the soak)
  };
  std::map<pid_t, Memory> workers_;
};

}  // namespace spyre_dma_cli
