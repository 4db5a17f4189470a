#include "staging_pool.hpp"
#include "spyre_dma/shareable_memory.hpp"

#include <cstdlib>
#include <exception>
#include <new>

namespace spyre_dma::detail {

StagingPool::StagingPool(Device& device, std::size_t buffer_bytes, std::size_t count)
    : device_(device), buffer_bytes_(buffer_bytes) {
  buffers_.reserve(count);
  try {
    for (std::size_t i = 0; i < count; ++i) {
      Buffer b;
      b.data = static_cast<std::uint8_t*>(allocate_shareable(buffer_bytes));  // vfio-user shares it
      buffers_.push_back(b);
    }
  } catch (...) {
    for (Buffer& b : buffers_) free_shareable(b.data);
    throw;
  }
  for (std::size_t i = count; i-- > 0;) free_.push_back(static_cast<int>(i));
}

StagingPool::~StagingPool() {
  for (Buffer& b : buffers_) {
    unmap(b);
    free_shareable(b.data);
  }
}

void StagingPool::unmap(Buffer& b) noexcept {
  if (!b.mapped) return;
  b.mapped = false;
  try {
    device_.unmap(b.iova);
  } catch (...) {
    // The device forgot the mapping already (it cannot reach the buffer either way).
  }
}

int StagingPool::acquire() noexcept {
  if (free_.empty()) return kNone;
  const int i = free_.back();
  Buffer& b = buffers_[static_cast<std::size_t>(i)];
  try {
    b.iova = device_.map(b.data, buffer_bytes_, DmaAccess::kBoth);
    b.mapped = true;
  } catch (const std::exception& e) {
    map_error_ = std::string("mapping a staging buffer of ") + std::to_string(buffer_bytes_) + " bytes failed: " + e.what();
    return kMapFailed;
  }
  free_.pop_back();
  return i;
}

void StagingPool::release(int index) noexcept {
  Buffer& b = buffers_[static_cast<std::size_t>(index)];
  unmap(b);
  b.quarantined = false;
  free_.push_back(index);
}

void StagingPool::quarantine(int index) noexcept {
  // Unmapped at once: the device that abandoned the CB may still try, and then faults in its
  // IOMMU instead of writing memory the engine no longer watches.
  Buffer& b = buffers_[static_cast<std::size_t>(index)];
  unmap(b);
  b.quarantined = true;
}

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

std::size_t StagingPool::mapped() const noexcept {
  std::size_t n = 0;
  for (const Buffer& b : buffers_) n += b.mapped ? 1 : 0;
  return n;
}

}  // namespace spyre_dma::detail
