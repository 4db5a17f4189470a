#include "spyre_dma/traces/rocm_bandwidth.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

#include "bandwidth_points.hpp"
#include "spyre_dma/traces/trace_io.hpp"
#include "text_input.hpp"
#include "spyre_dma/text.hpp"

namespace spyre_dma::traces {
namespace {

// A log of many odd rows would otherwise carry a note for each: detail::kMaxNotes are kept.
// Whole numbers are exact in a double only up to 2^53 (8 PiB), far beyond any copy size.
constexpr std::uint64_t kMaxSizeBytes = std::uint64_t{1} << 53;
// A single copy longer than about 11 days is no measurement; the bound also keeps the trace's
// back-to-back start times finite.
constexpr double kMaxCopyNs = 1e15;
// rocm-bandwidth-test's -a and default runs copy one size, SIZE_LIST[16] of the tool: 64 MiB.
constexpr std::uint64_t kRbtMatrixBytes = 64ull << 20;
// rocm-bandwidth-test marks a failed validation with DBL_MAX as the bandwidth (printed in full).
constexpr double kRbtFailureMarker = 1e300;

void note(RocmBandwidthReport& report, std::string text) { detail::add_note(report.notes, std::move(text)); }

using detail::trim;

std::vector<std::string> tokens(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string t; in >> t;) out.push_back(t);
  return out;
}

using detail::starts_with;

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}


// An unsigned whole number of at most 2^53 (the tools print sizes, ids and counts in decimal).
std::optional<std::uint64_t> whole_number(const std::string& s) {
  if (!all_digits(s) || s.size() > 16) return std::nullopt;
  const std::uint64_t v = std::stoull(s);
  if (v > kMaxSizeBytes) return std::nullopt;
  return v;
}

// A number as both tools print them (std::fixed: digits, optionally a point and digits). No sign,
// exponent, hexadecimal or nan: nothing the tools write, so anything else is a malformed row.
std::optional<double> decimal(const std::string& s) {
  const auto point = s.find('.');
  const std::string whole = s.substr(0, point);
  const std::string frac = point == std::string::npos ? "0" : s.substr(point + 1);
  if (!all_digits(whole) || !(frac.empty() || all_digits(frac))) return std::nullopt;
  try {
    const double v = std::stod(s);
    if (!std::isfinite(v)) return std::nullopt;
    return v;
  } catch (const std::exception&) {  // out of the range of a double
    return std::nullopt;
  }
}

// One copy of `bytes` that took `copy_ns`: the point bandwidth_test_trace() repeats.
BandwidthPoint make_point(std::size_t line, OpKind kind, HostMemory host, std::uint64_t bytes, double copy_ns,
                          const std::string& name, const std::string& field, const std::string& value) {
  if (!(copy_ns > 0) || copy_ns > kMaxCopyNs)
    throw TraceError(name, line, field,
                     fmt::format("\"{}\" gives a copy time of {} ns for {} bytes: not a measurement", value, copy_ns,
                                 bytes));
  BandwidthPoint p;
  p.line = line;
  p.kind = kind;
  p.host = kind == OpKind::kD2D ? HostMemory::kNone : host;
  p.bytes = bytes;
  p.gbps = static_cast<double>(bytes) / copy_ns;  // bytes / ns = decimal GB/s
  p.time_s = copy_ns * 1e-9;
  if (!std::isfinite(p.gbps) || p.gbps <= 0 || !detail::copy_time_fits(static_cast<double>(bytes), p.gbps))
    throw TraceError(name, line, field, fmt::format("\"{}\" gives no usable bandwidth for {} bytes", value, bytes));
  return p;
}

// A bidirectional pair between the host and a GPU, timed from the earlier start to the later end
// (`span_ns`); the point's bandwidth counts both copies' bytes, as the tool's does.
BandwidthPoint make_pair_point(std::size_t line, std::uint64_t bytes, double span_ns, const std::string& name,
                               const std::string& field, const std::string& value) {
  BandwidthPoint p = make_point(line, OpKind::kH2D, HostMemory::kRegistered, bytes, span_ns, name, field, value);
  p.gbps *= 2;
  p.both_ways = true;
  return p;
}

std::string skipped_summary(const RocmBandwidthReport& r) {
  return fmt::format("{} result rows: {} bidirectional pairs, {} bidirectional skipped, {} between two GPUs or two "
                     "CPUs, {} without a value, {} repeated, {} of unknown direction",
                     r.results, r.pairs, r.bidirectional, r.other_path, r.no_value, r.repeated, r.unknown_direction);
}

