#include "spyre_dma/traces/compare.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "spyre_dma/traces/concurrent.hpp"

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
  // A copy measured beside others is no sample of the one-way figures, nor they of it: each
  // summary row covers one kind.
  std::vector<const OpComparison*> one_way, concurrent;
  for (const auto& o : ops) (o.concurrent ? concurrent : one_way).push_back(&o);
  if (!one_way.empty()) out.push_back(stats_of("all", "all", one_way));
  if (!concurrent.empty()) out.push_back(stats_of("all concurrent", "all", concurrent));
  return out;
}

const char* to_string(Timing timing) { return timing == Timing::kHost ? "host" : "device"; }

Timing timing_from_string(const std::string& text) {
  if (text == "device") return Timing::kDevice;
  if (text == "host") return Timing::kHost;
  throw std::invalid_argument("timing '" + text + "': give 'device' or 'host'");
}

namespace {

struct Span {
  double start = 0, length = 0;
};

// Per op with a span on its stream's timeline (`span_of`; none: left out), the time it added to
// that stream: its end minus the later of its start and the end of the stream's ops before it.
template <typename SpanOf>
std::unordered_map<std::uint64_t, double> time_added(const Trace& trace, SpanOf span_of) {
  std::map<std::pair<std::uint32_t, std::uint32_t>, double> stream_end;
  std::unordered_map<std::uint64_t, double> added;
  for (const Op& op : trace.ops) {
    const std::optional<Span> span = span_of(op);
    if (!span) continue;
    const double start = span->start, end = start + span->length;
    auto prev = stream_end.find({op.device, op.stream});
    const double from = prev == stream_end.end() ? start : std::max(start, prev->second);
    added[op.id] = std::max(0.0, end - from);
    stream_end[{op.device, op.stream}] = prev == stream_end.end() ? end : std::max(end, prev->second);
  }
  return added;
}

}  // namespace

