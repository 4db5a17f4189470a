// Sparse, lazily allocated device memory (see spyre_dma/device_core/sparse_memory.hpp).
#include "spyre_dma/device_core/sparse_memory.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <mutex>
#include <new>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace spyre_dma::device_core {
namespace {

constexpr std::uint64_t kPage = SparseMemory::kPageBytes;

std::uint8_t* map_page() {
  // Twice the size, then the unaligned head and tail given back: a page aligned to its size.
  void* p = ::mmap(nullptr, 2 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  auto* raw = static_cast<std::uint8_t*>(p);
  const std::uint64_t head = (kPage - reinterpret_cast<std::uintptr_t>(raw) % kPage) % kPage;
  if (head != 0) ::munmap(raw, head);
  ::munmap(raw + head + kPage, kPage - head);
  std::uint8_t* page = raw + head;
  (void)::madvise(page, kPage, MADV_HUGEPAGE);  // a hint: without it (or THP) the page still works
  return page;
}

// Pages of memories already destroyed, kept for the next memory of the process: a test bench that
// builds a device per test would otherwise have the kernel fault in and clear every page of every
// test afresh. A kept page holds old bytes; page_for_write() clears what its first write leaves.
class PagePool {
 public:
  static PagePool& instance() {
    static PagePool* const pool = new PagePool;  // never destroyed: memories may die during exit
    return *pool;
  }
  std::uint8_t* take() {
    std::lock_guard<std::mutex> g(mu_);
    if (pages_.empty()) return nullptr;
    std::uint8_t* p = pages_.back();
    pages_.pop_back();
    return p;
  }
  void give(std::uint8_t* p) noexcept {
    {
      std::lock_guard<std::mutex> g(mu_);
      if (pages_.size() < SparseMemory::kPooledPages) {
        try {
          pages_.push_back(p);
          return;
        } catch (const std::bad_alloc&) {  // no room to remember it: give it back to the kernel
        }
      }
    }
    ::munmap(p, kPage);
  }
  void release() noexcept {
    std::vector<std::uint8_t*> all;
    {
      std::lock_guard<std::mutex> g(mu_);
      all.swap(pages_);
    }
    for (std::uint8_t* p : all) ::munmap(p, kPage);
  }
  std::uint64_t size() {
    std::lock_guard<std::mutex> g(mu_);
    return pages_.size();
  }

 private:
  std::mutex mu_;
  std::vector<std::uint8_t*> pages_;
};

bool is_little_endian() noexcept {
  const std::uint16_t probe = 1;
  std::uint8_t first = 0;
  std::memcpy(&first, &probe, 1);
  return first == 1;
}

// Bytes from `addr` to the end of its page.
std::uint64_t to_page_end(std::uint64_t addr) noexcept { return kPage - addr % kPage; }

}  // namespace

SparseMemory::SparseMemory(std::uint64_t size_bytes)
    : size_(size_bytes), num_pages_((size_bytes + kPage - 1) / kPage) {
  if (size_bytes == 0) throw std::invalid_argument("SparseMemory: size must be nonzero");
  pages_ = std::make_unique<std::atomic<std::uint8_t*>[]>(num_pages_);
  for (std::uint64_t i = 0; i < num_pages_; ++i) pages_[i].store(nullptr, std::memory_order_relaxed);
}

SparseMemory::~SparseMemory() {
  for (std::uint64_t i = 0; i < num_pages_; ++i) {
    if (std::uint8_t* p = pages_[i].load(std::memory_order_relaxed)) PagePool::instance().give(p);
  }
}

void SparseMemory::release_pooled_pages() noexcept { PagePool::instance().release(); }

std::uint64_t SparseMemory::pooled_pages() { return PagePool::instance().size(); }

void SparseMemory::check(std::uint64_t addr, std::uint64_t n, const char* what) const {
  if (contains(addr, n)) return;
  std::ostringstream msg;
  msg << "SparseMemory::" << what << ": range [0x" << std::hex << addr << ", +0x" << n
      << ") lies outside the device memory of 0x" << size_ << " bytes";
  throw std::out_of_range(msg.str());
}

std::uint8_t* SparseMemory::page_for_write(std::uint64_t index, std::uint64_t lo, std::uint64_t hi) {
  std::uint8_t* p = pages_[index].load(std::memory_order_acquire);
  if (p != nullptr) return p;
  std::uint8_t* fresh = PagePool::instance().take();
  if (fresh != nullptr) {
    // A kept page: what the caller is about to write needs no clearing, the rest reads as zeros
    // before the page is published, so a concurrent writer elsewhere in it finds zeros around it.
    std::memset(fresh, 0, lo);
    std::memset(fresh + hi, 0, kPage - hi);
  } else {
    fresh = map_page();
  }
  if (pages_[index].compare_exchange_strong(p, fresh, std::memory_order_acq_rel,
                                            std::memory_order_acquire)) {
    pages_resident_.fetch_add(1, std::memory_order_relaxed);
    return fresh;
  }
  PagePool::instance().give(fresh);  // another thread allocated it first; `p` now holds its page
  return p;
}

void SparseMemory::read(std::uint64_t addr, void* dst, std::size_t n) const {
  check(addr, n, "read");
  auto* out = static_cast<std::uint8_t*>(dst);
  while (n > 0) {
    const std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(n, to_page_end(addr)));
    if (const std::uint8_t* p = page(addr / kPage)) {
      std::memcpy(out, p + addr % kPage, chunk);
    } else {
      std::memset(out, 0, chunk);
    }
    addr += chunk;
    out += chunk;
    n -= chunk;
  }
}

