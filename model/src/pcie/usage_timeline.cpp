// UsageTimeline: usage changes in time order, in blocks with their sums and peaks; see
// usage_timeline.hpp.
#include "pcie/usage_timeline.hpp"

#include <algorithm>
#include <iterator>

namespace spyre_dma::model::pcie {

void UsageTimeline::Block::refresh() {
  sum = Usage{};
  for (std::size_t k = 0; k < count; ++k) {
    sum.header += changes[k].change.header;
    sum.data += changes[k].change.data;
  }
  refresh_peak();
}

void UsageTimeline::Block::refresh_peak() const {
  Usage run{};
  peak_ = Usage{changes[0].change.header, changes[0].change.data};
  for (std::size_t k = 0; k < count; ++k) {
    run.header += changes[k].change.header;
    run.data += changes[k].change.data;
    peak_.header = std::max(peak_.header, run.header);
    peak_.data = std::max(peak_.data, run.data);
  }
  peak_stale = false;
}

std::size_t UsageTimeline::block_for(Ps t) const {
  // Changes land near the end (grants just before the releases still pending), so the last few
  // blocks are looked at first; further back, a binary search.
  std::size_t i = blocks_.size();
  for (std::size_t steps = 0; steps < 4; ++steps, --i) {
    if (i == 0 || blocks_[i - 1]->last_time() < t) return i;
  }
  const auto it = std::partition_point(blocks_.begin(), blocks_.begin() + static_cast<std::ptrdiff_t>(i),
                                       [t](const std::unique_ptr<Block>& b) { return b->last_time() < t; });
  return static_cast<std::size_t>(it - blocks_.begin());
}

std::unique_ptr<UsageTimeline::Block> UsageTimeline::new_block() {
  std::unique_ptr<Block> b;
  if (!spare_.empty()) {
    b = std::move(spare_.back());
    spare_.pop_back();
  } else {
    b = std::make_unique<Block>();
  }
  b->count = 0;
  b->sum = b->peak_ = Usage{};
  b->peak_stale = false;
  return b;
}

void UsageTimeline::drop_block(std::size_t i) {
  spare_.push_back(std::move(blocks_[i]));
  blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(i));
}

void UsageTimeline::add(Ps t, std::int64_t header, std::int64_t data) {
  if (header == 0 && data == 0) return;
  const Change c{t, Usage{header, data}};
  total_.header += header;
  total_.data += data;
  // After every change (a release, mostly): no search.
  const std::size_t i = blocks_.empty() || blocks_.back()->last_time() < t ? blocks_.size() : block_for(t);
  if (i == blocks_.size()) {
    if (blocks_.empty() || blocks_.back()->count == kBlock) blocks_.emplace_back(new_block());
    Block& b = *blocks_.back();
    b.changes[b.count++] = c;
    b.sum.header += header;
    b.sum.data += data;
    if (b.count == 1) {
      b.peak_ = b.sum;
    } else if (!b.peak_stale) {
      b.peak_.header = std::max(b.peak_.header, b.sum.header);
      b.peak_.data = std::max(b.peak_.data, b.sum.data);
    }
    peak_bound_.header = std::max(peak_bound_.header, total_.header);
    peak_bound_.data = std::max(peak_bound_.data, total_.data);
    ++size_;
    return;
  }
  // Inside the timeline: every running use from t on moves by the change.
  peak_bound_.header += std::max<std::int64_t>(header, 0);
  peak_bound_.data += std::max<std::int64_t>(data, 0);
  ++loosened_;
  Block* b = blocks_[i].get();
  auto* first = b->changes.data();
  // The first change at or after t (the block's last one is): near the end, as a rule.
  std::size_t j = b->count - 1;
  while (j > 0 && first[j - 1].time >= t) --j;
  if (b->changes[j].time == t) {
    Usage& u = b->changes[j].change;
    u.header += header;
    u.data += data;
    if (u.header == 0 && u.data == 0) {  // nothing changes at t any more
      std::copy(first + j + 1, first + b->count, first + j);
      --b->count;
      --size_;
      if (b->count == 0) {
        drop_block(i);
        return;
      }
    }
    b->sum.header += header;
    b->sum.data += data;
    b->peak_stale = true;
    return;
  }
  if (b->count == kBlock) {  // full: its upper half moves to a new block after it
    std::unique_ptr<Block> owner = new_block();
    Block* upper = owner.get();
    constexpr std::size_t kHalf = kBlock / 2;
    std::copy(first + kHalf, first + kBlock, upper->changes.data());
    upper->count = kBlock - kHalf;
    b->count = kHalf;
    blocks_.emplace(blocks_.begin() + static_cast<std::ptrdiff_t>(i) + 1, std::move(owner));
    b->refresh();
    upper->refresh();
    if (j > kHalf) {
      b = upper;
      j -= kHalf;
    }
    first = b->changes.data();
  }
  for (std::size_t k = b->count; k > j; --k) first[k] = first[k - 1];
  first[j] = c;
  ++b->count;
  ++size_;
  b->sum.header += header;
  b->sum.data += data;
  b->peak_stale = true;
}

