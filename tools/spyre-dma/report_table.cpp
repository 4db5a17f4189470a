#include "report_table.hpp"

#include <fmt/format.h>

#include "size_spec.hpp"

namespace spyre_dma_cli {

std::string format_duration(std::uint64_t ns) {
  const double v = static_cast<double>(ns);
  if (ns < 1000) return fmt::format("{} ns", ns);
  if (ns < 1000000) return fmt::format("{:.1f} us", v / 1e3);
  if (ns < 1000000000) return fmt::format("{:.2f} ms", v / 1e6);
  return fmt::format("{:.2f} s", v / 1e9);
}

namespace {
constexpr const char* kRow = "{:>10}  {:<9}  {:<11}  {:>11}  {:>8}  {}\n";
}

void ReportTable::header() {
  fmt::print(out_, kRow, "size", "direction", "host memory", "median", "GB/s", "notes");
  rule();
}

void ReportTable::rule() { fmt::print(out_, "{}\n", std::string(70, '-')); }

void ReportTable::row(const PointResult& r) {
  std::string notes;
  if (r.verified) notes = "verified";
  if (r.streams_used > 1) notes += (notes.empty() ? "" : ", ") + fmt::format("{} streams", r.streams_used);
  if (!r.device_gb_per_s.empty()) {  // several devices: the row's GB/s is all of them together
    std::string each;
    for (const double g : r.device_gb_per_s) each += (each.empty() ? "" : " ") + fmt::format("{:.1f}", g);
    notes += (notes.empty() ? "" : ", ") + fmt::format("{} devices, each GB/s: {}", r.device_gb_per_s.size(), each);
  }
  std::string line = fmt::format(kRow, format_size(r.bytes), to_string(r.direction), to_string(r.memory),
                                 format_duration(r.median_ns), fmt::format("{:.2f}", r.gb_per_s), notes);
  line.erase(line.find_last_not_of(" \n") + 1);
  fmt::print(out_, "{}\n", line);
  std::fflush(out_);
}

}  // namespace spyre_dma_cli
