// Device memory that costs only what is touched.
//
// A byte-addressed memory of a configured size (128 GiB by default, the installed LPDDR5 of the
// device) backed by fixed-size pages that are allocated on first write. Untouched pages read as
// zeros without being allocated, so a test that writes a few megabytes at the top of a 128 GiB
// device uses a few megabytes of host memory. The device memory of the reference device and of the
// SystemC model's device-memory component.
//
// Contract:
//   * Every access is bounds-checked: a range that does not lie within [0, size()) throws
//     std::out_of_range naming the address, the length and the size; nothing is touched then.
//   * Thread safety: concurrent accesses to disjoint byte ranges are safe (also within one page;
//     page allocation races are resolved with a compare-and-swap). Overlapping concurrent
//     accesses race exactly as they would on plain memory.
//   * Cost: one memcpy / memmove / memset per touched page run; a range over untouched pages reads
//     as a memset of zeros; writing zeros with fill32 to an untouched page allocates nothing.
//   * Pages come from anonymous mmap (zero-filled lazily by the kernel). A failure to map a page
//     throws std::bad_alloc.
//   * A destroyed memory's pages are kept for the process's next memories (up to kPooledPages),
//     so that a bench building a device per test does not fault in and clear every page anew;
//     a kept page is cleared where its first write does not cover it, so it reads as zeros as a
//     new one does.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace spyre_dma::device_core {

class SparseMemory {
 public:
  // Allocation granule: 2 MiB, an x86-64 huge page. Pages are mapped aligned to it and offered to
  // transparent huge pages, so first touching one costs one fault where 4 KiB pages cost 512.
  static constexpr std::uint64_t kPageBytes = 2ull << 20;
  static constexpr std::uint64_t kDefaultBytes = 128ull << 30;    // 128 GiB installed
  // Pages kept across memories, process-wide: 512 MiB.
  static constexpr std::uint64_t kPooledPages = 256;

  // Throws std::invalid_argument for a size of zero.
  explicit SparseMemory(std::uint64_t size_bytes = kDefaultBytes);
  ~SparseMemory();
  SparseMemory(const SparseMemory&) = delete;
  SparseMemory& operator=(const SparseMemory&) = delete;

  std::uint64_t size() const noexcept { return size_; }
  // True when [addr, addr + n) lies within the memory (n == 0: addr <= size()).
  bool contains(std::uint64_t addr, std::uint64_t n) const noexcept {
    return n <= size_ && addr <= size_ - n;
  }

  // Copies n bytes at addr into dst (zeros where nothing was ever written).
  void read(std::uint64_t addr, void* dst, std::size_t n) const;
  // The bytes at addr in place, as many of the n as lie in addr's page (`got`), for a reader
  // that need not copy them out; null (got 0) where that page was never written (it reads as
  // zeros with nothing behind it) or the range lies outside the memory. A page stays where it is
  // for the memory's life, so the pointer holds until the memory is destroyed.
  const std::uint8_t* view(std::uint64_t addr, std::size_t n, std::size_t& got) const noexcept;
  // Copies n bytes from src to addr, allocating the pages it touches.
  void write(std::uint64_t addr, const void* src, std::size_t n);
  // Fills n bytes at addr with `pattern` repeated little-endian from the start of the range:
  // byte i of the range is (pattern >> 8 * (i % 4)) & 0xFF.
  void fill32(std::uint64_t addr, std::uint32_t pattern, std::size_t n);
  // Copies n bytes from src to dst within this memory, with memmove semantics for overlap.
  void copy(std::uint64_t dst, std::uint64_t src, std::size_t n);

  // Host memory allocated for pages (a multiple of kPageBytes).
  std::uint64_t bytes_resident() const noexcept {
    return pages_resident_.load(std::memory_order_relaxed) * kPageBytes;
  }
  std::uint64_t pages_resident() const noexcept {
    return pages_resident_.load(std::memory_order_relaxed);
  }

  // Pages kept from destroyed memories, process-wide, and a way to give them all back to the
  // system (a caller measuring what the process holds).
  static std::uint64_t pooled_pages();
  static void release_pooled_pages() noexcept;

 private:
  void check(std::uint64_t addr, std::uint64_t n, const char* what) const;
  std::uint8_t* page(std::uint64_t index) const noexcept {
    return pages_[index].load(std::memory_order_acquire);
  }
  // The page at `index`, allocated if it has none; [lo, hi) within it is what the caller is about
  // to write (and so needs no clearing).
  std::uint8_t* page_for_write(std::uint64_t index, std::uint64_t lo, std::uint64_t hi);

  std::uint64_t size_;
  std::uint64_t num_pages_;
  std::unique_ptr<std::atomic<std::uint8_t*>[]> pages_;
  std::atomic<std::uint64_t> pages_resident_{0};
};

}  // namespace spyre_dma::device_core
