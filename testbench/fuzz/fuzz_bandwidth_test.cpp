// NVIDIA bandwidthTest log importer (CSV result lines among banner and progress text). Only
// TraceError may escape parse_bandwidth_test() and bandwidth_test_trace(); every point keeps its
// line number and a positive size and bandwidth; the trace built from the points passes
// check_trace() and can be written.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "fuzz_support.hpp"
#include "spyre_dma/traces/bandwidth_test.hpp"
#include "spyre_dma/traces/trace_io.hpp"

using namespace spyre_dma::traces;
using spyre_dma::fuzz::expect_only;
using spyre_dma::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  expect_only<TraceError>("bandwidth test import", [&] {
    const std::vector<BandwidthPoint> points = parse_bandwidth_test(text, "fuzz.log");
    require(!points.empty(), "an accepted log has a result line");
    std::size_t last_line = 0;
    for (const BandwidthPoint& p : points) {
      require(p.line > last_line, "points in input order, one per line");
      last_line = p.line;
      require(std::isfinite(p.gbps) && p.gbps > 0, "a point's bandwidth is a positive number");
      const std::uint32_t copies = copies_for_size(p.bytes);
      require(copies >= 2 && copies <= 10, "copies_for_size() in 2..10");
    }
    const Trace trace = bandwidth_test_trace(points, "fuzz.log", {"fuzz-gpu", "PCIe Gen3 x16"});
    require(check_trace(trace).empty(), "an imported trace passes check_trace()");
    std::ostringstream out;
    write_trace(trace, out);
  });
  return 0;
}
