// The PCIe ordering rule a TLP obeys behind the posted writes queued before it on its way: a
// posted write may not pass another posted write, and a read request may not pass a posted write
// (PCIe Base Specification, "Transaction Ordering Rules", Table 2-40 in revision 5.0: row A
// column 2 and row B column 2, strict ordering; relaxed and ID-based ordering would allow some
// passing, and the model's traffic uses neither). So a TLP that reached a queue at time t leaves
// no earlier than every posted write that reached the same queue at or before t.
//
// Bookings come out of time order (the model books a CB's TLPs ahead of the kernel, an RB after
// the next CB's data), so the writes are kept by the time they reached the queue, not in call
// order, and a query looks at every write that came before it in time.
#pragma once

#include <cstdint>

#include "pcie/ps.hpp"
#include "pcie/ring.hpp"

namespace spyre_dma::model::pcie {

class PostedOrder {
 public:
  // A posted write that reached the queue at `queued` and left it at `left`.
  void add(Ps queued, Ps left);
  // The latest departure of the posted writes that reached the queue at or before `queued` (0:
  // none): a TLP that reached it then leaves no earlier.
  Ps clear_at(Ps queued) const;
  // Nothing reaches the queue before `now` any more: the writes that did are folded into a floor,
  // which every later query is behind.
  void prune(Ps now);
  std::size_t size() const { return writes_.size(); }

 private:
  struct Write {
    Ps queued;
    Ps left;
    Ps latest;  // the latest departure of this write and every write queued before it
  };
  Ring<Write> writes_;  // by `queued`, one entry per time
  Ps floor_ = 0;        // the latest departure of the writes folded away
};

}  // namespace spyre_dma::model::pcie
