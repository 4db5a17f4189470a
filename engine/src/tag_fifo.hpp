// A first-in first-out list of response tags with room for every tag there is (1..kMaxTag), so
// that no push allocates and none can overflow: a tag is in at most one such list at a time. The
// engine keeps one per pipeline in ring order and one of the free tags; each is touched once or
// twice per CB, where std::deque's block bookkeeping cost more than the rest of the list.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>

#include "spyre_dma/hw/contract.hpp"

namespace spyre_dma::detail {

class TagFifo {
 public:
  static constexpr std::uint32_t kCapacity = hw::kMaxTag;
  static_assert((kCapacity & (kCapacity - 1)) == 0, "the index wraps with a mask");

  // The slots are not cleared: only those between the two indices are ever read.
  TagFifo() : slots_(new std::uint32_t[kCapacity]) {}

  bool empty() const noexcept { return head_ == tail_; }
  std::size_t size() const noexcept { return static_cast<std::size_t>(tail_ - head_); }
  std::uint32_t front() const noexcept { return slots_[head_ & kMask]; }  // precondition: !empty()
  void push_back(std::uint32_t tag) noexcept { slots_[tail_++ & kMask] = tag; }  // size() < kCapacity
  void pop_front() noexcept { ++head_; }                                          // precondition: !empty()
  void clear() noexcept { head_ = tail_ = 0; }
  // Removes `tag` where it is, keeping the order of the rest (rare: a CB answered out of turn).
  void erase(std::uint32_t tag) noexcept {
    std::uint64_t i = head_;
    while (i != tail_ && slots_[i & kMask] != tag) ++i;
    if (i == tail_) return;
    for (; i + 1 != tail_; ++i) slots_[i & kMask] = slots_[(i + 1) & kMask];
    --tail_;
  }

 private:
  static constexpr std::uint32_t kMask = kCapacity - 1;
  std::unique_ptr<std::uint32_t[]> slots_;
  std::uint64_t head_ = 0, tail_ = 0;  // free-running; the slot is the index masked
};

}  // namespace spyre_dma::detail
