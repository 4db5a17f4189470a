#include "staging_pool.hpp"

#include <cstdlib>
#include <new>

namespace spyre_dma::detail {

StagingPool::StagingPool(Device& device, std::size_t buffer_bytes, std::size_t count)
    : device_(device), buffer_bytes_(buffer_bytes) {
  buffers_.reserve(count);
  try {
    for (std::size_t i = 0; i < count; ++i) {
      Buffer b;
      b.data = static_cast<std::uint8_t*>(std::aligned_alloc(4096, (buffer_bytes + 4095) / 4096 * 4096));
      if (!b.data) throw std::bad_alloc();
      b.iova = device_.map(b.data, buffer_bytes, DmaAccess::kBoth);
      buffers_.push_back(b);
    }
  } catch (...) {
    for (Buffer& b : buffers_) {
      device_.unmap(b.iova);
      std::free(b.data);
    }
    throw;
  }
  for (std::size_t i = count; i-- > 0;) free_.push_back(static_cast<int>(i));
}

StagingPool::~StagingPool() {
  for (Buffer& b : buffers_) {
    try {
      device_.unmap(b.iova);
    } catch (...) {
    }
    std::free(b.data);
  }
}

int StagingPool::acquire() noexcept {
  if (free_.empty()) return kNone;
  const int i = free_.back();
  free_.pop_back();
  return i;
}

void StagingPool::release(int index) noexcept {
  Buffer& b = buffers_[static_cast<std::size_t>(index)];
  if (b.quarantined) b.quarantined = false;
  free_.push_back(index);
}

void StagingPool::quarantine(int index) noexcept { buffers_[static_cast<std::size_t>(index)].quarantined = true; }

void StagingPool::release_quarantined() noexcept {
  for (std::size_t i = 0; i < buffers_.size(); ++i) {
    if (buffers_[i].quarantined) {
      buffers_[i].quarantined = false;
      free_.push_back(static_cast<int>(i));
    }
  }
}

std::size_t StagingPool::quarantined() const noexcept {
  std::size_t n = 0;
  for (const Buffer& b : buffers_) n += b.quarantined ? 1 : 0;
  return n;
}

}  // namespace spyre_dma::detail