// ---------------------------------------------------------------------------------------------
// rocm-bandwidth-test (classic). Sources: rocm_bandwidth_test_report.cpp (printCopyBanner,
// printRecord, PrintPerfMatrix, DisplayDevInfo) and rocm_bandwidth_test_trans.cpp (ComputeCopyTime).

struct Endpoint {
  bool known = false;
  std::uint64_t id = 0;
  bool gpu = false;
};

enum class Direction { kUnknown, kUni, kBidir };
enum class Section { kNone, kTable, kMatrix };
enum class MatrixKind { kOther, kUni, kBidir };

// "================ Src Device Id: 0 Src Device Type: Cpu ================"
Endpoint parse_endpoint(const std::vector<std::string>& t, const std::string& side, const std::string& name,
                        std::size_t line) {
  const std::string field = lower(side) + " device";
  if (t.size() < 9 || t[1] != side || t[2] != "Device" || t[3] != "Id:" || t[5] != side || t[6] != "Device" ||
      t[7] != "Type:")
    throw TraceError(name, line, field, fmt::format("expected \"{0} Device Id: N {0} Device Type: Cpu|Gpu\"", side));
  Endpoint e;
  const auto id = whole_number(t[4]);
  if (!id) throw TraceError(name, line, field, fmt::format("device id \"{}\" is not a whole number", t[4]));
  e.id = *id;
  if (t[8] == "Gpu") e.gpu = true;
  else if (t[8] != "Cpu")
    throw TraceError(name, line, field, fmt::format("device type \"{}\" is not Cpu or Gpu", t[8]));
  e.known = true;
  return e;
}

// Host <-> GPU and within one GPU are the copies of one device; false for the other paths.
bool direction_of(const Endpoint& src, const Endpoint& dst, bool same_device, OpKind& kind) {
  if (!src.gpu && dst.gpu) kind = OpKind::kH2D;
  else if (src.gpu && !dst.gpu) kind = OpKind::kD2H;
  else if (src.gpu && dst.gpu && same_device) kind = OpKind::kD2D;
  else return false;
  return true;
}

// "Time(us)" columns: a number, or inf where the tool stored DBL_MAX for a failed validation.
std::optional<double> rbt_time(const std::string& s, const std::string& field, const std::string& name,
                               std::size_t line) {
  if (s == "inf") return std::nullopt;
  const auto v = decimal(s);
  if (!v) throw TraceError(name, line, field, fmt::format("\"{}\" is not a time in microseconds", s));
  return v;
}

}  // namespace

