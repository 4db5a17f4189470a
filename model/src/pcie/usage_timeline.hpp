// UsageTimeline: how the use of two counted resources (a credit pool's header and data credits)
// changes over time, as a sorted list of changes, with the query a credit pool asks per TLP (where
// the running use last exceeds a limit) answered without walking the changes one by one. The link
// model asks it once per TLP while hundreds of grants are in flight.
//
// The changes are kept in time order in blocks of at most kBlock, each block knowing the sum of its
// changes and the highest running sum reached inside it: a search skips every block whose peak
// stays under the limit and reads changes only inside the one block that holds the answer, so a
// query costs a block per kBlock changes plus at most one block's changes, all in contiguous
// memory. Changes arrive almost in time order, so inserts land in the last block. Blocks that
// empty are kept for reuse: no allocation per change in steady state.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "pcie/ps.hpp"

namespace spyre_dma::model::pcie {

struct Usage {
  std::int64_t header = 0;
  std::int64_t data = 0;
};

class UsageTimeline {
 public:
  // Adds (header, data) to the change at time t (creating it; a change that comes to zero goes).
  void add(Ps t, std::int64_t header, std::int64_t data);
  // Removes every change at a time <= t and returns their sum.
  Usage take_through(Ps t);
  // Sum of the changes at times <= t.
  Usage sum_through(Ps t) const;
  // The time of the earliest change (nullopt when there is none).
  std::optional<Ps> first_time() const;

  // The earliest time t >= from from which the running use (`before`, the use before the first
  // change, plus the changes up to t) stays within `header_limit` in its header part and
  // `data_limit` in its data part for ever after (nullopt limit: that part is not limited).
  // nullopt if the use after the last change is over a limit.
  std::optional<Ps> earliest_within(Ps from, Usage before, std::optional<std::int64_t> header_limit,
                                    std::optional<std::int64_t> data_limit) const;

  std::size_t size() const { return size_; }

 private:
  // A D2H run keeps about 400 changes here, and each grant lands before the releases still
  // pending, re-summing its block: 16 measured faster than 32.
  static constexpr std::size_t kBlock = 16;
  struct Change {
    Ps time;
    Usage change;
  };
  struct Block {
    std::array<Change, kBlock> changes;
    std::size_t count = 0;
    Usage sum;   // of the block's changes
    Usage peak;  // highest running sum over the block's changes, from 0 before the first
    void refresh();
  };

  // Index of the first block whose last change is at or after t (blocks_.size() if none).
  std::size_t block_for(Ps t) const;
  std::unique_ptr<Block> new_block();
  void drop_block(std::size_t i);
  // The last change of block b (in time order) whose running use, from `before` (the use before
  // the block), exceeds limit in `part`; -1 if none.
  static std::ptrdiff_t last_over_in(const Block& b, std::int64_t before, std::int64_t limit,
                                     std::int64_t Usage::*part);

  std::vector<std::unique_ptr<Block>> blocks_;  // in time order, none empty
  std::vector<std::unique_ptr<Block>> spare_;
  Usage total_;  // sum of every change
  std::size_t size_ = 0;
};

}  // namespace spyre_dma::model::pcie
