// The demo's console output: a fixed-width table, one row per sweep point, printed as the points
// complete.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "sweep.hpp"

namespace spyre_dma_cli {

// "812 ns", "12.3 us", "4.56 ms", "1.23 s".
std::string format_duration(std::uint64_t ns);

class ReportTable {
 public:
  explicit ReportTable(std::FILE* out) : out_(out) {}
  void header();
  void row(const PointResult& r);
  void rule();

 private:
  std::FILE* out_;
};

}  // namespace spyre_dma_cli
