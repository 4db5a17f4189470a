// `spyre-dma regress`'s progress on stderr as test results come in: a bar with the pass/fail
// counts, throughput and ETA (each failure printed above it with its reproducer), or one line
// per test, or nothing.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "report.hpp"

namespace spyre_dma_cli {

class Progress {
 public:
  // `mode`: auto (a bar on a terminal, else lines), bar, lines or none; `total`: tests expected.
  Progress(const std::string& mode, std::size_t total);
  void done(const spyre_dma::regress::CaseResult& c);
  void finish();

 private:
  using Clock = std::chrono::steady_clock;
  std::size_t total_, done_ = 0, failed_ = 0;
  std::uint64_t ops_ = 0;
  Clock::time_point t0_;
  bool bar_ = false, quiet_ = false;
};

}  // namespace spyre_dma_cli