Comparison compare(const Trace& captured, const ReplayResult& replayed, Timing timing) {
  Comparison c;
  c.source = captured.header.source;
  c.timing = timing;
  // The captured figure and the replayed op's span on the time base asked for.
  const bool host = timing == Timing::kHost;
  const auto start_of = [host](const OpTiming& t) { return host ? t.host_start_ns : t.start_ns; };
  const auto length_of = [host](const OpTiming& t) { return host ? t.host_duration_ns : t.duration_ns; };
  c.resolution_ns = captured.header.resolution_ns;
  std::unordered_map<std::uint64_t, const OpTiming*> by_id;
  for (const auto& t : replayed.ops) by_id.emplace(t.id, &t);

  // The groups of a concurrent trace: which group each op is in, and the spans by their first op.
  const std::vector<ConcurrentGroup> groups = concurrent_groups(captured);
  std::unordered_map<std::uint64_t, std::size_t> group_of;
  std::unordered_map<std::uint64_t, const std::vector<std::uint64_t>*> span_at;
  std::unordered_set<std::uint64_t> in_span;
  // Groups never share an op: by first op, the group of an op is the last one starting at or below it.
  std::map<std::uint64_t, std::size_t> by_first;
  for (std::size_t g = 0; g < groups.size(); ++g) by_first.emplace(groups[g].first_op, g);
  for (const Op& op : captured.ops) {
    auto at = by_first.upper_bound(op.id);
    if (at == by_first.begin()) continue;
    --at;
    if (op.id <= groups[at->second].last_op) group_of.emplace(op.id, at->second);
  }
  for (std::size_t g = 0; g < groups.size(); ++g) {
    for (const auto& span : groups[g].spans) {
      span_at.emplace(span.front(), &span);
      in_span.insert(span.begin(), span.end());
    }
    const std::string note = groups[g].label + ": " + groups[g].note;
    if (!groups[g].note.empty() && std::find(c.notes.begin(), c.notes.end(), note) == c.notes.end())
      c.notes.push_back(note);
  }

  // A GPU stream runs its ops one after another, so a captured duration is the time the op added
  // to its stream. The model may overlap consecutive ops of a stream (CB prefetch, the pipelined
  // read engine); what compares is then the simulated end minus the later of the op's start and
  // the previous op's end on that stream (bandwidthTest's loop time is the sum of these). A
  // stream is one device's.
  const std::unordered_map<std::uint64_t, double> added = time_added(captured, [&](const Op& op) -> std::optional<Span> {
    auto it = by_id.find(op.id);
    if (it == by_id.end() || length_of(*it->second) <= 0) return std::nullopt;
    return Span{start_of(*it->second), length_of(*it->second)};
  });
  // Host time holds the waits of ops called ahead of their turn on the stream, in the capture as
  // in the replay, each as its caller issued them: both sides compare the time added to the
  // stream's host timeline (a synchronous caller's host time is that already).
  std::unordered_map<std::uint64_t, double> captured_added;
  if (host) {
    captured_added = time_added(captured, [](const Op& op) -> std::optional<Span> {
      if (!op.host_start_ns || !op.host_duration_ns) return std::nullopt;
      return Span{*op.host_start_ns, *op.host_duration_ns};
    });
  }
  const auto captured_of = [host](const Op& op) { return host ? op.host_duration_ns : op.duration_ns; };
  for (const Op& op : captured.ops) {
    const bool copy = op.kind == OpKind::kH2D || op.kind == OpKind::kD2H || op.kind == OpKind::kD2D ||
                      op.kind == OpKind::kFill;
    if (!copy) continue;
    const auto g = group_of.find(op.id);
    const ConcurrentGroup* group = g == group_of.end() ? nullptr : &groups[g->second];
    if (in_span.count(op.id)) {
      // A span is compared once, at its first op: the replayed ops' latest end less their
      // earliest start against what the tool timed (each op carries it).
      const auto sp = span_at.find(op.id);
      if (sp == span_at.end()) continue;
      double first = 0, last = 0;
      bool all = captured_of(op).has_value();
      for (std::size_t k = 0; k < sp->second->size() && all; ++k) {
        const auto t = by_id.find((*sp->second)[k]);
        if (t == by_id.end() || length_of(*t->second) <= 0) {
          all = false;
          break;
        }
        const double s = start_of(*t->second), e = s + length_of(*t->second);
        first = k == 0 ? s : std::min(first, s);
        last = k == 0 ? e : std::max(last, e);
      }
      if (!all) {
        ++c.skipped;
        continue;
      }
      OpComparison o;
      o.id = op.id;
      o.direction = group->label;
      o.measure = to_string(GroupMeasure::kSpan);
      o.concurrent = true;
      o.device = op.device;
      o.bytes = op.bytes;
      o.captured_ns = *captured_of(op);
      o.simulated_ns = last - first;
      o.bound = o.captured_ns <= 0 || (c.resolution_ns > 0 && o.captured_ns <= c.resolution_ns);
      o.rel_error = o.bound ? 0 : (o.simulated_ns - o.captured_ns) / o.captured_ns;
      c.ops.push_back(o);
      continue;
    }
    auto it = by_id.find(op.id);
    if (!captured_of(op) || it == by_id.end()) {
      ++c.skipped;
      continue;
    }
    const bool latency = group && group->measure == GroupMeasure::kLatency;
    OpComparison o;
    o.id = op.id;
    o.direction = group ? group->label : direction_name(op);
    o.measure = to_string(latency ? GroupMeasure::kLatency : GroupMeasure::kCopy);
    o.concurrent = group && group->measure == GroupMeasure::kCopy;
    o.device = op.device;
    o.bytes = op.bytes;
    // A latency point is one copy alone: its own time, on both sides.
    const auto ca = captured_added.find(op.id);
    o.captured_ns = !latency && ca != captured_added.end() ? ca->second : *captured_of(op);
    const auto a = added.find(op.id);
    o.simulated_ns = !latency && a != added.end() ? a->second : length_of(*it->second);
    o.bound = o.captured_ns <= 0 || (c.resolution_ns > 0 && o.captured_ns <= c.resolution_ns);
    o.rel_error = o.bound ? 0 : (o.simulated_ns - o.captured_ns) / o.captured_ns;
    (latency ? c.latency : c.ops).push_back(o);
  }
  c.groups = group_stats(c.ops);
  c.latency_groups = group_stats(c.latency);
  return c;
}

const GroupStats* Comparison::find(const std::string& direction, const std::string& cls) const {
  for (const auto& g : groups)
    if (g.direction == direction && g.size_class == cls) return &g;
  return nullptr;
}

namespace {

nlohmann::json ops_json(const std::vector<OpComparison>& ops) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& o : ops) {
    nlohmann::json j = {{"id", o.id},
                        {"direction", o.direction},
                        {"measure", o.measure},
                        {"concurrent", o.concurrent},
                        {"device", o.device},
                        {"bytes", o.bytes},
                        {"size_class", size_class(o.bytes)},
                        {"captured_ns", o.captured_ns},
                        {"simulated_ns", o.simulated_ns},
                        {"bound", o.bound}};
    if (!o.bound) j["rel_error"] = o.rel_error;
    out.push_back(std::move(j));
  }
  return out;
}

