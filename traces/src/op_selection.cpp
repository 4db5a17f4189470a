// Which copies a calibration fits and which it holds out (calibrate.hpp: OpSelection,
// parse_selection, select_ops, first_copies_per_size, sub_trace).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <regex>
#include <stdexcept>
#include <tuple>
#include <unordered_set>

#include "spyre_dma/traces/calibrate.hpp"
#include "spyre_dma/traces/concurrent.hpp"
#include "text_input.hpp"

namespace spyre_dma::traces {
namespace {

bool is_copy(const Op& op) {
  return op.kind == OpKind::kH2D || op.kind == OpKind::kD2H || op.kind == OpKind::kD2D || op.kind == OpKind::kFill;
}

using detail::trim;

}  // namespace

std::uint64_t parse_bytes(const std::string& text) {
  static const std::regex re(R"(^\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*$)");
  std::smatch m;
  if (!std::regex_match(text, m, re)) throw std::invalid_argument(fmt::format("\"{}\" is not a size", text));
  double v = 0;
  try {
    v = std::stod(m[1].str());
  } catch (const std::out_of_range&) {
    v = std::numeric_limits<double>::infinity();
  }
  const std::string unit = m[2].str();
  static const std::map<std::string, double> kUnits = {
      {"", 1},           {"B", 1},           {"K", 1024.0},     {"KiB", 1024.0},    {"M", 1048576.0},
      {"MiB", 1048576.0}, {"G", 1073741824.0}, {"GiB", 1073741824.0}, {"kB", 1e3},  {"KB", 1e3},
      {"MB", 1e6},       {"GB", 1e9}};
  auto it = kUnits.find(unit);
  if (it == kUnits.end())
    throw std::invalid_argument(fmt::format("\"{}\": unknown unit \"{}\" (KiB, MiB, GiB binary; kB, MB, GB decimal)", text, unit));
  // Byte counts are exact in a double up to 2^53 (8 PiB): beyond it no size is taken, rather than
  // one rounded or wrapped into another.
  const double bytes = v * it->second;
  if (!(bytes <= 9007199254740992.0)) {
    throw std::invalid_argument(fmt::format("\"{}\" is beyond the largest size accepted (2^53 bytes)", text));
  }
  return static_cast<std::uint64_t>(std::llround(bytes));
}

OpSelection parse_selection(const std::string& raw) {
  const std::string text = trim(raw);
  OpSelection s;
  s.text = text;
  if (text == "all" || text.empty()) return s;
  if (text == "even" || text == "odd") {
    s.half = text == "even" ? 0 : 1;
    return s;
  }
  auto parse_bytes = [&](const std::string& size) {  // a size that is not one: name the selection too
    try {
      return traces::parse_bytes(size);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(fmt::format("\"{}\": {}", text, e.what()));
    }
  };
  const auto colon = text.find(':');
  const std::string kind = text.substr(0, colon);
  const std::string rest = colon == std::string::npos ? "" : text.substr(colon + 1);
  if (kind == "below" && !rest.empty()) {
    s.hi = parse_bytes(rest);
  } else if (kind == "atleast" && !rest.empty()) {
    s.lo = parse_bytes(rest);
  } else if (kind == "range" && rest.find(':') != std::string::npos) {
    s.lo = parse_bytes(rest.substr(0, rest.find(':')));
    s.hi = parse_bytes(rest.substr(rest.find(':') + 1));
    if (s.hi <= s.lo) throw std::invalid_argument(fmt::format("\"{}\": the range is empty", text));
  } else {
    throw std::invalid_argument(fmt::format(
        "\"{}\" is not a selection (all, below:SIZE, atleast:SIZE, range:LO:HI, even, odd)", text));
  }
  return s;
}

std::vector<bool> select_ops(const Trace& trace, const OpSelection& sel) {
  std::vector<std::uint64_t> sizes;
  for (const Op& op : trace.ops)
    if (is_copy(op)) sizes.push_back(op.bytes);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  std::vector<bool> out(trace.ops.size(), false);
  for (std::size_t i = 0; i < trace.ops.size(); ++i) {
    const Op& op = trace.ops[i];
    if (!is_copy(op)) continue;
    if (sel.half >= 0) {
      const auto rank = std::lower_bound(sizes.begin(), sizes.end(), op.bytes) - sizes.begin();
      out[i] = static_cast<int>(rank % 2) == sel.half;
    } else {
      out[i] = op.bytes >= sel.lo && op.bytes < sel.hi;
    }
  }
  return out;
}

std::vector<bool> first_copies_per_size(const Trace& trace, std::vector<bool> mask, std::size_t per_size) {
  if (per_size == 0) return mask;
  using Size = std::tuple<OpKind, HostMemory, std::uint64_t>;
  std::map<Size, std::size_t> seen;
  // The call in progress: the copies called while one of them was outstanding, the time its last
  // one was seen done, and the verdict on each size in it.
  std::map<Size, bool> in_call;
  std::optional<double> call_end;
  for (std::size_t i = 0; i < trace.ops.size(); ++i) {
    const Op& op = trace.ops[i];
    if (!is_copy(op)) continue;
    const bool timed = op.host_start_ns && op.host_duration_ns;
    if (!(timed && call_end && *op.host_start_ns < *call_end)) {
      in_call.clear();
      call_end.reset();
    }
    if (timed) call_end = std::max(call_end.value_or(0.0), *op.host_start_ns + *op.host_duration_ns);
    if (!mask[i]) continue;
    const Size size{op.kind, op.host, op.bytes};
    auto verdict = in_call.find(size);
    if (verdict == in_call.end()) verdict = in_call.emplace(size, ++seen[size] <= per_size).first;
    mask[i] = verdict->second;
  }
  return mask;
}

Trace sub_trace(const Trace& trace, const std::vector<bool>& keep) {
  Trace out;
  out.header = trace.header;
  std::unordered_set<std::uint64_t> kept_ids, allocs;
  for (std::size_t i = 0; i < trace.ops.size(); ++i) {
    const Op& op = trace.ops[i];
    if (is_copy(op) && !keep[i]) continue;
    Op o = op;
    o.deps.erase(std::remove_if(o.deps.begin(), o.deps.end(), [&](std::uint64_t d) { return !kept_ids.count(d); }),
                 o.deps.end());
    kept_ids.insert(o.id);
    if (o.src_alloc) allocs.insert(o.src_alloc);
    if (o.dst_alloc) allocs.insert(o.dst_alloc);
    out.ops.push_back(std::move(o));
  }
  for (const Allocation& a : trace.allocations)
    if (allocs.count(a.id)) out.allocations.push_back(a);
  // A concurrent trace's groups name op ids: cut down to the ops kept, so that compare reads them.
  const std::vector<ConcurrentGroup> groups = concurrent_groups(trace);
  if (!groups.empty()) {
    std::vector<std::uint64_t> ids;
    for (const Op& o : out.ops) ids.push_back(o.id);
    nlohmann::json kept = nlohmann::json::array();
    for (const ConcurrentGroup& g : narrow_groups(groups, ids)) kept.push_back(g.to_json());
    out.header.extra["groups"] = std::move(kept);
  }
  return out;
}

}  // namespace spyre_dma::traces
