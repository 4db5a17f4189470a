// Response tags 1..32768 (0 is never used). A tag is in use from CB submission until its RB is
// consumed; a tag whose CB timed out is quarantined until a late RB or a reset frees it, so that a
// late answer can never be mistaken for a newer CB's.
//
// Tags are handed out first-in first-out: a tag freed now is reused only after every other free
// tag, so an RB that a misbehaving device repeats (or sends late) names a tag that is not in
// flight again yet, and the engine sees it for the fault it is instead of completing a newer CB.
#pragma once

#include <cstdint>

#include "spyre_dma/hw/contract.hpp"
#include "tag_fifo.hpp"

namespace spyre_dma::detail {

class TagPool {
 public:
  explicit TagPool(std::uint32_t count = hw::kMaxTag) {
    for (std::uint32_t t = hw::kMinTag; t < hw::kMinTag + count; ++t) free_.push_back(t);
  }
  bool empty() const noexcept { return free_.empty(); }
  std::uint32_t acquire() noexcept {  // precondition: !empty()
    const std::uint32_t t = free_.front();
    free_.pop_front();
    return t;
  }
  void release(std::uint32_t tag) { free_.push_back(tag); }
  std::size_t available() const noexcept { return free_.size(); }

 private:
  TagFifo free_;
};

}  // namespace spyre_dma::detail
