// One device's IOTLB in the IOMMU: the page translations it holds, least recently used out first.
// A miss starts a page walk; a lookup of a page whose walk is still under way waits for it.
// Deterministic: times come from the caller.
#pragma once

#include <algorithm>
#include <cstdint>
#include <list>
#include <unordered_map>

#include "pcie/ps.hpp"

namespace spyre_dma::model {

class Iotlb {
 public:
  // `entries` 0: no IOTLB (every lookup is translated at once, nothing is held).
  Iotlb(std::uint32_t entries, pcie::Ps miss_ps) : entries_(entries), miss_ps_(miss_ps) {}

  // When `page`'s translation is there for a lookup at `at`: at once on a hit, when its walk ends
  // while one is under way, and after a walk of its own on a miss (the page then held, the least
  // recently used one giving way when the IOTLB is full).
  pcie::Ps lookup(std::uint64_t page, pcie::Ps at) {
    if (entries_ == 0) return at;
    if (const auto it = where_.find(page); it != where_.end()) {
      order_.splice(order_.begin(), order_, it->second.position);
      ++hits_;
      return std::max(at, it->second.ready_ps);
    }
    if (where_.size() == entries_) {
      where_.erase(order_.back());
      order_.pop_back();
    }
    order_.push_front(page);
    where_[page] = Entry{order_.begin(), at + miss_ps_};
    ++misses_;
    return at + miss_ps_;
  }

  std::uint64_t hits() const noexcept { return hits_; }
  std::uint64_t misses() const noexcept { return misses_; }

 private:
  struct Entry {
    std::list<std::uint64_t>::iterator position;
    pcie::Ps ready_ps;  // when its walk ended (or ends)
  };
  std::uint32_t entries_;
  pcie::Ps miss_ps_;
  std::list<std::uint64_t> order_;  // most recently used first
  std::unordered_map<std::uint64_t, Entry> where_;
  std::uint64_t hits_ = 0, misses_ = 0;
};

}  // namespace spyre_dma::model
