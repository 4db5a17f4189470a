// PooledBuffer: a process-wide free list of large buffers by capacity; see buffer_pool.hpp.
#include "buffer_pool.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <utility>

#include <fmt/format.h>

#include "spyre_dma/shareable_memory.hpp"
#include "spyre_dma/status.hpp"

namespace spyre_dma::regress {
namespace {

constexpr std::uint64_t kHugePage = 2ull << 20;

struct Pool {
  std::mutex mu;
  std::multimap<std::uint64_t, std::uint8_t*> free[2];  // by kind, then by capacity
  std::uint64_t bytes = 0;                              // both kinds
};

// The smallest power of two at least `bytes` (which is at least 1).
std::uint64_t size_class(std::uint64_t bytes) {
  std::uint64_t c = 4096;
  while (c < bytes) c <<= 1;
  return c;
}

std::size_t kind(PooledBuffer::Memory m) { return m == PooledBuffer::Memory::kHeap ? 0 : 1; }

void release(std::uint8_t* data, PooledBuffer::Memory m) {
  if (m == PooledBuffer::Memory::kHeap) {
    std::free(data);
  } else {
    free_shareable(data);
  }
}

Pool& pool() {
  static Pool* p = new Pool;  // never destroyed: buffers may be given back during exit
  return *p;
}

}  // namespace

PooledBuffer::PooledBuffer(std::uint64_t bytes, Memory memory) : memory_(memory) {
  const std::uint64_t want = (std::max<std::uint64_t>(bytes, 1) + 4095) / 4096 * 4096;
  {
    Pool& p = pool();
    std::lock_guard<std::mutex> g(p.mu);
    // The smallest that fits, up to 16 times the ask (a huge one stays for a huge ask). A larger
    // buffer costs nothing for the bytes the taker leaves alone, and its pages are already there:
    // with only buffers of the next classes up taken (at most 2x), a smoke run on refdev was 6%
    // slower, in the kernel's clearing of fresh memory.
    auto& free = p.free[kind(memory)];
    const auto it = free.lower_bound(want);
    if (it != free.end() && it->first <= 16 * want) {
      capacity_ = it->first;
      data_ = it->second;
      p.bytes -= capacity_;
      free.erase(it);
      return;
    }
  }
  // Buffers are made in size classes, powers of two from 4 KiB, so that a buffer given back fits
  // the next ask of its class. Made to the size asked, they fitted few later asks: a test's buffers
  // are a few bytes over 2 MiB, each a little different, or twice its largest op, and every miss is
  // fresh memory, faulted in and cleared by the kernel (with 2 MiB classes, 9% of a smoke run was
  // that clearing, under the shadows' first writes). Only the bytes written are ever touched, so
  // the rest of a class costs address space, not memory. A large heap buffer is also aligned to
  // huge pages and offered to the kernel's transparent huge pages (one fault per 2 MiB).
  capacity_ = size_class(want);
  const std::uint64_t align = capacity_ >= kHugePage ? kHugePage : 4096;
  if (memory == Memory::kShareable) {
    try {
      data_ = static_cast<std::uint8_t*>(allocate_shareable(capacity_));
    } catch (const std::bad_alloc&) {
      throw OutOfMemory(fmt::format("regression buffer of {} shareable bytes", bytes));
    }
    return;
  }
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
      p.free[kind(memory_)].emplace(capacity_, data_);
      p.bytes += capacity_;
      return;
    }
  }
  release(data_, memory_);
}

PooledBuffer::PooledBuffer(PooledBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), capacity_(std::exchange(other.capacity_, 0)), memory_(other.memory_) {}

PooledBuffer& PooledBuffer::operator=(PooledBuffer&& other) noexcept {
  if (this != &other) {
    PooledBuffer old(std::move(*this));
    data_ = std::exchange(other.data_, nullptr);
    capacity_ = std::exchange(other.capacity_, 0);
    memory_ = other.memory_;
  }
  return *this;
}

void PooledBuffer::release_pooled() {
  Pool& p = pool();
  std::lock_guard<std::mutex> g(p.mu);
  for (std::size_t k = 0; k < 2; ++k) {
    for (const auto& [capacity, data] : p.free[k]) release(data, k == 0 ? Memory::kHeap : Memory::kShareable);
    p.free[k].clear();
  }
  p.bytes = 0;
}

std::uint64_t PooledBuffer::pooled_bytes() {
  Pool& p = pool();
  std::lock_guard<std::mutex> g(p.mu);
  return p.bytes;
}

}  // namespace spyre_dma::regress
