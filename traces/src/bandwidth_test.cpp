#include "spyre_dma/traces/bandwidth_test.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

#include "bandwidth_points.hpp"
#include "trace_builder.hpp"
#include "spyre_dma/traces/trace_io.hpp"
#include "text_input.hpp"

namespace spyre_dma::traces {
namespace {

constexpr double kMaxSizeBytes = 9007199254740992.0;  // 2^53

using detail::trim;

// "Bandwidth = 12.4 GB/s" -> value and unit; the key must match.
struct Field {
  std::string value;
  std::string unit;
};

Field field(const std::string& item, const std::string& key, const std::string& name, std::size_t line) {
  const std::string t = trim(item);
  const auto eq = t.find('=');
  if (eq == std::string::npos || trim(t.substr(0, eq)) != key)
    throw TraceError(name, line, key, fmt::format("expected \"{} = ...\", got \"{}\"", key, t));
  const std::string rest = trim(t.substr(eq + 1));
  const auto space = rest.find(' ');
  return Field{rest.substr(0, space), space == std::string::npos ? "" : trim(rest.substr(space + 1))};
}

double to_double(const std::string& text, const std::string& key, const std::string& name, std::size_t line) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !std::isfinite(v) || v < 0)
    throw TraceError(name, line, key, fmt::format("\"{}\" is not a non-negative number", text));
  return v;
}

}  // namespace

std::vector<BandwidthPoint> parse_bandwidth_test(const std::string& text, const std::string& name) {
  std::vector<BandwidthPoint> points;
  std::istringstream in(text);
  std::string raw;
  std::size_t line = 0;
  while (std::getline(in, raw)) {
    ++line;
    const std::string s = trim(raw);
    if (s.rfind("bandwidthTest-", 0) != 0) continue;  // banner, device name, progress dots, PASS
    std::vector<std::string> items;
    std::stringstream ss(s);
    for (std::string item; std::getline(ss, item, ',');) items.push_back(item);
    if (items.size() < 4)
      throw TraceError(name, line, "", fmt::format("expected 5 comma-separated fields, got {}: \"{}\"", items.size(), s));
    BandwidthPoint p;
    p.line = line;
    // "bandwidthTest-H2D-Pinned"
    const std::string tag = trim(items[0]).substr(std::string("bandwidthTest-").size());
    const auto dash = tag.find('-');
    const std::string dir = tag.substr(0, dash);
    const std::string mem = dash == std::string::npos ? "" : tag.substr(dash + 1);
    if (dir == "H2D") p.kind = OpKind::kH2D;
    else if (dir == "D2H") p.kind = OpKind::kD2H;
    else if (dir == "D2D") p.kind = OpKind::kD2D;
    else throw TraceError(name, line, "direction", fmt::format("\"{}\" is not H2D, D2H or D2D", dir));
    // cuda-samples' CSV writes Pinned (with -WriteCombined for --wc) or Paged; some builds wrote
    // Pageable. A suffix after the memory names the copy method (-cudaMemcpy).
    const std::string memory = mem.substr(0, mem.find('-'));
    if (p.kind == OpKind::kD2D) p.host = HostMemory::kNone;
    else if (memory == "Pinned") p.host = HostMemory::kRegistered;
    else if (memory == "Paged" || memory == "Pageable") p.host = HostMemory::kPageable;
    else throw TraceError(name, line, "memory", fmt::format("\"{}\" is not Pinned, Paged or Pageable", mem));

    const Field bw = field(items[1], "Bandwidth", name, line);
    if (bw.unit != "GB/s") throw TraceError(name, line, "Bandwidth", fmt::format("unit \"{}\" is not GB/s", bw.unit));
    p.gbps = to_double(bw.value, "Bandwidth", name, line);
    if (p.gbps <= 0) throw TraceError(name, line, "Bandwidth", fmt::format("{} GB/s: a copy must take time", bw.value));
    // bandwidthTest's D2D figure is 2 x size x reps / time (bytes read and written): the copy
    // itself moves size bytes in time / reps.
    if (p.kind == OpKind::kD2D) p.gbps /= 2;
    const Field time = field(items[2], "Time", name, line);
    if (time.unit != "s") throw TraceError(name, line, "Time", fmt::format("unit \"{}\" is not s", time.unit));
    p.time_s = to_double(time.value, "Time", name, line);
    const Field size = field(items[3], "Size", name, line);
    if (size.unit != "bytes") throw TraceError(name, line, "Size", fmt::format("unit \"{}\" is not bytes", size.unit));
    const double bytes = to_double(size.value, "Size", name, line);
    // Compared exactly where the text is a whole number: 2^53 + 1 rounds to 2^53 as a double.
    if (std::all_of(size.value.begin(), size.value.end(), [](unsigned char c) { return std::isdigit(c); }) &&
        (size.value.size() > 16 || std::stoull(size.value) > static_cast<std::uint64_t>(kMaxSizeBytes)))
      throw TraceError(name, line, "Size", fmt::format("\"{}\" bytes is beyond the largest size accepted (2^53)", size.value));
    if (bytes < 1 || std::floor(bytes) != bytes)
      throw TraceError(name, line, "Size", fmt::format("\"{}\" is not a positive whole number of bytes", size.value));
    // Whole numbers are exact in a double only up to 2^53 (8 PiB), far beyond any bandwidthTest
    // size; larger ones would not even convert to 64 bits.
    if (bytes > kMaxSizeBytes)
      throw TraceError(name, line, "Size", fmt::format("\"{}\" bytes is beyond the largest size accepted (2^53)", size.value));
    if (!detail::copy_time_fits(bytes, p.gbps))
      throw TraceError(name, line, "Bandwidth",
                       fmt::format("{} GB/s for {} bytes gives a copy time a trace cannot hold", bw.value, size.value));
    p.bytes = static_cast<std::uint64_t>(bytes);
    points.push_back(p);
  }
  if (points.empty()) throw TraceError(name, 0, "", "no bandwidthTest result lines (\"bandwidthTest-H2D-Pinned, Bandwidth = ...\")");
  return points;
}

