// rdma-bench's table and JSON (see rdma_bench_table.hpp).
#include "rdma_bench_table.hpp"

#include <fmt/format.h>

#include <string>

namespace spyre_dma_cli {

void print_rdma_table_header(const char* unit) {
  fmt::print("{:>12} {:>11} {:>14} {:>12} {:>12} {:>14} {:>12} {:>12}\n", "#bytes", "#iterations",
             fmt::format("put BW [{}]", unit), "put p50 [us]", "put p99 [us]", fmt::format("get BW [{}]", unit),
             "get p50 [us]", "get p99 [us]");
}

void print_rdma_table_row(std::uint64_t bytes, unsigned iterations, const bool on[2], const double bandwidth[2],
                          const spyre_dma::Percentiles latency_us[2], int bandwidth_decimals) {
  auto cell = [](bool run, double v, int width, int decimals) {
    return run ? fmt::format("{:>{}.{}f}", v, width, decimals) : fmt::format("{:>{}}", "-", width);
  };
  std::string line = fmt::format("{:>12} {:>11}", bytes, iterations);
  for (int op = 0; op < 2; ++op) {
    line += " " + cell(on[op], bandwidth[op], 14, bandwidth_decimals);
    line += " " + cell(on[op], latency_us[op].p50, 12, 3);
    line += " " + cell(on[op], latency_us[op].p99, 12, 3);
  }
  fmt::print("{}\n", line);
}

nlohmann::json rdma_json_cell(const char* bandwidth_key, double bandwidth, const spyre_dma::Percentiles& l) {
  return {{bandwidth_key, bandwidth}, {"latency_us", l.p50}, {"p50_us", l.p50},   {"p90_us", l.p90},
          {"p99_us", l.p99},          {"p999_us", l.p999},   {"max_us", l.max}, {"samples", l.count}};
}

}  // namespace spyre_dma_cli
