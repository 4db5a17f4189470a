// ROCm bandwidth log importers: the same input goes to the rocm-bandwidth-test parser and to the
// hipBusBandwidth parser (their logs share nothing, so each sees the other's as noise). Only
// TraceError may escape either parser or bandwidth_test_trace(); every point keeps its line
// (input order: a rocm-bandwidth-test matrix line holds several) and a positive size and
// bandwidth; the report accounts for every result row; the trace built from the points passes
// check_trace() and can be written.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz_support.hpp"
#include "spyre_dma/traces/rocm_bandwidth.hpp"
#include "spyre_dma/traces/trace_io.hpp"

using namespace spyre_dma::traces;
using spyre_dma::fuzz::expect_only;
using spyre_dma::fuzz::require;

namespace {

using Parser = std::vector<BandwidthPoint> (*)(const std::string&, const std::string&, RocmBandwidthReport&);

void check(const char* what, Parser parse, const char* tool, const std::string& text) {
  expect_only<TraceError>(what, [&] {
    RocmBandwidthReport report;
    const std::vector<BandwidthPoint> points = parse(text, "fuzz.log", report);
    require(!points.empty(), "an accepted log has a point");
    require(report.imported + report.pairs == points.size(), "report.imported and report.pairs count the points");
    require(report.results == report.imported + report.pairs + report.bidirectional + report.other_path +
                                  report.no_value + report.repeated + report.unknown_direction,
            "every result row is imported or skipped for one reason");
    std::size_t pairs = 0;
    for (const BandwidthPoint& p : points) {
      if (!p.both_ways) continue;
      ++pairs;
      require(p.kind == OpKind::kH2D && p.host == HostMemory::kRegistered, "a pair is registered H2D and D2H");
    }
    require(pairs == report.pairs, "report.pairs counts the both-ways points");
    std::size_t last_line = 0;
    for (const BandwidthPoint& p : points) {
      require(p.line >= last_line && p.line > 0, "points in input order, each with its line");
      last_line = p.line;
      require(p.bytes > 0, "a point moves bytes");
      require(std::isfinite(p.gbps) && p.gbps > 0, "a point's bandwidth is a positive number");
      const double ns = static_cast<double>(p.bytes) / p.gbps;
      require(std::isfinite(ns) && ns > 0, "a point's copy takes a finite, positive time");
      require((p.kind == OpKind::kD2D) == (p.host == HostMemory::kNone), "host memory exactly for H2D and D2H");
    }
    BandwidthTestImport info{"fuzz-gpu", "PCIe Gen4 x16"};
    info.tool = tool;
    const Trace trace = bandwidth_test_trace(points, "fuzz.log", info);
    require(check_trace(trace).empty(), "an imported trace passes check_trace()");
    std::ostringstream out;
    write_trace(trace, out);
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  check("rocm-bandwidth-test import", parse_rocm_bandwidth_test, "rocm-bandwidth-test", text);
  check("hipBusBandwidth import", parse_hip_bus_bandwidth, "hipbusbandwidth", text);
  return 0;
}