std::vector<BandwidthPoint> parse_rocm_bandwidth_test(const std::string& text, const std::string& name,
                                                      RocmBandwidthReport& report) {
  std::vector<BandwidthPoint> points;
  std::map<std::uint64_t, bool> device_is_gpu;  // DisplayDevInfo: agent index -> GPU
  std::set<std::string> gpu_names;
  Direction direction = Direction::kUnknown;
  Endpoint src, dst;
  std::size_t banner_line = 0;
  Section section = Section::kNone;
  MatrixKind matrix = MatrixKind::kOther;
  std::vector<std::uint64_t> columns;
  bool noted_unknown = false;

  std::istringstream in(text);
  std::string raw;
  std::size_t line = 0;
  while (std::getline(in, raw)) {
    ++line;
    const std::string s = trim(raw);
    if (s.empty()) continue;  // tables and matrices carry blank lines between their rows
    const std::vector<std::string> t = tokens(s);

    if (section == Section::kTable && std::isdigit(static_cast<unsigned char>(s[0]))) {
      // "64 KB   5.123   12.792   4.881   13.426": size as the tool prints it (size/1024 KB or
      // size/1048576 MB of sizes that are whole KiB or MiB), the mean of the iterations less the
      // slowest, its bandwidth, the fastest iteration, its bandwidth.
      if (t.size() != 6)
        throw TraceError(name, line, "",
                         fmt::format("expected Data Size (a number and Bytes, KB or MB), Avg Time(us), Avg BW(GB/s), "
                                     "Min Time(us) and Peak BW(GB/s): {} fields in \"{}\"",
                                     t.size(), s));
      const auto n = whole_number(t[0]);
      std::uint64_t unit = 0;
      if (t[1] == "Bytes") unit = 1;
      else if (t[1] == "KB") unit = 1024;
      else if (t[1] == "MB") unit = 1024 * 1024;
      if (!n || *n == 0 || unit == 0 || *n > kMaxSizeBytes / unit)
        throw TraceError(name, line, "size", fmt::format("\"{} {}\" is not a size in Bytes, KB or MB", t[0], t[1]));
      const std::uint64_t bytes = *n * unit;
      const auto avg_us = rbt_time(t[2], "avg time", name, line);
      if (!decimal(t[3]))
        throw TraceError(name, line, "avg bandwidth", fmt::format("\"{}\" is not a bandwidth", t[3]));
      const auto min_us = rbt_time(t[4], "min time", name, line);
      if (!decimal(t[5]))
        throw TraceError(name, line, "peak bandwidth", fmt::format("\"{}\" is not a bandwidth", t[5]));
      ++report.results;

      OpKind kind = OpKind::kH2D;
      if (direction == Direction::kUnknown) {
        // Before August 2019 the banner read "Benchmark Result" for -s/-d and -b runs alike, and
        // a bidirectional time (two copies at once) must not pass for one copy's.
        ++report.unknown_direction;
        if (!noted_unknown)
          note(report, fmt::format("line {}: a banner that does not say Unidirectional or Bidirectional (a tool "
                                   "before 2019): its rows are skipped",
                                   banner_line));
        noted_unknown = true;
      } else if (direction == Direction::kBidir) {
        // An H2D and a D2H started together; Avg Time is the span from the earlier start to the
        // later end (GetGpuCopyTime), Avg BW twice the size over it. Between two GPUs (or two
        // CPUs) it is no one device's pair.
        if (src.gpu == dst.gpu) {
          ++report.other_path;
        } else if (!avg_us || !min_us) {
          ++report.no_value;
          note(report, fmt::format("line {}: the tool's validation of this copy failed (time inf)", line));
        } else {
          points.push_back(make_pair_point(line, bytes, *avg_us * 1e3, name, "avg time", t[2]));
          ++report.pairs;
        }
      } else if (!direction_of(src, dst, src.id == dst.id, kind)) {
        ++report.other_path;
      } else if (!avg_us || !min_us) {
        ++report.no_value;
        note(report, fmt::format("line {}: the tool's validation of this copy failed (time inf)", line));
      } else {
        // The time of one copy, whatever the tool's bandwidth counts (within one GPU it counts
        // the bytes read and written: twice the copy's size).
        points.push_back(make_point(line, kind, HostMemory::kRegistered, bytes, *avg_us * 1e3, name, "avg time", t[2]));
        ++report.imported;
      }
      continue;
    }
    if (section == Section::kMatrix && !columns.empty() && all_digits(t[0])) {
      // "0   N/A   24.802   ..." : source device, then one value per destination column.
      if (matrix == MatrixKind::kOther) continue;  // access, link type, hops, NUMA distance, validation
      if (t.size() != columns.size() + 1)
        throw TraceError(name, line, "bandwidth",
                         fmt::format("expected {} values (one per D/D column), got {}", columns.size(), t.size() - 1));
      const auto row = whole_number(t[0]);
      if (!row) throw TraceError(name, line, "device", fmt::format("device \"{}\" is not a whole number", t[0]));
      for (std::size_t j = 0; j < columns.size(); ++j) {
        const std::string& cell = t[j + 1];
        if (cell == "N/A") continue;  // no copy between these two devices
        const auto value = decimal(cell);
        if (!value) throw TraceError(name, line, "bandwidth", fmt::format("\"{}\" is not a bandwidth or N/A", cell));
        ++report.results;
        const auto src_it = device_is_gpu.find(*row);
        const auto dst_it = device_is_gpu.find(columns[j]);
        if (src_it == device_is_gpu.end() || dst_it == device_is_gpu.end())
          throw TraceError(name, line, "device",
                           fmt::format("no \"Device: N, ...\" line names device {}: its direction is unknown",
                                       src_it == device_is_gpu.end() ? *row : columns[j]));
        if (matrix == MatrixKind::kBidir) {
          // A 64 MiB pair, one copy each way, at 2 x size / span. The tool writes each pair's
          // figure at both [src][dst] and [dst][src] (PopulatePerfMatrix): the CPU row's cell is
          // the pair, the GPU row's its mirror.
          if (src_it->second == dst_it->second) {
            ++report.other_path;
          } else if (*value <= 0 || *value >= kRbtFailureMarker) {
            ++report.no_value;
            note(report, fmt::format("line {}: device {} <-> {}: no bandwidth ({})", line, *row, columns[j], cell));
          } else if (src_it->second) {
            ++report.repeated;
          } else {
            points.push_back(make_pair_point(line, kRbtMatrixBytes, 2.0 * static_cast<double>(kRbtMatrixBytes) / *value,
                                             name, "bandwidth", cell));
            ++report.pairs;
          }
          continue;
        }
        OpKind kind = OpKind::kH2D;
        if (!direction_of(Endpoint{true, *row, src_it->second}, Endpoint{true, columns[j], dst_it->second},
                          *row == columns[j], kind)) {
          ++report.other_path;
          continue;
        }
        if (*value <= 0 || *value >= kRbtFailureMarker) {
          ++report.no_value;
          note(report, fmt::format("line {}: device {} -> {}: no bandwidth ({})", line, *row, columns[j], cell));
          continue;
        }
        // Within one GPU the tool counts the bytes read and written (twice the copy's size).
        const double gbps = kind == OpKind::kD2D ? *value / 2 : *value;
        points.push_back(make_point(line, kind, HostMemory::kRegistered, kRbtMatrixBytes,
                                    static_cast<double>(kRbtMatrixBytes) / gbps, name, "bandwidth", cell));
        ++report.imported;
      }
      continue;
    }
    // Any other line ends a table or matrix; a matrix's kind is its title's, read anew for the next.
    if (section == Section::kMatrix) matrix = MatrixKind::kOther;
    section = Section::kNone;

    if (starts_with(s, "================")) {
      if (s.find("Benchmark Result") != std::string::npos) {
        direction = s.find("Unidirectional") != std::string::npos  ? Direction::kUni
                    : s.find("Bidirectional") != std::string::npos ? Direction::kBidir
                                                                   : Direction::kUnknown;
        src = dst = Endpoint{};
        banner_line = line;
      } else if (s.find("Src Device Id:") != std::string::npos) {
        src = parse_endpoint(t, "Src", name, line);
      } else if (s.find("Dst Device Id:") != std::string::npos) {
        dst = parse_endpoint(t, "Dst", name, line);
      }
      continue;
    }
    if (starts_with(s, "Data Size")) {
      if (!src.known || !dst.known)
        throw TraceError(name, line, src.known ? "dst device" : "src device",
                         "a result table without its \"Src/Dst Device Id: N ... Type: Cpu|Gpu\" banner");
      section = Section::kTable;
      continue;
    }
    if (t[0] == "D/D") {  // a matrix's column header: the destination devices
      columns.clear();
      for (std::size_t j = 1; j < t.size(); ++j) {
        const auto c = whole_number(t[j]);
        if (!c) throw TraceError(name, line, "device", fmt::format("D/D column \"{}\" is not a device number", t[j]));
        columns.push_back(*c);
      }
      section = Section::kMatrix;
      continue;
    }
    // Matrix titles: "Unidirectional copy peak bandwidth GB/s" (before 2019 "Unidirectional peak
    // bandwidth GB/s", and "Bdirectional" for the bidirectional one); link property and
    // validation matrices share the layout and are skipped.
    if (s.size() > 14 && s.compare(s.size() - 14, 14, "bandwidth GB/s") == 0) {
      matrix = starts_with(s, "Unidirectional")                                       ? MatrixKind::kUni
               : starts_with(s, "Bidirectional") || starts_with(s, "Bdirectional") ? MatrixKind::kBidir
                                                                                      : MatrixKind::kOther;
      columns.clear();
      continue;
    }
    if (starts_with(s, "Inter-Device") || starts_with(s, "Data Path Validation")) {
      matrix = MatrixKind::kOther;
      columns.clear();
      continue;
    }
    // "Device: 2,  gfx90a,  GPU-4f2e...,  c1:00.0": GPUs carry a UUID and a PCI address (since
    // 2019); before, only the name tells, and HSA names GPU agents by their ISA (gfx...).
    if (starts_with(s, "Device: ")) {
      const std::string rest = s.substr(8);
      const auto comma = rest.find(',');
      const auto idx = whole_number(trim(rest.substr(0, comma)));
      if (idx && comma != std::string::npos) {
        std::vector<std::string> fields;
        std::stringstream ss(rest.substr(comma + 1));
        for (std::string f; std::getline(ss, f, ',');) fields.push_back(trim(f));
        const std::string dev = fields.empty() ? "" : fields[0];
        const bool gpu = fields.size() >= 3 || starts_with(lower(dev), "gfx");
        device_is_gpu[*idx] = gpu;
        if (gpu && !dev.empty()) gpu_names.insert(dev);
      }
      continue;
    }
    if (starts_with(s, "Launch Command is:") &&
        std::find(t.begin(), t.end(), "-c") != t.end()) {
      note(report,
           fmt::format("line {}: timed with CPU timers (-c): times include the host's part of each copy", line));
    }
  }
  if (gpu_names.size() == 1) report.device = *gpu_names.begin();
  if (points.empty())
    throw TraceError(name, 0, "", "no importable rocm-bandwidth-test result (a \"Data Size\" table after a "
                                  "Unidirectional or Bidirectional banner, or a bandwidth matrix): " +
                                      skipped_summary(report));
  return points;
}

