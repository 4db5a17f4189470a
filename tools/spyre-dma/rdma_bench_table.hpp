// rdma-bench's table and JSON, one shape for both of its runs (UCX between processes, the
// simulated cluster): per size, the bandwidth of a window of transfers in flight and the latency of
// one transfer at a time, as its distribution (p50 and p99 in the table; p50, p90, p99, p99.9 and
// the largest in the JSON), the way perftest's ib_*_lat and ucx_perftest report it.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "spyre_dma/percentiles.hpp"

namespace spyre_dma_cli {

// `bandwidth_unit` heads the bandwidth columns ("GB/s", "Gb/s").
void print_rdma_table_header(const char* bandwidth_unit);
// One size: `on[0]` put, `on[1]` get (a "-" where not run).
void print_rdma_table_row(std::uint64_t bytes, unsigned iterations, const bool on[2], const double bandwidth[2],
                          const spyre_dma::Percentiles latency_us[2], int bandwidth_decimals);
// {bandwidth_key: ..., "latency_us": p50, "p50_us", "p90_us", "p99_us", "p999_us", "max_us", "samples"}.
nlohmann::json rdma_json_cell(const char* bandwidth_key, double bandwidth, const spyre_dma::Percentiles& latency_us);

}  // namespace spyre_dma_cli