const std::uint8_t* SparseMemory::view(std::uint64_t addr, std::size_t n, std::size_t& got) const noexcept {
  got = 0;
  if (n == 0 || !contains(addr, n)) return nullptr;
  const std::uint8_t* p = page(addr / kPage);
  if (p == nullptr) return nullptr;
  got = static_cast<std::size_t>(std::min<std::uint64_t>(n, to_page_end(addr)));
  return p + addr % kPage;
}

void SparseMemory::write(std::uint64_t addr, const void* src, std::size_t n) {
  check(addr, n, "write");
  const auto* in = static_cast<const std::uint8_t*>(src);
  while (n > 0) {
    const std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(n, to_page_end(addr)));
    std::memcpy(page_for_write(addr / kPage, addr % kPage, addr % kPage + chunk) + addr % kPage, in, chunk);
    addr += chunk;
    in += chunk;
    n -= chunk;
  }
}

void SparseMemory::fill32(std::uint64_t addr, std::uint32_t pattern, std::size_t n) {
  check(addr, n, "fill32");
  const auto b0 = static_cast<std::uint8_t>(pattern);
  const bool uniform = pattern == b0 * 0x01010101u;
  // A block of the pattern, long enough that a copy may start at any phase 0..3.
  // Built only as far as this fill needs it (a small fill must not pay for 4 KiB).
  constexpr std::size_t kBlock = 4096;
  std::array<std::uint8_t, kBlock + 4> block;
  if (!uniform) {
    const std::size_t used = std::min<std::size_t>(n, kBlock) + 3;
    for (std::size_t i = 0; i < used; i += 4) std::memcpy(block.data() + i, &pattern, 4);
    if (!is_little_endian()) {
      for (std::size_t i = 0; i < used; ++i) block[i] = static_cast<std::uint8_t>(pattern >> (8 * (i % 4)));
    }
  }
  std::uint64_t offset = 0;  // position within the range: decides the phase of the pattern
  while (offset < n) {
    const std::uint64_t at = addr + offset;
    const std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(n - offset, to_page_end(at)));
    std::uint8_t* p = page(at / kPage);
    if (p == nullptr && pattern == 0) {  // untouched pages already read as zeros
      offset += chunk;
      continue;
    }
    if (p == nullptr) p = page_for_write(at / kPage, at % kPage, at % kPage + chunk);
    std::uint8_t* d = p + at % kPage;
    if (uniform) {
      std::memset(d, b0, chunk);
    } else {
      const std::size_t phase = static_cast<std::size_t>(offset % 4);
      for (std::size_t done = 0; done < chunk;) {
        const std::size_t piece = std::min(kBlock, chunk - done);  // kBlock % 4 == 0: phase holds
        std::memcpy(d + done, block.data() + phase, piece);
        done += piece;
      }
    }
    offset += chunk;
  }
}

void SparseMemory::copy(std::uint64_t dst, std::uint64_t src, std::size_t n) {
  check(src, n, "copy (source)");
  check(dst, n, "copy (destination)");
  if (n == 0 || dst == src) return;
  // Copies one run that lies within one source page and one destination page.
  auto run = [this](std::uint64_t d, std::uint64_t s, std::size_t len) {
    if (const std::uint8_t* sp = page(s / kPage)) {
      std::memmove(page_for_write(d / kPage, d % kPage, d % kPage + len) + d % kPage, sp + s % kPage, len);
    } else if (std::uint8_t* dp = page(d / kPage)) {
      std::memset(dp + d % kPage, 0, len);  // the source reads as zeros
    }
  };
  // As memmove: copy upwards when the destination lies below the source, downwards otherwise, so
  // that no run overwrites source bytes a later run still has to read.
  if (dst < src) {
    for (std::uint64_t pos = 0; pos < n;) {
      const std::size_t len = static_cast<std::size_t>(
          std::min({n - pos, to_page_end(src + pos), to_page_end(dst + pos)}));
      run(dst + pos, src + pos, len);
      pos += len;
    }
  } else {
    for (std::uint64_t end = n; end > 0;) {
      // Bytes before `end` that share a page with byte end - 1, for each side.
      const std::uint64_t s_in = (src + end - 1) % kPage + 1;
      const std::uint64_t d_in = (dst + end - 1) % kPage + 1;
      const std::size_t len = static_cast<std::size_t>(std::min({end, s_in, d_in}));
      end -= len;
      run(dst + end, src + end, len);
    }
  }
}

}  // namespace spyre_dma::device_core