namespace {

// ---------------------------------------------------------------------------------------------
// hipBusBandwidth. Sources: samples/1_Utils/hipBusBandwidth/hipBusBandwidth.cpp (RunBenchmark_*,
// sizeToString, printConfig) and ResultDatabase.cpp (DumpSummary, DumpDetailed) of ROCm/HIP.

enum class HipRow { kBandwidth, kTime };

struct HipMeasure {
  std::size_t line = 0;
  OpKind kind = OpKind::kH2D;
  HostMemory host = HostMemory::kRegistered;
  std::uint64_t bytes = 0;
  std::uint64_t beats = 1;
  std::optional<double> gbps;  // median of the bandwidth row
  std::optional<double> ms;    // median of the time row (all `beats` copies)
  std::string value;           // the printed text the duration comes from, for errors
};

// "+064By" (bytes), "512kB" (KiB), either followed by "x<beats>" with --beatsperiteration.
bool hip_size(const std::string& atts, std::uint64_t& bytes, std::uint64_t& beats) {
  const auto x = atts.find('x');
  std::string size = atts.substr(0, x);
  beats = 1;
  if (x != std::string::npos) {
    const auto b = whole_number(atts.substr(x + 1));
    if (!b || *b == 0 || *b > (1ull << 31)) return false;
    beats = *b;
  }
  std::uint64_t unit = 0;
  if (size.size() > 2 && size.compare(size.size() - 2, 2, "By") == 0) {
    unit = 1;
    if (size[0] == '+') size.erase(0, 1);
  } else if (size.size() > 2 && size.compare(size.size() - 2, 2, "kB") == 0) {
    unit = 1024;
  } else {
    return false;
  }
  const auto n = whole_number(size.substr(0, size.size() - 2));
  if (!n || *n == 0 || *n > kMaxSizeBytes / unit) return false;
  bytes = *n * unit;
  return true;
}

HostMemory hip_memory(const std::string& mode, const std::string& banner_mode, const std::string& name,
                      std::size_t line) {
  const std::string m = lower(mode.empty() ? banner_mode : mode);
  // hipHostMalloc (pinned) and hipHostRegister of malloc memory (registered) are both
  // page-locked; unpinned is plain new/malloc memory.
  if (m == "pinned" || m == "registered") return HostMemory::kRegistered;
  if (m == "unpinned") return HostMemory::kPageable;
  if (m.empty())
    throw TraceError(name, line, "test", "no memory mode: neither the test name nor a MallocMode= line names one");
  throw TraceError(name, line, "test", fmt::format("memory mode \"{}\" is not pinned, unpinned or registered", mode));
}

}  // namespace

