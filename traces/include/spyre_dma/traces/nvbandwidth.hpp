// Import of NVIDIA nvbandwidth results (`nvbandwidth --json`) into a Trace.
//
// nvbandwidth runs named testcases; each passed one holds a matrix of bandwidths in decimal GB/s
// (strings with six significant digits, "N/A" where nothing was measured). Its copy-engine
// testcases between host and device and between devices are, per GPU or GPU pair, what
// bandwidthTest measures per size: a loop of back-to-back cuMemcpyAsync copies of one buffer
// timed between two events. Each such cell becomes a BandwidthPoint of the buffer size, built
// into the trace as bandwidthTest's are. The host<->device testcases that measure a copy while
// others run (bidirectional, all GPUs at once) become groups of copies that run together on the
// GPUs of a server, and host_device_latency_sm latency points (concurrent.hpp). Testcases that
// measured something else (SM kernel copies, copies and latencies between GPUs) are counted and
// skipped. docs/traces.md ("nvbandwidth import") describes the mapping.
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
// imported + bidirectional + concurrent + latency + not_passed + sm_copies + between_gpus +
// multinode + unknown + without_value == testcases.
struct NvbandwidthReport {
  std::size_t testcases = 0;       // entries of nvbandwidth.testcases
  std::size_t imported = 0;        // one-way copy-engine testcases that gave at least one point
  std::size_t bidirectional = 0;   // host_to_device / device_to_host_bidirectional_memcpy_ce: imported as
                                   // groups, the measured copy beside the other direction's
  std::size_t concurrent = 0;      // host_to_all / all_to_host(_bidirectional)_memcpy_ce: imported as groups,
                                   // every GPU copying at once
  std::size_t latency = 0;         // host_device_latency_sm: imported as latency points
  std::size_t not_passed = 0;      // status other than "Passed": "Waived" (e.g. no peer pairs), "Error",
                                   // or "Running" left behind by a failure
  std::size_t sm_copies = 0;       // other *_sm: copy kernels on the SMs, not a copy engine
  std::size_t between_gpus = 0;    // device_to_device_bidirectional_*, all_to_one_*, one_to_all_*,
                                   // device_to_device_latency_sm: between GPUs, no host link's: skipped
  std::size_t multinode = 0;       // multinode_*: copies between GPUs of different nodes
  std::size_t unknown = 0;         // names this importer does not know (a later nvbandwidth's)
  std::size_t without_value = 0;   // importable testcases whose every cell is "N/A" or 0
  std::size_t points = 0;          // one-way points returned (one per cell with a bandwidth)
  std::size_t groups = 0;          // concurrent cells returned, one group each
  std::size_t latency_points = 0;  // latency cells returned
  std::size_t cells_skipped = 0;   // "N/A" or 0 cells of importable testcases (the diagonal, pairs without peer access)
  // GPUs of the concurrent and latency testcases' matrices (their columns); 0 when there are none.
  std::uint32_t gpus = 0;
  std::uint64_t buffer_bytes = 0;  // the size every point was given
  bool buffer_bytes_assumed = false;  // true when it is the version's default, not given by the caller
  // The coarsest step of the printed bandwidths (six significant digits: 1e-4 GB/s at 26 GB/s).
  double bandwidth_resolution_gbps = 0;
  std::string version;               // nvbandwidth.version ("" when absent)
  std::vector<std::string> devices;  // GPU names from "GPU Device list", in ordinal order (absent before v0.6)
  std::vector<std::string> notes;    // one line per skipped or concurrent testcase and per run-level error or
                                     // warning (capped)
};

// What ran beside a concurrent testcase's measured copy (testcase.cpp, testcases_ce.cpp: the
// copies beside it are twice the buffer, "to ensure it interferes", and all start together).
enum class NvbandwidthShape : std::uint8_t {
  kBidirectional,     // the opposite direction's copy on a second stream of the measured GPU
  kAllDevices,        // every other GPU's copy in the same direction
  kAllBidirectional,  // the measured GPU's opposite copy, and every other GPU's copies both ways
};

