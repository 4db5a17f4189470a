#include "spyre_dma/traces/compare.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

namespace spyre_dma::traces {
namespace {

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  if (q == 0.5) {  // the usual median: mean of the two middle values for an even count
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  }
  // Nearest rank: the smallest value with at least q of the values at or below it.
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::max<std::size_t>(rank, 1) - 1];
}

GroupStats stats_of(const std::string& direction, const std::string& size_class,
                    const std::vector<const OpComparison*>& ops) {
  GroupStats g;
  g.direction = direction;
  g.size_class = size_class;
  std::vector<double> abs, sig;
  for (const OpComparison* o : ops) {
    if (o->bound) {
      ++g.bounds;
      continue;
    }
    abs.push_back(std::fabs(o->rel_error));
    sig.push_back(o->rel_error);
  }
  g.ops = abs.size();
  g.median_abs = quantile(abs, 0.5);
  g.p90_abs = quantile(abs, 0.9);
  g.bias = quantile(sig, 0.5);
  g.max_abs = abs.empty() ? 0 : *std::max_element(abs.begin(), abs.end());
  return g;
}

std::string fmt_ns(double ns) {
  if (ns >= 1e6) return fmt::format("{:.3f} ms", ns / 1e6);
  if (ns >= 1e3) return fmt::format("{:.2f} us", ns / 1e3);
  return fmt::format("{:.0f} ns", ns);
}

}  // namespace

const std::vector<std::string>& size_class_names() {
  static const std::vector<std::string> kNames = {"<64KiB", "64KiB-1MiB", "1MiB-16MiB", ">=16MiB"};
  return kNames;
}

const char* size_class(std::uint64_t bytes) {
  if (bytes < (64ull << 10)) return "<64KiB";
  if (bytes < (1ull << 20)) return "64KiB-1MiB";
  if (bytes < (16ull << 20)) return "1MiB-16MiB";
  return ">=16MiB";
}

std::string direction_name(const Op& op) {
  const char* host = op.host == HostMemory::kPageable ? " pageable" : " registered";
  switch (op.kind) {
    case OpKind::kH2D: return std::string("h2d") + host;
    case OpKind::kD2H: return std::string("d2h") + host;
    case OpKind::kD2D: return "d2d";
    case OpKind::kFill: return "fill";
    default: return to_string(op.kind);
  }
}

std::vector<GroupStats> group_stats(const std::vector<OpComparison>& ops) {
  // Directions in a fixed order, then size classes in size order: the same table every run.
  std::vector<std::string> directions;
  for (const auto& o : ops)
    if (std::find(directions.begin(), directions.end(), o.direction) == directions.end()) directions.push_back(o.direction);
  std::sort(directions.begin(), directions.end());
  std::vector<GroupStats> out;
  for (const auto& d : directions) {
    for (const auto& c : size_class_names()) {
      std::vector<const OpComparison*> sel;
      for (const auto& o : ops)
        if (o.direction == d && size_class(o.bytes) == c) sel.push_back(&o);
      if (!sel.empty()) out.push_back(stats_of(d, c, sel));
    }
    std::vector<const OpComparison*> sel;
    for (const auto& o : ops)
      if (o.direction == d) sel.push_back(&o);
    out.push_back(stats_of(d, "all", sel));
  }
  std::vector<const OpComparison*> all;
  for (const auto& o : ops) all.push_back(&o);
  if (!all.empty()) out.push_back(stats_of("all", "all", all));
  return out;
}

