// NVIDIA nvbandwidth JSON importer (`nvbandwidth --json` output from other machines). Only
// TraceError may escape parse_nvbandwidth_results() and nvbandwidth_trace(); the report counts
// every testcase exactly once; points, concurrent cells and latencies keep their input order
// (non-decreasing lines, each known), points the buffer size and a positive bandwidth with a
// finite copy time, cells and latencies a GPU of the report's count; the trace built from them
// passes check_trace() and can be written.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz_support.hpp"
#include "spyre_dma/traces/nvbandwidth.hpp"
#include "spyre_dma/traces/trace_io.hpp"

using namespace spyre_dma::traces;
using spyre_dma::fuzz::expect_only;
using spyre_dma::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  // Both ways of sizing the buffer: the version's default (0), or a size the caller gives.
  const std::uint64_t buffer = size % 2 == 0 ? 0 : 4ull << 20;
  expect_only<TraceError>("nvbandwidth import", [&] {
    NvbandwidthReport report;
    const NvbandwidthResults results = parse_nvbandwidth_results(text, "fuzz.json", buffer, report);
    const std::vector<BandwidthPoint>& points = results.points;
    require(!points.empty() || !results.cells.empty() || !results.latencies.empty(),
            "an accepted file has something to import");
    require(report.points == points.size(), "the report counts the points returned");
    require(report.groups == results.cells.size(), "the report counts the concurrent cells returned");
    require(report.latency_points == results.latencies.size(), "the report counts the latencies returned");
    require(points.empty() || report.imported > 0, "points come from an imported testcase");
    require(report.imported + report.bidirectional + report.concurrent + report.latency + report.not_passed +
                    report.sm_copies + report.between_gpus + report.multinode + report.unknown +
                    report.without_value ==
                report.testcases,
            "every testcase counted exactly once");
    require(buffer == 0 ? report.buffer_bytes_assumed && report.buffer_bytes > 0
                        : !report.buffer_bytes_assumed && report.buffer_bytes == buffer,
            "the buffer size is the one given, else the version's default");
    require(points.empty() || (std::isfinite(report.bandwidth_resolution_gbps) && report.bandwidth_resolution_gbps > 0),
            "a printed resolution for the points");
    std::size_t last_line = 1;
    for (const BandwidthPoint& p : points) {
      require(p.line >= last_line, "points in input order, each with its cell's line");
      last_line = p.line;
      require(p.bytes == report.buffer_bytes, "every point has the buffer size");
      require(std::isfinite(p.gbps) && p.gbps > 0, "a point's bandwidth is a positive number");
      require(std::isfinite(static_cast<double>(p.bytes) / p.gbps), "a point's copy time is finite");
    }
    for (const NvbandwidthCell& c : results.cells) {
      require(c.device < report.gpus, "a cell's GPU is one of the report's");
      require(std::isfinite(c.gbps) && c.gbps > 0, "a cell's bandwidth is a positive number");
    }
    for (const NvbandwidthLatency& l : results.latencies) {
      require(l.device < report.gpus, "a latency's GPU is one of the report's");
      require(std::isfinite(l.ns) && l.ns > 0, "a latency is a positive number");
    }
    BandwidthTestImport info;
    info.device = "fuzz-gpu";
    info.link = "PCIe Gen5 x16";
    const Trace trace = nvbandwidth_trace(results, report, "fuzz.json", info);
    require(check_trace(trace).empty(), "an imported trace passes check_trace()");
    std::ostringstream out;
    write_trace(trace, out);
  });
  return 0;
}