// One cell of a concurrent testcase: GPU `device`'s measured copy (nvbandwidth reports stream
// 0's bandwidth only) while the copies of `shape` ran.
struct NvbandwidthCell {
  std::size_t line = 0;       // 1-based line of the cell
  std::string testcase;       // its testcase's name
  NvbandwidthShape shape = NvbandwidthShape::kBidirectional;
  OpKind kind = OpKind::kH2D;  // the measured copy's direction (kH2D or kD2H)
  std::uint32_t device = 0;   // the cell's GPU (column)
  double gbps = 0;            // the measured copy's bandwidth, decimal GB/s
};

// One cell of host_device_latency_sm: the host-memory latency an SM of GPU `device` saw.
struct NvbandwidthLatency {
  std::size_t line = 0;
  std::uint32_t device = 0;
  double ns = 0;
};

struct NvbandwidthResults {
  std::vector<BandwidthPoint> points;         // one-way cells, as parse_nvbandwidth() returns them
  std::vector<NvbandwidthCell> cells;         // concurrent cells, testcase by testcase, column by column
  std::vector<NvbandwidthLatency> latencies;  // latency cells, by column
};

// Parses nvbandwidth's JSON text. Each numeric cell of a passed one-way copy-engine testcase
// (host_to_device_memcpy_ce, device_to_host_memcpy_ce: H2D / D2H, pinned host memory, one per
// GPU column; device_to_device_memcpy_read_ce / _write_ce: D2D, one per GPU pair;
// device_local_copy: D2D within each GPU) becomes a point of `buffer_bytes` bytes (0: the default
// of the version that wrote the file, nvbandwidth_default_buffer_bytes()) whose line is the
// cell's; each numeric cell of a passed concurrent testcase (host_to_device / device_to_host
// _bidirectional_memcpy_ce, host_to_all / all_to_host _memcpy_ce and their _bidirectional_
// forms) a cell, and of host_device_latency_sm a latency; testcases, rows and cells keep their
// input order. Bad input (not JSON, a missing or mistyped key, a cell that is not a bandwidth, a
// matrix of the wrong shape, concurrent matrices of different GPU counts) is a TraceError naming
// `name`, the line where known and the dotted key path, e.g.
// "nvbandwidth.testcases[2].bandwidth_matrix[0][1]"; so is an input with nothing to import, and
// a run whose warning says it used a buffer below the default when `buffer_bytes` is 0.
NvbandwidthResults parse_nvbandwidth_results(const std::string& text, const std::string& name,
                                             std::uint64_t buffer_bytes, NvbandwidthReport& report);
// The one-way points of parse_nvbandwidth_results().
std::vector<BandwidthPoint> parse_nvbandwidth(const std::string& text, const std::string& name,
                                              std::uint64_t buffer_bytes, NvbandwidthReport& report);

// The trace of parsed results (tool "nvbandwidth", header source "nvbandwidth:<name>",
// nvbandwidth's method and printed resolution): the one-way points first, as
// bandwidth_test_trace() builds them (on device 0), then one group per concurrent cell and one
// latency point per GPU, each after the one before, on the GPUs' devices (header.devices =
// report.gpus when there are any). `info` gives the device and link; an empty device is taken
// from the JSON's GPU list when all its GPUs have one name. The header's extra also keeps
// buffer_bytes, whether it was assumed, and what a concurrent import assumed (the copies beside
// the measured one, their size, the loop count). Throws TraceError.
Trace nvbandwidth_trace(const NvbandwidthResults& results, const NvbandwidthReport& report, const std::string& name,
                        const BandwidthTestImport& info);

// Reads an nvbandwidth JSON file and returns nvbandwidth_trace() of it (the header names the file
// without its folders). Throws TraceError.
Trace import_nvbandwidth(const std::string& path, const BandwidthTestImport& info, NvbandwidthReport& report,
                         std::uint64_t buffer_bytes = 0);

}  // namespace spyre_dma::traces
