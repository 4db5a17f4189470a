// UsageTimeline: usage changes in time order, in blocks with their sums and peaks; see
// usage_timeline.hpp.
#include "pcie/usage_timeline.hpp"

#include <algorithm>
#include <iterator>

namespace spyre_dma::model::pcie {

void UsageTimeline::Block::refresh() {
  sum = Usage{};
  peak = Usage{changes[0].change.header, changes[0].change.data};
  for (std::size_t k = 0; k < count; ++k) {
    sum.header += changes[k].change.header;
    sum.data += changes[k].change.data;
    peak.header = std::max(peak.header, sum.header);
    peak.data = std::max(peak.data, sum.data);
  }
}

std::size_t UsageTimeline::block_for(Ps t) const {
  const auto it = std::partition_point(blocks_.begin(), blocks_.end(), [t](const std::unique_ptr<Block>& b) {
    return b->changes[b->count - 1].time < t;
  });
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
  b->sum = b->peak = Usage{};
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
  const std::size_t i = block_for(t);
  if (i == blocks_.size()) {  // after every change: the common case
    if (blocks_.empty() || blocks_.back()->count == kBlock) blocks_.emplace_back(new_block());
    Block& b = *blocks_.back();
    b.changes[b.count++] = c;
    b.sum.header += header;
    b.sum.data += data;
    if (b.count == 1) {
      b.peak = b.sum;
    } else {
      b.peak.header = std::max(b.peak.header, b.sum.header);
      b.peak.data = std::max(b.peak.data, b.sum.data);
    }
    ++size_;
    return;
  }
  Block* b = blocks_[i].get();
  auto* first = b->changes.data();
  std::size_t j = static_cast<std::size_t>(
      std::lower_bound(first, first + b->count, t, [](const Change& x, Ps v) { return x.time < v; }) - first);
  if (b->changes[j].time == t) {  // j < count: the block's last change is at or after t
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
    b->refresh();
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
    if (j > kHalf) {
      b->refresh();
      b = upper;
      j -= kHalf;
    } else {
      upper->refresh();
    }
    first = b->changes.data();
  }
  std::copy_backward(first + j, first + b->count, first + b->count + 1);
  b->changes[j] = c;
  ++b->count;
  ++size_;
  b->refresh();
}

Usage UsageTimeline::take_through(Ps t) {
  Usage taken{};
  while (!blocks_.empty()) {
    Block& b = *blocks_.front();
    if (b.changes[b.count - 1].time <= t) {
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
  return taken;
}

Usage UsageTimeline::sum_through(Ps t) const {
  Usage sum{};
  for (const auto& b : blocks_) {
    if (b->changes[b->count - 1].time <= t) {
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

std::optional<Ps> UsageTimeline::earliest_within(Ps from, Usage before,
                                                 std::optional<std::int64_t> header_limit,
                                                 std::optional<std::int64_t> data_limit) const {
  // The answer is the end of the last step of use over a limit, if that is after `from`. Blocks
  // are searched from the last one back, each whose peak stays under the limit skipped, and the
  // search stops at the first block that ends at or before `from`: every step before it ends by
  // then. Both parts are searched in the same walk (each block is read once), each part until
  // its own answer. `answer` is the latest step end found so far.
  struct Part {
    std::int64_t Usage::*field;
    std::optional<std::int64_t> limit;
    std::int64_t after;  // the use after the block being looked at
  };
  Part parts[2] = {{&Usage::header, header_limit, before.header + total_.header},
                   {&Usage::data, data_limit, before.data + total_.data}};
  Ps answer = from;
  bool forever = false;
  bool searching[2] = {header_limit.has_value(), data_limit.has_value()};
  for (std::size_t i = blocks_.size(); i-- > 0 && (searching[0] || searching[1]);) {
    const Block& b = *blocks_[i];
    for (int p = 0; p < 2; ++p) {
      if (!searching[p]) continue;
      Part& part = parts[p];
      const std::int64_t use_before = part.after - b.sum.*part.field;
      if (use_before + b.peak.*part.field > *part.limit) {
        const auto k = static_cast<std::size_t>(last_over_in(b, use_before, *part.limit, part.field));
        if (k + 1 < b.count) {
          answer = std::max(answer, b.changes[k + 1].time);
        } else if (i + 1 < blocks_.size()) {
          answer = std::max(answer, blocks_[i + 1]->changes[0].time);
        } else {
          forever = true;  // over after the last change
        }
        searching[p] = false;
        continue;
      }
      part.after = use_before;
    }
    if (b.changes[b.count - 1].time <= from) return forever ? std::nullopt : std::optional<Ps>(answer);
  }
  // Only the step before the first change can still be over; it ends at the first change.
  for (int p = 0; p < 2; ++p) {
    if (!searching[p] || before.*parts[p].field <= *parts[p].limit) continue;
    if (blocks_.empty()) forever = true;
    else answer = std::max(answer, blocks_.front()->changes[0].time);
  }
  if (forever) return std::nullopt;
  return answer;
}

}  // namespace spyre_dma::model::pcie
