// Concurrent traces: which ops of a trace ran at once as one measurement, and what was measured,
// as the header's extra.groups records it (docs/traces.md, "Concurrent traces").
//
// A bandwidth tool that measures one copy while others run (nvbandwidth's bidirectional and
// all-device testcases), or times two copies together (rocm-bandwidth-test's bidirectional
// tables), is imported as groups of ops on several streams and devices. Only some of a group's
// ops carry a captured duration; the group says what compare is to set against it: each measured
// copy (as one-way copies), the span of ops timed together, or a latency. Its label is the
// direction compare reports it under, so concurrent points never mix with one-way ones.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "spyre_dma/traces/trace.hpp"

namespace spyre_dma::traces {

enum class GroupMeasure : std::uint8_t {
  kCopy,     // every op with a captured duration is one measured copy (the others ran beside it)
  kSpan,     // each of `spans` is ops timed together: latest end - earliest start, captured on each op
  kLatency,  // each op with a captured duration is a latency point, reported apart from bandwidths
};
// JSON names: "copy", "span", "latency".
const char* to_string(GroupMeasure measure);
std::optional<GroupMeasure> parse_group_measure(const std::string& name);

struct ConcurrentGroup {
  std::string label;  // the direction compare reports its points under, e.g. "h2d registered (d2h beside)"
  GroupMeasure measure = GroupMeasure::kCopy;
  std::uint64_t first_op = 0, last_op = 0;  // its ops: the trace's ops with ids in [first_op, last_op]
  std::string source;  // what it came from (a testcase and its cell, a table line); "" not said
  // What the captured figure measured where a replay measures something else ("" none): compare
  // prints it with the group's points.
  std::string note;
  std::vector<std::vector<std::uint64_t>> spans;  // kSpan only: op ids timed together, one span each

  nlohmann::json to_json() const;
};

// The groups of header.extra.groups (none when absent), checked against the trace: an array of
// objects with a non-empty label, a known measure, first_op <= last_op naming ops of the trace,
// no op in two groups, and spans (kSpan only, required there) of at least two ops of the group
// each. Anything else is a TraceError for "<trace>", line 1 (the header), naming the key
// ("header.extra.groups[2].first_op") and its value.
std::vector<ConcurrentGroup> concurrent_groups(const Trace& trace);

// The groups of a trace cut down to the ops `kept` (a part of it, such as a calibration's fit
// copies): each group spans its kept ops, a span keeps only if all its ops are kept, and a group
// left without ops (or, measuring spans, without a span) is dropped.
std::vector<ConcurrentGroup> narrow_groups(const std::vector<ConcurrentGroup>& groups,
                                           const std::vector<std::uint64_t>& kept_ids);

// header.extra.devices_per_switch: how many consecutive devices of the trace shared a PCIe switch
// when its producer knew the machine's topology (0: each on a root port of its own); nullopt when
// not said. A value that is not an integer in [0, 16] is a TraceError naming the key and value.
std::optional<std::uint32_t> devices_per_switch(const Header& header);

}  // namespace spyre_dma::traces
