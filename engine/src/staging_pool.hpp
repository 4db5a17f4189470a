// The bounded pool of DMA-mapped staging buffers that pageable and unaligned host memory moves
// through. A buffer returns to the pool only when the CB using it has retired; one whose CB timed
// out is quarantined (the device may still write it) until a late RB or a reset proves it idle.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "spyre_dma/device.hpp"

namespace spyre_dma::detail {

class StagingPool {
 public:
  StagingPool(Device& device, std::size_t buffer_bytes, std::size_t count);
  ~StagingPool();
  StagingPool(const StagingPool&) = delete;
  StagingPool& operator=(const StagingPool&) = delete;

  static constexpr int kNone = -1;
  int acquire() noexcept;  // kNone when every buffer is busy or quarantined
  void release(int index) noexcept;
  void quarantine(int index) noexcept;
  void release_quarantined() noexcept;  // after a reset

  std::uint8_t* data(int index) const noexcept { return buffers_[static_cast<std::size_t>(index)].data; }
  std::uint64_t iova(int index) const noexcept { return buffers_[static_cast<std::size_t>(index)].iova; }
  std::size_t buffer_bytes() const noexcept { return buffer_bytes_; }
  std::size_t count() const noexcept { return buffers_.size(); }
  std::size_t free_count() const noexcept { return free_.size(); }
  std::size_t quarantined() const noexcept;

 private:
  struct Buffer {
    std::uint8_t* data = nullptr;
    std::uint64_t iova = 0;
    bool quarantined = false;
  };
  Device& device_;
  std::size_t buffer_bytes_;
  std::vector<Buffer> buffers_;
  std::vector<int> free_;
};

}  // namespace spyre_dma::detail
