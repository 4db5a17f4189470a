#include "pcie/posted_order.hpp"

#include <algorithm>

namespace spyre_dma::model::pcie {

void PostedOrder::add(Ps queued, Ps left) {
  // Almost always at the back: a queue's writes are booked nearly in time order.
  std::size_t i = writes_.size();
  while (i > 0 && writes_[i - 1].queued > queued) --i;
  if (i > 0 && writes_[i - 1].queued == queued) {
    --i;
    writes_[i].left = std::max(writes_[i].left, left);
  } else {
    writes_.insert(writes_.begin() + static_cast<std::ptrdiff_t>(i), Write{queued, left, 0});
  }
  // The running maximum, from the entry that changed on, as far as it changes anything.
  writes_[i].latest = std::max(i > 0 ? writes_[i - 1].latest : 0, writes_[i].left);
  for (std::size_t k = i + 1; k < writes_.size(); ++k) {
    const Ps latest = std::max(writes_[k - 1].latest, writes_[k].left);
    if (latest == writes_[k].latest) break;
    writes_[k].latest = latest;
  }
}

Ps PostedOrder::clear_at(Ps queued) const {
  // The last write queued at or before `queued`, from the back: queries come near the present.
  std::size_t i = writes_.size();
  while (i > 0 && writes_[i - 1].queued > queued) --i;
  return std::max(floor_, i > 0 ? writes_[i - 1].latest : 0);
}

void PostedOrder::prune(Ps now) {
  while (!writes_.empty() && writes_.front().queued < now) {
    floor_ = std::max(floor_, writes_.front().left);
    writes_.pop_front();
  }
}

}  // namespace spyre_dma::model::pcie