Usage UsageTimeline::take_through(Ps t) {
  Usage taken{};
  const std::size_t size_before = size_;
  while (!blocks_.empty()) {
    Block& b = *blocks_.front();
    if (b.last_time() <= t) {
      taken.header += b.sum.header;
      taken.data += b.sum.data;
      size_ -= b.count;
      drop_block(0);
      continue;
    }
    std::size_t k = 0;
    for (; k < b.count && b.changes[k].time <= t; ++k) {
      taken.header += b.changes[k].change.header;
      taken.data += b.changes[k].change.data;
    }
    if (k > 0) {
      std::copy(b.changes.data() + k, b.changes.data() + b.count, b.changes.data());
      b.count -= k;
      size_ -= k;
      b.refresh();
    }
    break;
  }
  total_.header -= taken.header;
  total_.data -= taken.data;
  // The running uses left are counted from after what was taken.
  if (blocks_.empty()) {
    peak_bound_ = Usage{};
    loosened_ = 0;
  } else if (taken.header != 0 || taken.data != 0 || size_ != size_before) {
    peak_bound_.header = std::max<std::int64_t>(peak_bound_.header - taken.header, 0);
    peak_bound_.data = std::max<std::int64_t>(peak_bound_.data - taken.data, 0);
    ++loosened_;
  }
  return taken;
}

Usage UsageTimeline::sum_through(Ps t) const {
  Usage sum{};
  for (const auto& b : blocks_) {
    if (b->last_time() <= t) {
      sum.header += b->sum.header;
      sum.data += b->sum.data;
      continue;
    }
    for (std::size_t k = 0; k < b->count && b->changes[k].time <= t; ++k) {
      sum.header += b->changes[k].change.header;
      sum.data += b->changes[k].change.data;
    }
    break;
  }
  return sum;
}

std::optional<Ps> UsageTimeline::first_time() const {
  if (blocks_.empty()) return std::nullopt;
  return blocks_.front()->changes[0].time;
}

void UsageTimeline::refresh_peak_bound() const {
  Usage run{}, peak{};
  for (const auto& b : blocks_) {
    const Usage& p = b->peak();
    peak.header = std::max(peak.header, run.header + p.header);
    peak.data = std::max(peak.data, run.data + p.data);
    run.header += b->sum.header;
    run.data += b->sum.data;
  }
  peak_bound_ = peak;
  loosened_ = 0;
}

std::ptrdiff_t UsageTimeline::last_over_in(const Block& b, std::int64_t before, std::int64_t limit,
                                           std::int64_t Usage::*part) {
  std::ptrdiff_t last = -1;
  std::int64_t use = before;
  for (std::size_t k = 0; k < b.count; ++k) {
    use += b.changes[k].change.*part;
    if (use > limit) last = static_cast<std::ptrdiff_t>(k);
  }
  return last;
}

// One part's search (header or data), from the last block back: the end of the last step of use
// over the limit, found in the first block (from the back) whose peak reaches over it.
struct UsageTimeline::PartSearch {
  std::int64_t Usage::*field;
  std::int64_t limit;
  std::int64_t after;  // the use after the block being looked at
  bool searching;
  // Looks at block i; once it holds the part's answer (folded into `answer`, or `forever`), the
  // part's search is over.
  void look(const std::vector<std::unique_ptr<Block>>& blocks, std::size_t i, Ps& answer, bool& forever) {
    const Block& b = *blocks[i];
    const std::int64_t use_before = after - b.sum.*field;
    if (use_before + b.peak().*field <= limit) {
      after = use_before;
      return;
    }
    const auto k = static_cast<std::size_t>(last_over_in(b, use_before, limit, field));
    if (k + 1 < b.count) answer = std::max(answer, b.changes[k + 1].time);
    else if (i + 1 < blocks.size()) answer = std::max(answer, blocks[i + 1]->changes[0].time);
    else forever = true;  // over after the last change
    searching = false;
  }
};

std::optional<Ps> UsageTimeline::search(Ps from, const Usage& before, std::int64_t header_limit,
                                        std::int64_t data_limit) const {
  // The bound said no; if it is loose, the exact peak may still say yes. Finding it reads every
  // block, so it is found again only once an eighth as many changes have loosened the bound: a
  // long timeline short of credits (a shared link at saturation) pays for it rarely.
  if (loosened_ > 0 && loosened_ * 8 >= blocks_.size()) {
    refresh_peak_bound();
    if (within(before, peak_bound_, header_limit, data_limit)) return from;
  }
  // The answer is the end of the last step of use over a limit, if that is after `from`. Blocks
  // are searched from the last one back, each whose peak stays under the limit skipped, and the
  // search stops at the first block that ends at or before `from`: every step before it ends by
  // then. Both parts are searched in the same walk (each block is read once), each part until
  // its own answer. `answer` is the latest step end found so far.
  PartSearch header{&Usage::header, header_limit, before.header + total_.header, header_limit != kNoLimit};
  PartSearch data{&Usage::data, data_limit, before.data + total_.data, data_limit != kNoLimit};
  Ps answer = from;
  bool forever = false;
  for (std::size_t i = blocks_.size(); i-- > 0 && (header.searching || data.searching);) {
    if (header.searching) header.look(blocks_, i, answer, forever);
    if (data.searching) data.look(blocks_, i, answer, forever);
    if (blocks_[i]->last_time() <= from) return forever ? std::nullopt : std::optional<Ps>(answer);
  }
  // Only the step before the first change can still be over; it ends at the first change.
  for (const PartSearch* part : {&header, &data}) {
    if (!part->searching || before.*part->field <= part->limit) continue;
    if (blocks_.empty()) forever = true;
    else answer = std::max(answer, blocks_.front()->changes[0].time);
  }
  if (forever) return std::nullopt;
  return answer;
}

}  // namespace spyre_dma::model::pcie
