// Import of NVIDIA nvbandwidth results (`nvbandwidth --json`) into a Trace.
//
// nvbandwidth runs named testcases; each passed one holds a matrix of bandwidths in decimal GB/s
// (strings with six significant digits, "N/A" where nothing was measured). Its copy-engine
// testcases between host and device and between devices are, per GPU or GPU pair, what
// bandwidthTest measures per size: a loop of back-to-back cuMemcpyAsync copies of one buffer
// timed between two events. Each such cell becomes a BandwidthPoint of the buffer size, and the
// trace is built by bandwidth_test_trace() like bandwidthTest's. Testcases that measured
// something else (SM kernel copies, latencies, copies sharing a link with other traffic) are
// counted and skipped. docs/traces.md ("nvbandwidth import") describes the mapping.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "spyre_dma/traces/bandwidth_test.hpp"
#include "spyre_dma/traces/trace.hpp"

namespace spyre_dma::traces {

// nvbandwidth's --bufferSize default for the version in nvbandwidth.version ("v0.8"): 64 MiB up to
// v0.6, 512 MiB from v0.7 on, and 512 MiB for a version that is absent or does not read as
// "v<major>.<minor>". No version up to v0.8 writes the buffer size into its JSON, so an importer
// can only take the default or be told.
std::uint64_t nvbandwidth_default_buffer_bytes(const std::string& version);

// What became of the testcases. Every entry of nvbandwidth.testcases is counted exactly once:
// imported + not_passed + latency + sm_copies + bidirectional + concurrent + multinode + unknown +
// without_value == testcases.
struct NvbandwidthReport {
  std::size_t testcases = 0;       // entries of nvbandwidth.testcases
  std::size_t imported = 0;        // copy-engine testcases that gave at least one point
  std::size_t not_passed = 0;      // status other than "Passed": "Waived" (e.g. no peer pairs), "Error",
                                   // or "Running" left behind by a failure
  std::size_t latency = 0;         // *_latency_sm: pointer-chase latencies in ns, not bandwidths
  std::size_t sm_copies = 0;       // *_sm: copy kernels on the SMs, not a copy engine
  std::size_t bidirectional = 0;   // *_bidirectional_*: the measured copy shared its link with the other direction
  std::size_t concurrent = 0;      // all_to_host, host_to_all, all_to_one, one_to_all: several GPUs' copies at once
  std::size_t multinode = 0;       // multinode_*: copies between GPUs of different nodes
  std::size_t unknown = 0;         // names this importer does not know (a later nvbandwidth's)
  std::size_t without_value = 0;   // importable testcases whose every cell is "N/A" or 0
  std::size_t points = 0;          // points returned (one per cell with a bandwidth)
  std::size_t cells_skipped = 0;   // "N/A" or 0 cells of importable testcases (the diagonal, pairs without peer access)
  std::uint64_t buffer_bytes = 0;  // the size every point was given
  bool buffer_bytes_assumed = false;  // true when it is the version's default, not given by the caller
  // The coarsest step of the printed bandwidths (six significant digits: 1e-4 GB/s at 26 GB/s).
  double bandwidth_resolution_gbps = 0;
  std::string version;               // nvbandwidth.version ("" when absent)
  std::vector<std::string> devices;  // GPU names from "GPU Device list", in ordinal order (absent before v0.6)
  std::vector<std::string> notes;    // one line per skipped testcase and per run-level error or warning (capped)
};

// Parses nvbandwidth's JSON text. Each numeric cell of a passed copy-engine testcase
// (host_to_device_memcpy_ce, device_to_host_memcpy_ce: H2D / D2H, pinned host memory, one per
// GPU column; device_to_device_memcpy_read_ce / _write_ce: D2D, one per GPU pair;
// device_local_copy: D2D within each GPU) becomes a point of `buffer_bytes` bytes (0: the default
// of the version that wrote the file, nvbandwidth_default_buffer_bytes()) whose line is the
// cell's; testcases, rows and cells keep their input order.
// Bad input (not JSON, a missing or mistyped key, a cell that is not a bandwidth, a matrix of the
// wrong shape) is a TraceError naming `name`, the line where known and the dotted key path, e.g.
// "nvbandwidth.testcases[2].bandwidth_matrix[0][1]"; so is an input without any point, and a run
// whose warning says it used a buffer below the default when `buffer_bytes` is 0.
std::vector<BandwidthPoint> parse_nvbandwidth(const std::string& text, const std::string& name,
                                              std::uint64_t buffer_bytes, NvbandwidthReport& report);

// Reads an nvbandwidth JSON file and returns its trace (bandwidth_test_trace(), tool
// "nvbandwidth", nvbandwidth's method and printed resolution). `info` gives the device and link;
// an empty device is taken from the JSON's GPU list when all its GPUs have one name. The header's
// extra also keeps buffer_bytes and whether it was assumed. Throws TraceError.
Trace import_nvbandwidth(const std::string& path, const BandwidthTestImport& info, NvbandwidthReport& report,
                         std::uint64_t buffer_bytes = 0);

}  // namespace spyre_dma::traces