std::uint32_t copies_for_size(std::uint64_t bytes) {
  constexpr std::uint64_t kBudget = 64ull << 20;
  const std::uint64_t n = 1 + kBudget / bytes;
  return static_cast<std::uint32_t>(std::clamp<std::uint64_t>(n, 2, 10));
}

Trace bandwidth_test_trace(const std::vector<BandwidthPoint>& points, const std::string& name,
                           const BandwidthTestImport& info) {
  if (points.empty()) throw TraceError(name, 0, "", "no " + info.tool + " points to import");
  Trace trace;
  trace.header = detail::points_header(name, info);
  detail::TraceBuilder builder(trace);
  for (const BandwidthPoint& p : points) builder.add_point(p);
  builder.finish();
  if (const std::string problem = check_trace(trace); !problem.empty())
    throw TraceError(name, 0, "", "imported trace is inconsistent: " + problem);
  return trace;
}

Header detail::points_header(const std::string& name, const BandwidthTestImport& info) {
  Header h;
  h.source = info.tool + ":" + name;
  h.device = info.device;
  h.link = info.link;
  // The duration of one copy is size / bandwidth, and bandwidth is printed to a resolution (0.1 GB/s
  // for bandwidthTest): the resolution is relative (up to half of it / bandwidth), not an absolute
  // time; 0 says "no absolute floor".
  h.resolution_ns = 0;
  h.extra = nlohmann::json{{"method", info.method}, {"bandwidth_resolution_gbps", info.bandwidth_resolution_gbps}};
  return h;
}

Trace detail::file_points_trace(const std::vector<BandwidthPoint>& points, const std::string& path,
                                const BandwidthTestImport& info) {
  const std::string base = detail::base_name(path);
  try {
    return bandwidth_test_trace(points, base, info);
  } catch (const TraceError& e) {
    if (e.file() == base) throw TraceError(path, e.line(), e.field(), e.message());
    throw;
  }
}

Trace import_bandwidth_test(const std::string& path, const BandwidthTestImport& info) {
  return detail::file_points_trace(parse_bandwidth_test(detail::read_file_text(path), path), path, info);
}

}  // namespace spyre_dma::traces
