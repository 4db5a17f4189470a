// Building the traces of the bandwidth tools' importers: phases of copies appended one after
// another, a phase being one measured point (back-to-back copies on one stream) or a group of
// copies on several streams and devices that ran at once (concurrent.hpp).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "spyre_dma/traces/bandwidth_test.hpp"
#include "spyre_dma/traces/concurrent.hpp"
#include "spyre_dma/traces/trace.hpp"

namespace spyre_dma::traces::detail {

// One stream's back-to-back copies within a phase, on an allocation of its own.
struct Lane {
  std::uint32_t device = 0;
  OpKind kind = OpKind::kH2D;
  HostMemory host = HostMemory::kRegistered;  // kNone for D2D
  std::uint64_t bytes = 0;
  // Each copy's captured duration; none for a copy that only ran beside the measured ones.
  std::optional<double> duration_ns;
};

struct Phase {
  // Lane i runs on a stream of its own on its device, in lane order (a group's measured lane,
  // put first, is its device's first stream of the group). One lane: its device's stream 0.
  // Several: streams the phase before did not end on, so that all of them wait for that phase
  // alike and start together.
  std::vector<Lane> lanes;
  std::uint32_t copies = 1;  // per lane
  // false: every lane runs its copies back to back, all lanes starting together. true: copy k of
  // every lane starts together once every lane's copy k-1 has completed (a tool that times a
  // round of copies at once and waits for all of them before the next).
  bool rounds = false;
  // Recorded in header.extra.groups with the phase's op ids (and, for kSpan, each round as a
  // span); none for a lone point, which compare takes as a one-way copy.
  std::optional<ConcurrentGroup> group;
};

class TraceBuilder {
 public:
  // Appends to `trace` (its header already made), continuing its op and allocation ids.
  explicit TraceBuilder(Trace& trace);

  // A lone point as bandwidth_test_trace() has always built it: copies_for_size() copies back to
  // back on device 0's stream 0, each of size / bandwidth.
  void add_point(const BandwidthPoint& point);
  // Appends a phase that starts once everything before it has completed: each lane's first copy
  // depends on the last copy of every stream of the phase before (on any device), so no phase
  // overlaps another. Captured starts continue from the previous phase's measured end.
  void add(const Phase& phase);
  // Writes header.extra.groups (when there are groups) and raises header.devices to cover every
  // device used.
  void finish();

 private:
  Trace& trace_;
  std::uint64_t next_op_ = 1;
  std::uint64_t next_alloc_ = 1;
  double t_ = 0;  // captured time: where the next phase's measured copies start
  std::vector<std::uint64_t> tails_;  // the previous phase's last op of each stream
  std::vector<std::pair<std::uint32_t, std::uint32_t>> tail_queues_;  // their (device, stream)
  std::vector<ConcurrentGroup> groups_;
  std::uint32_t devices_ = 1;
};

}  // namespace spyre_dma::traces::detail
