// Phases of copies appended to an importer's trace (trace_builder.hpp).
#include "trace_builder.hpp"

#include <algorithm>

namespace spyre_dma::traces::detail {

TraceBuilder::TraceBuilder(Trace& trace) : trace_(trace) {
  if (!trace.ops.empty()) next_op_ = trace.ops.back().id + 1;
  for (const Allocation& a : trace.allocations) next_alloc_ = std::max(next_alloc_, a.id + 1);
}

void TraceBuilder::add_point(const BandwidthPoint& point) {
  Phase phase;
  if (point.both_ways) {
    // The tool timed the pair from the earlier start to the later end: each copy carries that
    // span, and the group tells compare to set the replayed pair's span against it.
    const double span = 2.0 * static_cast<double>(point.bytes) / point.gbps;
    phase.lanes.push_back(Lane{0, OpKind::kH2D, point.host, point.bytes, span});
    phase.lanes.push_back(Lane{0, OpKind::kD2H, point.host, point.bytes, span});
    phase.copies = copies_for_size(point.bytes);
    phase.rounds = true;  // the tool waits for both copies of an iteration before the next
    ConcurrentGroup g;
    g.label = std::string("h2d+d2h ") + to_string(point.host) + " (span)";
    g.measure = GroupMeasure::kSpan;
    g.source = "line " + std::to_string(point.line);
    g.note = "the tool times an H2D and a D2H started together, from the earlier start to the later end; "
             "compare sets the replayed pair's span against it";
    phase.group = std::move(g);
    add(phase);
    return;
  }
  const double duration = static_cast<double>(point.bytes) / point.gbps;  // bytes / (GB/s) = ns
  phase.lanes.push_back(Lane{0, point.kind, point.host, point.bytes, duration});
  phase.copies = copies_for_size(point.bytes);
  add(phase);
}

void TraceBuilder::add(const Phase& phase) {
  const std::size_t n = phase.lanes.size();
  std::vector<std::uint64_t> alloc(n);
  std::vector<std::pair<std::uint32_t, std::uint32_t>> queue(n);  // (device, stream)
  std::map<std::uint32_t, std::uint32_t> next_stream;
  for (std::size_t i = 0; i < n; ++i) {
    const Lane& lane = phase.lanes[i];
    alloc[i] = next_alloc_++;
    // A D2D copies one half of a double-sized allocation into the other (ranges must not overlap).
    trace_.allocations.push_back(
        Allocation{alloc[i], lane.kind == OpKind::kD2D ? 2 * lane.bytes : lane.bytes, 0, lane.device});
    // A lone lane takes its device's stream 0. Lanes that are to start together take streams the
    // phase before did not end on: each then waits for that phase through the same dependencies
    // (a stream that followed its own last op would start as soon as that op ended, the others
    // only once the replay saw the whole phase done).
    std::uint32_t& stream = next_stream[lane.device];
    if (n > 1) {
      while (std::find(tail_queues_.begin(), tail_queues_.end(), std::make_pair(lane.device, stream)) !=
             tail_queues_.end())
        ++stream;
    }
    queue[i] = {lane.device, stream++};
    devices_ = std::max(devices_, lane.device + 1);
  }

  std::optional<ConcurrentGroup> group = phase.group;
  const std::uint64_t first = next_op_;
  std::vector<double> t(n, t_);  // each measured lane's captured clock
  std::vector<std::uint64_t> last(n, 0);
  for (std::uint32_t k = 0; k < phase.copies; ++k) {
    const std::vector<std::uint64_t> before = last;  // the round before (rounds)
    std::vector<std::uint64_t> round;
    for (std::size_t i = 0; i < n; ++i) {
      const Lane& lane = phase.lanes[i];
      Op op;
      op.id = next_op_++;
      op.device = lane.device;
      op.stream = queue[i].second;
      op.kind = lane.kind;
      op.bytes = lane.bytes;
      op.host = lane.host;
      if (lane.kind == OpKind::kH2D) {
        op.dst_alloc = alloc[i];
      } else if (lane.kind == OpKind::kD2H) {
        op.src_alloc = alloc[i];
      } else {
        op.src_alloc = alloc[i];
        op.dst_alloc = alloc[i];
        op.dst_offset = lane.bytes;
      }
      if (k == 0) {
        // After every stream of the phase before; the lane's own stream keeps its order anyway.
        for (std::size_t j = 0; j < tails_.size(); ++j)
          if (tail_queues_[j] != queue[i]) op.deps.push_back(tails_[j]);
      } else if (phase.rounds) {
        for (std::size_t j = 0; j < n; ++j)
          if (queue[j] != queue[i]) op.deps.push_back(before[j]);
      }
      std::sort(op.deps.begin(), op.deps.end());
      if (lane.duration_ns) {
        op.start_ns = t[i];
        op.duration_ns = *lane.duration_ns;
        t[i] += *lane.duration_ns;
      }
      last[i] = op.id;
      round.push_back(op.id);
      trace_.ops.push_back(std::move(op));
    }
    if (group && phase.rounds && group->measure == GroupMeasure::kSpan) group->spans.push_back(round);
  }
  for (std::size_t i = 0; i < n; ++i)
    if (phase.lanes[i].duration_ns) t_ = std::max(t_, t[i]);
  tails_ = last;
  tail_queues_ = queue;
  if (group) {
    group->first_op = first;
    group->last_op = next_op_ - 1;
    groups_.push_back(std::move(*group));
  }
}

void TraceBuilder::finish() {
  if (!groups_.empty()) {
    nlohmann::json groups = nlohmann::json::array();
    for (const ConcurrentGroup& g : groups_) groups.push_back(g.to_json());
    trace_.header.extra["groups"] = std::move(groups);
  }
  trace_.header.devices = std::max(trace_.header.devices, devices_);
}

}  // namespace spyre_dma::traces::detail
