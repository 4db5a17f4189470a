// Import of AMD ROCm host/device bandwidth tools' logs into a Trace, as bandwidth points that
// bandwidth_test_trace() turns into back-to-back copies (docs/traces.md, "ROCm bandwidth import").
//
// rocm-bandwidth-test (github.com/ROCm/rocm_bandwidth_test, the classic 1.x tool): the per-size
// tables of -s/-d (a "Src/Dst Device Id ... Type: Cpu|Gpu" banner, then "Data Size, Avg Time(us),
// Avg BW(GB/s), Min Time(us), Peak BW(GB/s)" rows) and the unidirectional bandwidth matrices of
// -a and of the default run (one 64 MiB copy per device pair). hipBusBandwidth (the HIP sample
// samples/1_Utils/hipBusBandwidth of github.com/ROCm/HIP): the summary tables of
// "H2D|D2H_Bandwidth_<mode>" and "H2D|D2H_Time<mode>" rows (test, atts, units, median, ...).
//
// Durations come from the printed times where the tool prints them (finer than its bandwidth,
// and free of how it counts bytes). rocm-bandwidth-test's bidirectional results between the host
// and a GPU (-b tables, bidirectional matrices) are pairs: an H2D and a D2H of the size started
// together, timed from the earlier start to the later end (BandwidthPoint::both_ways), which the
// trace replays at once and compare judges by their span. hipBusBandwidth's bidirectional rows,
// copies between two GPUs and rows without a usable value are skipped and counted in the report.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "spyre_dma/traces/bandwidth_test.hpp"

namespace spyre_dma::traces {

// What an import read and left out. Every result row (rocm-bandwidth-test: table row or numeric
// matrix cell; hipBusBandwidth: row of an H2D/D2H/Bidir/p2p test) counts once:
// results = imported + pairs + bidirectional + other_path + no_value + repeated + unknown_direction.
struct RocmBandwidthReport {
  std::size_t results = 0;            // result rows and matrix cells read
  std::size_t imported = 0;           // one-way points returned
  std::size_t pairs = 0;              // bidirectional host<->GPU pairs returned (both_ways points)
  std::size_t bidirectional = 0;      // hipBusBandwidth's copies both ways at once, timed as one: skipped
  std::size_t other_path = 0;         // GPU to another GPU (peer) or CPU to CPU: not one device's host link
  std::size_t no_value = 0;           // the tool printed no usable measurement (N/A, failed validation, 0)
  std::size_t repeated = 0;           // rows repeating a measurement already read (time rows, --detailed,
                                      // the mirror cell of a bidirectional matrix)
  std::size_t unknown_direction = 0;  // rocm-bandwidth-test tables whose banner does not say uni/bidirectional
  std::string device;                 // the GPU the log names ("" none or several)
  std::vector<std::string> notes;     // why rows were skipped, tool warnings (capped)
};

// Parse a rocm-bandwidth-test log: one-way points and (both_ways) bidirectional pairs, in input
// order. Other lines (version, launch command, device list, link matrices, progress dots) are
// skipped. A table row or matrix line that does not parse, a table
// without its Src/Dst banner, or a matrix cell of a device the device list does not name is a
// TraceError naming the line and the field ("size", "avg time", "src device", "bandwidth", ...);
// so is a log without any importable result.
std::vector<BandwidthPoint> parse_rocm_bandwidth_test(const std::string& text, const std::string& name,
                                                      RocmBandwidthReport& report);

// Parse a hipBusBandwidth log. Rows whose test starts with H2D_, D2H_, Bidir_, p2p_ or P2P_ are
// results; banners, table headers and notes are skipped. A result row that does not parse is a
// TraceError naming the line and the field ("test", "size", "units", "median"); so is a log
// without any importable result.
std::vector<BandwidthPoint> parse_hip_bus_bandwidth(const std::string& text, const std::string& name,
                                                    RocmBandwidthReport& report);

// Read a log file and return its trace. `info` gives device and link (header.device falls back
// to report.device); tool, method and bandwidth resolution are the importer's. Throws TraceError.
Trace import_rocm_bandwidth_test(const std::string& path, const BandwidthTestImport& info,
                                 RocmBandwidthReport& report);
Trace import_hip_bus_bandwidth(const std::string& path, const BandwidthTestImport& info,
                               RocmBandwidthReport& report);

}  // namespace spyre_dma::traces