nlohmann::json groups_json(const std::vector<GroupStats>& groups) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& g : groups) {
    out.push_back({{"direction", g.direction},
                   {"size_class", g.size_class},
                   {"ops", g.ops},
                   {"bounds", g.bounds},
                   {"median_abs_rel_error", g.median_abs},
                   {"p90_abs_rel_error", g.p90_abs},
                   {"bias", g.bias},
                   {"max_abs_rel_error", g.max_abs}});
  }
  return out;
}

std::string stats_table(const std::vector<GroupStats>& groups) {
  std::size_t width = 16;
  for (const auto& g : groups) width = std::max(width, g.direction.size());
  std::string out = fmt::format("{:<{}} {:<11} {:>5} {:>6} {:>9} {:>9} {:>9} {:>9}\n", "direction", width, "size",
                                "ops", "bounds", "median|e|", "p90|e|", "bias", "max|e|");
  for (const auto& g : groups) {
    out += fmt::format("{:<{}} {:<11} {:>5} {:>6} {:>8.1f}% {:>8.1f}% {:>+8.1f}% {:>8.1f}%\n", g.direction, width,
                       g.size_class, g.ops, g.bounds, 100 * g.median_abs, 100 * g.p90_abs, 100 * g.bias,
                       100 * g.max_abs);
  }
  return out;
}

}  // namespace

nlohmann::json Comparison::to_json() const {
  nlohmann::json j = {{"source", source},   {"timing", to_string(timing)}, {"resolution_ns", resolution_ns},
                      {"skipped", skipped},
                      {"groups", groups_json(groups)}, {"ops", ops_json(ops)}};
  if (!latency.empty()) j["latency"] = {{"groups", groups_json(latency_groups)}, {"ops", ops_json(latency)}};
  if (!notes.empty()) j["notes"] = notes;
  return j;
}

std::string Comparison::table() const {
  std::string out = fmt::format("timing: {}  (error = (simulated - captured) / captured: > 0, the model is slower)\n",
                                to_string(timing)) +
                    stats_table(groups);
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
  if (!latency.empty()) {
    // Latencies are no bandwidth sample: a section of their own, each point shown.
    out += "\nlatency points (not in the bandwidth statistics above):\n" + stats_table(latency_groups);
    for (const auto& o : latency) {
      out += fmt::format("latency: device {} {} B: captured {}, simulated {}{}\n", o.device, o.bytes,
                         fmt_ns(o.captured_ns), fmt_ns(o.simulated_ns),
                         o.bound ? std::string(" (bound)") : fmt::format(" ({:+.1f}%)", 100 * o.rel_error));
    }
  }
  for (const auto& n : notes) out += "note: " + n + "\n";
  if (skipped) {
    out += fmt::format("{} ops without a captured {} time or a replayed one were not compared\n", skipped,
                       to_string(timing));
  }
  return out;
}

std::string Comparison::worst(const Trace& captured, std::size_t n) const {
  std::vector<const OpComparison*> order;
  for (const auto& o : ops)
    if (!o.bound) order.push_back(&o);
  n = std::min(n, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), order.end(),
                    [](const OpComparison* a, const OpComparison* b) {
                      return std::abs(a->rel_error) > std::abs(b->rel_error) ||
                             (std::abs(a->rel_error) == std::abs(b->rel_error) && a->id < b->id);
                    });
  if (n == 0) return std::string();
  std::unordered_map<std::uint64_t, const Op*> by_id;
  for (const Op& op : captured.ops) by_id.emplace(op.id, &op);
  std::string out = fmt::format("worst {} of {} compared ops ({} time):\n", n, order.size(), to_string(timing));
  out += fmt::format("{:>4} {:>8} {:<16} {:>10} {:>3} {:>6} {:>12} {:>12} {:>12} {:>9}\n", "rank", "op", "direction",
                     "bytes", "dev", "stream", "captured at", "captured", "simulated", "error");
  for (std::size_t i = 0; i < n; ++i) {
    const OpComparison& o = *order[i];
    const auto it = by_id.find(o.id);
    const Op* op = it == by_id.end() ? nullptr : it->second;
    std::string at = "-";
    if (op && timing == Timing::kHost && op->host_start_ns) at = fmt_ns(*op->host_start_ns);
    else if (op && op->start_ns) at = fmt_ns(*op->start_ns);
    out += fmt::format("{:>4} {:>8} {:<16} {:>10} {:>3} {:>6} {:>12} {:>12} {:>12} {:>+8.1f}%{}\n", i + 1, o.id,
                       o.direction, o.bytes, o.device, op ? std::to_string(op->stream) : std::string("-"), at,
                       fmt_ns(o.captured_ns), fmt_ns(o.simulated_ns), 100 * o.rel_error,
                       o.measure != "copy" ? " (" + o.measure + ")" : o.concurrent ? " (beside its group)" : "");
  }
  return out;
}

}  // namespace spyre_dma::traces
