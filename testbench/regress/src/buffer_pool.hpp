// Large buffers kept from one test for the next in the same process. A regression worker runs test
// after test, each filling tens of megabytes of shadow copies and host buffers: fresh memory costs a
// page fault per 4 KiB and the kernel's clearing of every page, which was most of a small test's
// set-up. A buffer given back is handed to the next test that asks for as much or less (down to a
// sixteenth of it); its contents are whatever the last test left, so a taker writes every byte it
// reads.
#pragma once

#include <cstddef>
#include <cstdint>

namespace spyre_dma::regress {

class PooledBuffer {
 public:
  enum class Memory {
    kHeap,       // plain memory, huge-page aligned where large
    kShareable,  // spyre_dma::allocate_shareable's (a memfd): registered host buffers, which a
                 // device in another process (vfio-user) must be able to map
  };
  // At least `bytes` (rounded up to a power of two from 4 KiB), aligned to 4 KiB (heap: 2 MiB
  // from 2 MiB on); contents undefined. Throws OutOfMemory when no memory can be had.
  explicit PooledBuffer(std::uint64_t bytes, Memory memory = Memory::kHeap);
  ~PooledBuffer();
  PooledBuffer(PooledBuffer&& other) noexcept;
  PooledBuffer& operator=(PooledBuffer&& other) noexcept;
  PooledBuffer(const PooledBuffer&) = delete;
  PooledBuffer& operator=(const PooledBuffer&) = delete;

  std::uint8_t* data() const noexcept { return data_; }
  std::uint64_t capacity() const noexcept { return capacity_; }

  // How many bytes the pool holds for reuse now, of both kinds (for tests), and its bound: beyond
  // it a buffer given back is freed.
  static std::uint64_t pooled_bytes();
  // Frees every pooled buffer: for a process about to have its memory measured (a soak samples
  // each worker's RSS between tests, and the pool is a cache, not memory in use).
  static void release_pooled();
  static constexpr std::uint64_t kMaxPooledBytes = 1ull << 30;

 private:
  std::uint8_t* data_ = nullptr;
  std::uint64_t capacity_ = 0;
  Memory memory_ = Memory::kHeap;
};

}  // namespace spyre_dma::regress