std::vector<BandwidthPoint> parse_hip_bus_bandwidth(const std::string& text, const std::string& name,
                                                    RocmBandwidthReport& report) {
  std::vector<HipMeasure> measures;
  // The k-th bandwidth row and the k-th time row of one test and size are one measurement (the
  // tool prints each test's rows sorted, bandwidth rows before time rows).
  using Key = std::tuple<int, int, std::uint64_t, std::uint64_t>;
  std::map<Key, std::vector<std::size_t>> by_key;
  std::map<std::pair<Key, int>, std::size_t> seen;
  std::string banner_mode;
  std::set<std::string> devices;
  bool detailed = false;
  bool noted_printed_bandwidth = false;

  std::istringstream in(text);
  std::string raw;
  std::size_t line = 0;
  while (std::getline(in, raw)) {
    ++line;
    const std::string s = trim(raw);
    if (s.empty()) continue;
    const std::vector<std::string> t = tokens(s);
    if (starts_with(s, "Device:")) {
      // "Device:Vega 20 [Radeon VII] Mem=16.0GB #CUs=60 Freq=1802Mhz  MallocMode=pinned"
      const auto mem = s.find(" Mem=");
      devices.insert(trim(s.substr(7, mem == std::string::npos ? std::string::npos : mem - 7)));
      const auto mode = s.find("MallocMode=");
      if (mode != std::string::npos) banner_mode = trim(s.substr(mode + 11));
      continue;
    }
    if (t[0] == "test" && t.size() > 1 && t[1] == "atts") {
      // --detailed prints every trial after the summary: the same measurements again.
      detailed = std::any_of(t.begin(), t.end(), [](const std::string& c) { return starts_with(c, "trial"); });
      continue;
    }
    if (starts_with(s, "error")) {
      note(report, fmt::format("line {}: the tool reported: {}", line, s));
      continue;
    }
    const std::string& test = t[0];
    if (!starts_with(test, "H2D_") && !starts_with(test, "D2H_") && !starts_with(test, "Bidir_") &&
        !starts_with(test, "p2p_") && !starts_with(test, "P2P_"))
      continue;  // notes, peer-to-peer support listing, verbose progress

    // test, atts, units, median, mean, stddev, min, max (DumpSummary; DumpDetailed adds trials).
    if (t.size() < 4)
      throw TraceError(name, line, "",
                       fmt::format("expected test, atts, units, median, ...: {} fields in \"{}\"", t.size(), s));
    std::uint64_t bytes = 0, beats = 1;
    if (!hip_size(t[1], bytes, beats))
      throw TraceError(name, line, "size",
                       fmt::format("\"{}\" is not a size (+NNNBy or NkB, optionally xBEATS)", t[1]));
    const std::string& units = t[2];
    if (units != "GB/sec" && units != "ms")
      throw TraceError(name, line, "units", fmt::format("\"{}\" is not GB/sec or ms", units));
    std::optional<double> median;
    if (t[3] != "N/A") {
      median = decimal(t[3]);
      if (!median) throw TraceError(name, line, "median", fmt::format("\"{}\" is not a number or N/A", t[3]));
    }

    // Classify. H2D/D2H rows: "<H2D|D2H>_Bandwidth_<mode>" and "<H2D|D2H>_Time[_]<mode>" (the
    // tool writes the H2D time without the underscore); 2016 versions wrote "_Pinned" and
    // "_Unpinned", or no mode at all.
    std::optional<HipRow> row;
    OpKind kind = OpKind::kH2D;
    std::string mode;
    if (starts_with(test, "H2D_") || starts_with(test, "D2H_")) {
      kind = test[0] == 'H' ? OpKind::kH2D : OpKind::kD2H;
      const std::string rest = test.substr(4);
      if (starts_with(rest, "Bandwidth")) {
        row = HipRow::kBandwidth;
        mode = rest.substr(9);
      } else if (starts_with(rest, "Time")) {
        row = HipRow::kTime;
        mode = rest.substr(4);
      } else {
        throw TraceError(name, line, "test", fmt::format("\"{}\" is not an H2D/D2H Bandwidth or Time test", test));
      }
      if (!mode.empty() && mode[0] == '_') mode.erase(0, 1);
      if ((row == HipRow::kBandwidth) != (units == "GB/sec"))
        throw TraceError(name, line, "units", fmt::format("\"{}\" does not fit test {}", units, test));
    }
    const HostMemory host = row ? hip_memory(mode, banner_mode, name, line) : HostMemory::kNone;
    ++report.results;

    if (starts_with(test, "Bidir_") || starts_with(test, "p2p_bi") || starts_with(test, "P2P_bi")) {
      // Two copies at once, one each way on two streams, timed together: no copy of one direction.
      ++report.bidirectional;
      continue;
    }
    if (!row) {  // p2p_uni / P2P_uni: a copy between two GPUs
      ++report.other_path;
      continue;
    }
    if (detailed) {
      ++report.repeated;
      continue;
    }
    if (!median) {
      ++report.no_value;
      note(report, fmt::format("line {}: {} {}: no value (N/A)", line, test, t[1]));
      continue;
    }
    const Key key{static_cast<int>(kind), static_cast<int>(host), bytes, beats};
    const std::size_t nth = seen[{key, static_cast<int>(*row)}]++;
    std::vector<std::size_t>& of_key = by_key[key];
    HipMeasure* m = nullptr;
    if (nth < of_key.size()) {
      m = &measures[of_key[nth]];
      ++report.repeated;  // the second row of a measurement
    } else {
      of_key.push_back(measures.size());
      measures.push_back(HipMeasure{line, kind, host, bytes, beats, std::nullopt, std::nullopt, ""});
      m = &measures.back();
    }
    if (row == HipRow::kBandwidth) m->gbps = median;
    else m->ms = median;
    if (row == HipRow::kTime || m->value.empty()) m->value = t[3];
  }

  if (devices.size() == 1) report.device = *devices.begin();
  std::vector<BandwidthPoint> points;
  for (const HipMeasure& m : measures) {
    double copy_ns = 0;
    if (m.ms && *m.ms > 0) {
      // The event time of `beats` back-to-back copies: free of the tool's bandwidth formula, which
      // since 2019 divides the size by 1000 in integers (0 GB/s below 1000 bytes, 2.3% low at 1kB)
      // and before that left the beats out of the D2H bandwidth.
      copy_ns = *m.ms * 1e6 / static_cast<double>(m.beats);
    } else if (m.gbps && *m.gbps > 0) {
      copy_ns = static_cast<double>(m.bytes) / *m.gbps;
      if (!noted_printed_bandwidth)
        note(report, fmt::format("line {}: no time row: the printed bandwidth gives the copy time", m.line));
      noted_printed_bandwidth = true;
    } else {
      // 0.0000 GB/s: below the print resolution (and every size under 1000 bytes since 2019).
      ++report.no_value;
      note(report,
           fmt::format("line {}: {} bytes: bandwidth 0 at the printed resolution and no time", m.line, m.bytes));
      continue;
    }
    points.push_back(make_point(m.line, m.kind, m.host, m.bytes, copy_ns, name, "median", m.value));
    ++report.imported;
  }
  if (points.empty())
    throw TraceError(name, 0, "", "no importable hipBusBandwidth result (an H2D_ or D2H_ Bandwidth or Time row): " +
                                      skipped_summary(report));
  return points;
}

