// Import of NVIDIA bandwidthTest results (CSV lines, e.g. from --mode=shmoo --csv) into a Trace.
//
// bandwidthTest times a loop of back-to-back copies of one size between two events and prints
// bytes * reps / time. The imported trace repeats that loop: per size, copies_for_size() copies
// back to back on one stream, registered (pinned) or pageable memory as the line says, each with
// the captured duration size / bandwidth. docs/traces.md describes the method and its resolution.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "spyre_dma/traces/trace.hpp"

namespace spyre_dma::traces {

struct BandwidthPoint {
  std::size_t line = 0;       // 1-based line of the input it came from
  OpKind kind = OpKind::kH2D;  // H2D, D2H or D2D
  HostMemory host = HostMemory::kRegistered;
  std::uint64_t bytes = 0;
  // The copy's own rate, bytes / time, in decimal GB/s (1e9 bytes per second). bandwidthTest prints
  // this for H2D and D2H; its D2D figure counts every byte twice (read and written), so a D2D
  // point holds half the printed figure.
  double gbps = 0;
  double time_s = 0;          // the printed time (5 decimals: often 0; not used for durations)
  // A bidirectional pair (rocm-bandwidth-test's -b tables and matrices): an H2D and a D2H of
  // `bytes` each, started together and timed together from the earlier start to the later end.
  // `gbps` then counts the bytes of both copies over that span (2 x bytes / span, as the tool
  // prints it), `kind` is kH2D and `host` the host memory of both copies. The trace runs each
  // pair on two streams and records it as a span group (concurrent.hpp).
  bool both_ways = false;
};

// Parses every "bandwidthTest-<H2D|D2H|D2D>-<Pinned|Pageable>, Bandwidth = X GB/s, Time = T s,
// Size = S bytes, NumDevsUsed = N" line; other lines (banner, progress dots, "Result = PASS") are
// skipped. A line that starts with "bandwidthTest-" and does not parse is a TraceError naming the
// line and the field; so is an input without any result line.
std::vector<BandwidthPoint> parse_bandwidth_test(const std::string& text, const std::string& name);

// Copies per size in the trace: 10, or fewer for large sizes so that one size moves at most
// 64 MiB beyond its first copy (at least 2 copies, so every size has a copy that follows another).
std::uint32_t copies_for_size(std::uint64_t bytes);

struct BandwidthTestImport {
  std::string device;  // header.device ("" unknown)
  std::string link;    // header.link, e.g. "PCIe Gen3 x16" ("" unknown)
  // The tool the points come from: header.source is "<tool>:<file>". Other bandwidth tools'
  // importers (a point per measured size) build their traces here too, naming themselves.
  std::string tool = "bandwidthtest";
  // How the tool measured (header.extra.method) and the resolution of the bandwidth it prints.
  std::string method = "per size, back-to-back copies of size/bandwidth each";
  double bandwidth_resolution_gbps = 0.1;
};

// The trace of the points (in input order, one stream, one allocation per size reused by its
// copies; a both_ways point: copies_for_size() rounds of its pair on two streams, each round
// after the one before, as a span group in header.extra.groups). Throws TraceError when `points`
// is empty.
Trace bandwidth_test_trace(const std::vector<BandwidthPoint>& points, const std::string& name,
                           const BandwidthTestImport& info = {});

// Reads a bandwidthTest log file and returns its trace. Throws TraceError.
Trace import_bandwidth_test(const std::string& path, const BandwidthTestImport& info = {});

}  // namespace spyre_dma::traces
