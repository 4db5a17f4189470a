// The bandwidth tools' importers (bandwidthTest, nvbandwidth, rocm-bandwidth-test, hipBusBandwidth)
// build their traces the same way from the points they read.
#pragma once

#include <string>
#include <vector>

#include "spyre_dma/traces/bandwidth_test.hpp"

namespace spyre_dma::traces::detail {

// Whether `bytes` at `gbps` (decimal GB/s, bytes per ns) take a time a trace can hold: above 0
// and at most kMaxTraceTimeNs. Each importer refuses a point that does not, with the line.
inline bool copy_time_fits(double bytes, double gbps) {
  const double ns = bytes / gbps;
  return ns > 0 && ns <= kMaxTraceTimeNs;
}

// The header of a bandwidth tool's trace of `name` (source "<tool>:<name>", the tool's method and
// bandwidth resolution in extra; resolution_ns 0).
Header points_header(const std::string& name, const BandwidthTestImport& info);

// bandwidth_test_trace() of points read from `path`: the header names the file without its folders,
// and an error about the trace names the path.
Trace file_points_trace(const std::vector<BandwidthPoint>& points, const std::string& path,
                        const BandwidthTestImport& info);

}  // namespace spyre_dma::traces::detail
