// Ordering by footprint (docs/engine.md, "Ordering by footprint"): the bytes every live op reads
// and writes, and which later ops must wait for which earlier ones because their bytes overlap
// and one of them writes (read-after-write, write-after-read, write-after-write).
#pragma once

#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

#include "engine_state.hpp"

namespace spyre_dma::detail {

// One range an op touches. `space` tells the memories apart: 0 for host memory (the process's
// addresses), else the device allocation's id (allocations never share bytes).
struct Touch {
  std::uint64_t space = 0;
  std::uint64_t lo = 0, hi = 0;  // [lo, hi)
  bool write = false;
};

// What an op touches: at most a source and a destination. Empty for ops without bytes (compute,
// host work, events) and for empty copies.
struct Footprint {
  Touch touch[2];
  unsigned n = 0;
  static Footprint of(const OpState& op);
};

class HazardTracker {
 public:
  // Records `op` (under the engine lock, in submission order) and counts in op.footprint_waits
  // the live ops it must follow: each earlier op of another stream, or of its own stream where
  // that stream does not order the two (pipeline FIFO, different pipelines), that touches a byte
  // it touches, one of the two writing. Returns how many.
  unsigned add(OpState& op, const Footprint& fp);
  // `op` finished: it leaves the tracker (and the followers of the ops it still waited for), and
  // each op that followed it has one wait less. `followers` gets them all (those whose last wait
  // it was have footprint_waits 0).
  void remove(OpState& op, std::vector<OpState*>& followers);
  // The live op that `op` still waits for first (stall reports), or null.
  const OpState* first_awaited(const OpState& op) const;
  std::size_t live() const noexcept { return entries_.size(); }

 private:
  // The live touches of one memory, by their first byte: the ones that may overlap [lo, hi) start
  // in [lo - longest + 1, hi), so a lookup costs a search and the touches near the range, not a
  // scan of everything live.
  struct Live {
    std::uint64_t hi;
    bool write;
    OpState* op;
  };
  using Index = std::multimap<std::uint64_t, Live>;
  struct Space {
    Index by_lo;
    std::uint64_t longest = 0;  // the longest touch since the space was last empty
  };
  struct Entry {
    std::vector<OpState*> followers;
    // The live ops it waits for: an op that finishes before them (failed behind its own stream,
    // cancelled) leaves their followers, so that they never touch it after it is gone.
    std::vector<OpState*> follows;
    Index::iterator at[2];
    std::uint64_t space[2] = {0, 0};
    unsigned n = 0;
  };
  std::unordered_map<std::uint64_t, Space> spaces_;
  std::unordered_map<const OpState*, Entry> entries_;  // the live ops with a footprint
};

}  // namespace spyre_dma::detail
