// Response tags 1..32768 (0 is never used). A tag is in use from CB submission until its RB is
// consumed; a tag whose CB timed out is quarantined until a late RB or a reset frees it, so that a
// late answer can never be mistaken for a newer CB's.
#pragma once

#include <cstdint>
#include <vector>

#include "spyre_dma/hw/contract.hpp"

namespace spyre_dma::detail {

class TagPool {
 public:
  explicit TagPool(std::uint32_t count = hw::kMaxTag) {
    free_.reserve(count);
    for (std::uint32_t t = count; t >= hw::kMinTag; --t) free_.push_back(t);
  }
  bool empty() const noexcept { return free_.empty(); }
  std::uint32_t acquire() noexcept {  // precondition: !empty()
    const std::uint32_t t = free_.back();
    free_.pop_back();
    return t;
  }
  void release(std::uint32_t tag) { free_.push_back(tag); }
  std::size_t available() const noexcept { return free_.size(); }

 private:
  std::vector<std::uint32_t> free_;
};

}  // namespace spyre_dma::detail
