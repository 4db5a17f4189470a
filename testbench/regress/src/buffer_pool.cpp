// PooledBuffer: a process-wide free list of large buffers by capacity; see buffer_pool.hpp.
#include "buffer_pool.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <utility>

#include <fmt/format.h>

#include "spyre_dma/status.hpp"

namespace spyre_dma::regress {
namespace {

constexpr std::uint64_t kHugePage = 2ull << 20;

struct Pool {
  std::mutex mu;
  std::multimap<std::uint64_t, std::uint8_t*> free;  // by capacity
  std::uint64_t bytes = 0;
};

Pool& pool() {
  static Pool* p = new Pool;  // never destroyed: buffers may be given back during exit
  return *p;
}

}  // namespace

PooledBuffer::PooledBuffer(std::uint64_t bytes) {
  const std::uint64_t want = (std::max<std::uint64_t>(bytes, 1) + 4095) / 4096 * 4096;
  {
    Pool& p = pool();
    std::lock_guard<std::mutex> g(p.mu);
    // The smallest that fits, if it is not much larger than asked (a huge one stays for a huge ask).
    const auto it = p.free.lower_bound(want);
    if (it != p.free.end() && it->first <= 2 * want) {
      capacity_ = it->first;
      data_ = it->second;
      p.bytes -= capacity_;
      p.free.erase(it);
      return;
    }
  }
  // Large buffers are aligned to huge pages and offered to the kernel's transparent huge pages:
  // one fault per 2 MiB on first touch.
  const std::uint64_t align = want >= kHugePage ? kHugePage : 4096;
  capacity_ = (want + align - 1) / align * align;
  data_ = static_cast<std::uint8_t*>(std::aligned_alloc(align, capacity_));
  if (data_ == nullptr) throw OutOfMemory(fmt::format("regression buffer of {} bytes", bytes));
  if (align == kHugePage) (void)::madvise(data_, capacity_, MADV_HUGEPAGE);  // a hint only
}

PooledBuffer::~PooledBuffer() {
  if (data_ == nullptr) return;
  Pool& p = pool();
  {
    std::lock_guard<std::mutex> g(p.mu);
    if (p.bytes + capacity_ <= kMaxPooledBytes) {
      p.free.emplace(capacity_, data_);
      p.bytes += capacity_;
      return;
    }
  }
  std::free(data_);
}

PooledBuffer::PooledBuffer(PooledBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), capacity_(std::exchange(other.capacity_, 0)) {}

PooledBuffer& PooledBuffer::operator=(PooledBuffer&& other) noexcept {
  if (this != &other) {
    PooledBuffer old(std::move(*this));
    data_ = std::exchange(other.data_, nullptr);
    capacity_ = std::exchange(other.capacity_, 0);
  }
  return *this;
}

void PooledBuffer::release_pooled() {
  Pool& p = pool();
  std::lock_guard<std::mutex> g(p.mu);
  for (const auto& [capacity, data] : p.free) std::free(data);
  p.free.clear();
  p.bytes = 0;
}

std::uint64_t PooledBuffer::pooled_bytes() {
  Pool& p = pool();
  std::lock_guard<std::mutex> g(p.mu);
  return p.bytes;
}

}  // namespace spyre_dma::regress
