// Comparing a captured trace with its replay: per-op relative error of the simulated duration
// against the captured one, and statistics by direction and size class (docs/traces.md, "Compare").
// A concurrent trace's groups (concurrent.hpp) are compared as their header says: measured copies
// under the group's label, spans as spans, latency points in a section of their own.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "spyre_dma/traces/replay.hpp"
#include "spyre_dma/traces/trace.hpp"

namespace spyre_dma::traces {

// Size classes of the statistics: [0, 64 KiB), [64 KiB, 1 MiB), [1 MiB, 16 MiB), [16 MiB, inf).
const char* size_class(std::uint64_t bytes);
const std::vector<std::string>& size_class_names();

// "h2d registered", "h2d pageable", "d2h registered", "d2h pageable", "d2d", "fill".
std::string direction_name(const Op& op);

struct OpComparison {
  std::uint64_t id = 0;   // the op's id (a span: its first op's)
  std::string direction;  // direction_name(), or the label of the op's group
  std::string measure = "copy";  // "copy", "span" or "latency" (to_string(GroupMeasure))
  bool concurrent = false;       // measured while other copies of its group ran
  std::uint32_t device = 0;
  std::uint64_t bytes = 0;  // a span: each of its copies' size
  double captured_ns = 0;
  double simulated_ns = 0;
  double rel_error = 0;  // (simulated - captured) / captured; 0 for bounds
  // Captured at or below the capture's resolution: the captured figure only says "at most one
  // tick", so it is reported as a bound, never as an error.
  bool bound = false;
};

struct GroupStats {
  std::string direction;   // as direction_name(), or "all"
  std::string size_class;  // as size_class(), or "all"
  std::size_t ops = 0;     // compared ops (bounds not counted)
  std::size_t bounds = 0;
  double median_abs = 0;   // median of |relative error|
  double p90_abs = 0;      // 90th percentile of |relative error| (nearest rank)
  double bias = 0;         // median of the signed relative error
  double max_abs = 0;
};

// Which time a comparison sets against which (docs/engine.md, "Timing"): device time, the
// captured duration_ns against the replayed ops' device times; or host time, the captured
// host_duration_ns against the replayed ops' host times.
enum class Timing : std::uint8_t { kDevice, kHost };
const char* to_string(Timing timing);  // "device", "host"
// "device" or "host"; throws std::invalid_argument naming the text otherwise.
Timing timing_from_string(const std::string& text);

struct Comparison {
  std::string source;          // the captured trace's header.source
  Timing timing = Timing::kDevice;
  double resolution_ns = 0;
  // Every copy and fill with a captured duration, and every span, in trace order; latency points
  // are in `latency`.
  std::vector<OpComparison> ops;
  // Per direction x size class, then per direction "all"; then "all"/"all" over the one-way points
  // and "all concurrent"/"all" over the concurrent ones (each where there are some).
  std::vector<GroupStats> groups;
  std::vector<OpComparison> latency;        // latency points, trace order
  std::vector<GroupStats> latency_groups;   // per label x size class, per label "all"
  std::vector<std::string> notes;           // what the groups' captured figures measured (their notes), once each
  std::size_t skipped = 0;                  // ops without a captured duration or not replayed

  const GroupStats* find(const std::string& direction, const std::string& size_class) const;
  nlohmann::json to_json() const;
  std::string table() const;  // the groups, then the bounds, as a text table
  // The `n` ops with the largest |error| (bounds and latency points left out), worst first, each
  // with what the capture says of it (stream, host memory, captured start): a text table.
  std::string worst(const Trace& captured, std::size_t n) const;
};

// Statistics of a set of per-op comparisons (a subset of Comparison::ops, say).
std::vector<GroupStats> group_stats(const std::vector<OpComparison>& ops);

// Compares every copy (H2D, D2H, D2D) and fill of `captured` that has a captured duration with
// the same op id's duration in `replayed`. Compute ops are left out: a replay gives them exactly
// their captured duration. The ops of a group of header.extra.groups are compared as its measure
// says: kCopy, each measured op (a captured duration) as a copy under the group's label; kSpan,
// each span's captured duration against the replayed span (latest end - earliest start of its
// ops); kLatency, each op's device time, in `latency`. Throws TraceError (file "<trace>") for
// groups concurrent_groups() rejects.
// With Timing::kHost, host times stand where device times stand above, and the captured figure
// is the time the op added to its stream's captured host timeline too (host_start_ns; an op
// without a captured host_duration_ns is skipped).
Comparison compare(const Trace& captured, const ReplayResult& replayed, Timing timing = Timing::kDevice);

}  // namespace spyre_dma::traces