Comparison compare(const Trace& captured, const ReplayResult& replayed) {
  Comparison c;
  c.source = captured.header.source;
  c.resolution_ns = captured.header.resolution_ns;
  std::unordered_map<std::uint64_t, const OpTiming*> by_id;
  for (const auto& t : replayed.ops) by_id.emplace(t.id, &t);
  // A GPU stream runs its ops one after another, so a captured duration is the time the op added
  // to its stream. The model may overlap consecutive ops of a stream (CB prefetch, the pipelined
  // read engine); what compares is then the simulated end minus the later of the op's start and
  // the previous op's end on that stream (bandwidthTest's loop time is the sum of these).
  std::unordered_map<std::uint32_t, double> stream_end;
  std::unordered_map<std::uint64_t, double> added;
  for (const Op& op : captured.ops) {
    auto it = by_id.find(op.id);
    if (it == by_id.end() || it->second->duration_ns <= 0) continue;
    const double start = it->second->start_ns, end = start + it->second->duration_ns;
    auto prev = stream_end.find(op.stream);
    const double from = prev == stream_end.end() ? start : std::max(start, prev->second);
    added[op.id] = std::max(0.0, end - from);
    stream_end[op.stream] = prev == stream_end.end() ? end : std::max(end, prev->second);
  }
  for (const Op& op : captured.ops) {
    const bool copy = op.kind == OpKind::kH2D || op.kind == OpKind::kD2H || op.kind == OpKind::kD2D ||
                      op.kind == OpKind::kFill;
    if (!copy) continue;
    auto it = by_id.find(op.id);
    if (!op.duration_ns || it == by_id.end()) {
      ++c.skipped;
      continue;
    }
    OpComparison o;
    o.id = op.id;
    o.direction = direction_name(op);
    o.bytes = op.bytes;
    o.captured_ns = *op.duration_ns;
    o.simulated_ns = added.count(op.id) ? added[op.id] : it->second->duration_ns;
    o.bound = o.captured_ns <= 0 || (c.resolution_ns > 0 && o.captured_ns <= c.resolution_ns);
    o.rel_error = o.bound ? 0 : (o.simulated_ns - o.captured_ns) / o.captured_ns;
    c.ops.push_back(o);
  }
  c.groups = group_stats(c.ops);
  return c;
}

const GroupStats* Comparison::find(const std::string& direction, const std::string& cls) const {
  for (const auto& g : groups)
    if (g.direction == direction && g.size_class == cls) return &g;
  return nullptr;
}

nlohmann::json Comparison::to_json() const {
  nlohmann::json ops_json = nlohmann::json::array();
  for (const auto& o : ops) {
    nlohmann::json j = {{"id", o.id},
                        {"direction", o.direction},
                        {"bytes", o.bytes},
                        {"size_class", size_class(o.bytes)},
                        {"captured_ns", o.captured_ns},
                        {"simulated_ns", o.simulated_ns},
                        {"bound", o.bound}};
    if (!o.bound) j["rel_error"] = o.rel_error;
    ops_json.push_back(std::move(j));
  }
  nlohmann::json groups_json = nlohmann::json::array();
  for (const auto& g : groups) {
    groups_json.push_back({{"direction", g.direction},
                           {"size_class", g.size_class},
                           {"ops", g.ops},
                           {"bounds", g.bounds},
                           {"median_abs_rel_error", g.median_abs},
                           {"p90_abs_rel_error", g.p90_abs},
                           {"bias", g.bias},
                           {"max_abs_rel_error", g.max_abs}});
  }
  return {{"source", source}, {"resolution_ns", resolution_ns}, {"skipped", skipped},
          {"groups", groups_json}, {"ops", ops_json}};
}

std::string Comparison::table() const {
  std::string out = fmt::format("{:<16} {:<11} {:>5} {:>6} {:>9} {:>9} {:>9} {:>9}\n", "direction", "size",
                                "ops", "bounds", "median|e|", "p90|e|", "bias", "max|e|");
  for (const auto& g : groups) {
    out += fmt::format("{:<16} {:<11} {:>5} {:>6} {:>8.1f}% {:>8.1f}% {:>+8.1f}% {:>8.1f}%\n", g.direction,
                       g.size_class, g.ops, g.bounds, 100 * g.median_abs, 100 * g.p90_abs, 100 * g.bias,
                       100 * g.max_abs);
  }
  // Bounds, summarised per direction and size so a trace of thousands of tiny copies stays short.
  std::map<std::pair<std::string, std::uint64_t>, std::pair<std::size_t, std::vector<double>>> bounds;
  for (const auto& o : ops) {
    if (!o.bound) continue;
    auto& b = bounds[{o.direction, o.bytes}];
    ++b.first;
    b.second.push_back(o.simulated_ns);
  }
  for (const auto& [key, b] : bounds) {
    const auto [lo, hi] = std::minmax_element(b.second.begin(), b.second.end());
    out += fmt::format("bound: {} {} B x {}: captured <= {}, simulated {}{}\n", key.first, key.second, b.first,
                       fmt_ns(resolution_ns), fmt_ns(*lo), *hi != *lo ? " .. " + fmt_ns(*hi) : std::string());
  }
  if (skipped) out += fmt::format("{} ops without a captured duration or a replayed one were not compared\n", skipped);
  return out;
}

}  // namespace spyre_dma::traces