namespace {

Trace import_log(const std::string& path, const BandwidthTestImport& info, RocmBandwidthReport& report,
                 std::vector<BandwidthPoint> (*parse)(const std::string&, const std::string&, RocmBandwidthReport&),
                 const char* tool, const char* method, double resolution_gbps) {
  const std::vector<BandwidthPoint> points = parse(detail::read_file_text(path), path, report);
  BandwidthTestImport own = info;
  own.tool = tool;
  own.method = method;
  own.bandwidth_resolution_gbps = resolution_gbps;
  if (own.device.empty()) own.device = report.device;
  return detail::file_points_trace(points, path, own);
}

}  // namespace

Trace import_rocm_bandwidth_test(const std::string& path, const BandwidthTestImport& info,
                                 RocmBandwidthReport& report) {
  // The bandwidth is printed to 0.001 GB/s (0.000001 before 2020); table durations come from the
  // Avg Time column instead (0.001 us).
  return import_log(path, info, report, parse_rocm_bandwidth_test, "rocm-bandwidth-test",
                    "per size, hsa_amd_memory_async_copy timed by its completion signal: the mean over the "
                    "iterations less the slowest (Avg Time); -a matrices: the printed bandwidth of a 64 MiB copy; "
                    "back-to-back copies of that time each. Bidirectional (host and GPU): an H2D and a D2H of the "
                    "size started together, timed from the earlier start to the later end (Avg Time; the bandwidth "
                    "counts both copies); rounds of that pair on two streams, each round after the one before",
                    0.001);
}

Trace import_hip_bus_bandwidth(const std::string& path, const BandwidthTestImport& info,
                               RocmBandwidthReport& report) {
  // The bandwidth is printed to 0.0001 GB/s; durations come from the median time (0.0001 ms).
  return import_log(path, info, report, parse_hip_bus_bandwidth, "hipbusbandwidth",
                    "per size, hipMemcpy of beats back-to-back copies timed by events: the median over the "
                    "iterations of time / beats; back-to-back copies of that time each",
                    0.0001);
}

}  // namespace spyre_dma::traces
