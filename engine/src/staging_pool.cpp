#include "staging_pool.hpp"
#include "spyre_dma/shareable_memory.hpp"

#include <cstdlib>
#include <deque>
#include <exception>
#include <iterator>
#include <mutex>
#include <new>
#include <vector>

namespace spyre_dma::detail {
namespace {

// Staging buffers of engines already closed, kept for the next engine of the process that asks
// for buffers of the same size. A process that opens engine after engine (a test bench, a runtime
// reopening its device) would otherwise have the kernel fault in and clear every page of every
// staging buffer again: a regression's pageable copies spent about a tenth of their time there.
// Only idle buffers are kept, unmapped from their device; their bytes are whatever the last
// engine staged, which a staging buffer always overwrites before the device reads it. The most
// recently closed engines' buffers are the ones kept: beyond kKeptBytes the oldest are freed.
class KeptBuffers {
 public:
  static KeptBuffers& instance() {
    static KeptBuffers* const kept = new KeptBuffers;  // never destroyed: engines may close during exit
    return *kept;
  }
  std::uint8_t* take(std::size_t bytes) noexcept {
    std::lock_guard<std::mutex> g(mu_);
    for (auto it = kept_.rbegin(); it != kept_.rend(); ++it) {  // the newest first
      if (it->bytes != bytes) continue;
      std::uint8_t* p = it->data;
      kept_.erase(std::next(it).base());
      kept_bytes_ -= bytes;
      return p;
    }
    return nullptr;
  }
  void give(std::uint8_t* p, std::size_t bytes) noexcept {
    std::vector<Kept> freed;
    {
      std::lock_guard<std::mutex> g(mu_);
      try {
        if (bytes <= kKeptBytes) {
          kept_.push_back(Kept{p, bytes});
          kept_bytes_ += bytes;
          p = nullptr;
        }
        while (kept_bytes_ > kKeptBytes) {
          freed.push_back(kept_.front());
          kept_bytes_ -= kept_.front().bytes;
          kept_.pop_front();
        }
      } catch (const std::bad_alloc&) {  // no room to remember it: freed below
      }
    }
    for (const Kept& k : freed) free_shareable(k.data);
    free_shareable(p);  // null if kept
  }

 private:
  // Two engines' worth of the default staging (8 buffers of 4 MiB each).
  static constexpr std::size_t kKeptBytes = 64ull << 20;
  struct Kept {
    std::uint8_t* data;
    std::size_t bytes;
  };
  std::mutex mu_;
  std::deque<Kept> kept_;  // the oldest first
  std::size_t kept_bytes_ = 0;
};

}  // namespace

StagingPool::StagingPool(Device& device, std::size_t buffer_bytes, std::size_t count)
    : device_(device), buffer_bytes_(buffer_bytes) {
  buffers_.reserve(count);
  try {
    for (std::size_t i = 0; i < count; ++i) {
      Buffer b;
      b.data = KeptBuffers::instance().take(buffer_bytes);
      // Shareable: a device in another process (vfio-user) maps it.
      if (b.data == nullptr) b.data = static_cast<std::uint8_t*>(allocate_shareable(buffer_bytes));
      buffers_.push_back(b);
    }
  } catch (...) {
    for (Buffer& b : buffers_) KeptBuffers::instance().give(b.data, buffer_bytes);
    throw;
  }
  for (std::size_t i = count; i-- > 0;) free_.push_back(static_cast<int>(i));
}

StagingPool::~StagingPool() {
  for (Buffer& b : buffers_) {
    // One the device may still write (its CB timed out and no reset proved it idle) is freed:
    // the next engine must not find late bytes in it.
    const bool idle = !b.quarantined;
    unmap(b);
    if (idle) {
      KeptBuffers::instance().give(b.data, buffer_bytes_);
    } else {
      free_shareable(b.data);
    }
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
    map_error_code_ = dynamic_cast<const DeviceFault*>(&e) ? ErrorCode::kDeviceFault : ErrorCode::kOutOfMemory;
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
