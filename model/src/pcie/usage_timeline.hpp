// UsageTimeline: how the use of two counted resources (a credit pool's header and data credits)
// changes over time, as a sorted list of changes, with the query a credit pool asks per TLP (where
// the running use last exceeds a limit) answered without walking the changes one by one. The link
// model asks it once per TLP while hundreds of grants are in flight.
//
// The changes are kept in time order in blocks of at most kBlock, each block knowing the sum of its
// changes and the highest running sum reached inside it: a search skips every block whose peak
// stays under the limit and reads changes only inside the one block that holds the answer, so a
// query costs a block per kBlock changes plus at most one block's changes, all in contiguous
// memory. Changes arrive almost in time order, so inserts land in the last blocks, found from the
// back. Blocks that empty are kept for reuse: no allocation per change in steady state.
//
// Most queries need no search at all: while credits are to spare, the highest use anywhere on the
// timeline is under the limit, and an upper bound of it, kept per change at no cost, says so. A
// block's peak is found again only when a search reads it. With credits to spare a grant and its
// release cost the same however many grants are in flight.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
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
  // `data_limit` in its data part for ever after (kNoLimit: that part is not limited).
  // nullopt if the use after the last change is over a limit.
  static constexpr std::int64_t kNoLimit = std::numeric_limits<std::int64_t>::max();
  std::optional<Ps> earliest_within(Ps from, const Usage& before, std::int64_t header_limit,
                                    std::int64_t data_limit) const {
    // Use within both limits everywhere (the common case, credits to spare): `from` itself, known
    // from the peak bound without a search.
    if (within(before, peak_bound_, header_limit, data_limit)) return from;
    return search(from, before, header_limit, data_limit);
  }

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
    Usage sum;  // of the block's changes, always up to date
    // Highest running sum over the block's changes, from 0 before the first. Found again only
    // when a search reads it: a change inside the block marks it stale, and most changes are
    // never searched past (the peak bound answers first).
    const Usage& peak() const {
      if (peak_stale) refresh_peak();
      return peak_;
    }
    void refresh();  // sum and peak from the changes
    void refresh_peak() const;
    Ps last_time() const { return changes[count - 1].time; }
    mutable Usage peak_;
    mutable bool peak_stale = false;
  };

  // Index of the first block whose last change is at or after t (blocks_.size() if none).
  std::size_t block_for(Ps t) const;
  std::unique_ptr<Block> new_block();
  void drop_block(std::size_t i);
  // The last change of block b (in time order) whose running use, from `before` (the use before
  // the block), exceeds limit in `part`; -1 if none.
  static std::ptrdiff_t last_over_in(const Block& b, std::int64_t before, std::int64_t limit,
                                     std::int64_t Usage::*part);
  struct PartSearch;

  // The highest running use over the whole timeline (from 0 before the first change), exact
  // after refresh_peak_bound() (loosened_ == 0); between refreshes an upper bound (a change
  // inside the timeline raises it by what it adds). It answers the common query, credits to spare everywhere, with
  // no search. Kept by the const query too: a cache, not state.
  void refresh_peak_bound() const;
  // Plain integers, read field by field: a Usage or an optional limit copied whole right after
  // its fields were written stalls on store forwarding, and this runs per TLP. kNoLimit holds
  // every use (uses are sums of 32-bit credit amounts: far from overflow).
  static bool within(const Usage& before, const Usage& peak, std::int64_t header_limit, std::int64_t data_limit) {
    return before.header + peak.header <= header_limit && before.data + peak.data <= data_limit;
  }
  // earliest_within() where the peak bound does not answer.
  std::optional<Ps> search(Ps from, const Usage& before, std::int64_t header_limit, std::int64_t data_limit) const;

  std::vector<std::unique_ptr<Block>> blocks_;  // in time order, none empty
  std::vector<std::unique_ptr<Block>> spare_;
  Usage total_;  // sum of every change
  mutable Usage peak_bound_;
  mutable std::size_t loosened_ = 0;  // changes that loosened the bound since it was exact (0: exact)
  std::size_t size_ = 0;
};

}  // namespace spyre_dma::model::pcie
