// Recycled storage for OpState: a runtime makes and drops ops at its submission rate, and a heap
// allocation was a fifth of a small op's submission cost (glibc's per-thread cache holds only a
// few blocks of a size, while thousands of ops are in flight at once).
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

namespace spyre_dma::detail {

// One process-wide pool of equal-sized blocks, never destroyed: an op may outlive its engine (an
// Op handle kept after the engine closed) and is freed wherever its last reference drops. Each
// thread caches a few hundred blocks in front of the shared list, so the common take and give
// take no lock.
class OpPool {
 public:
  // An op (its state and the shared count in front of it) in as few cache lines as it needs: blocks
  // start on a line. OpState is 240 bytes, 256 with the shared count in front: four lines.
  static constexpr std::size_t kBlockBytes = 320;
  static constexpr std::size_t kBlockAlign = 64;
  // Beyond this many free blocks in the shared list, a block given back goes to the heap. A block
  // is made only when the taker finds its cache and the shared list empty, so the pool holds about
  // the most ops that were alive at once (and the threads' caches): the bound only limits what one
  // burst leaves behind (20 MiB). It is well above the ops a runtime keeps in flight, so that a
  // steady state of many thousands allocates nothing: at 8192, a loop of 16384 fills in flight
  // took half its ops from the heap each time (`cb_submission`, 16384 ops: 11-20% slower).
  static constexpr std::size_t kMaxFree = 65536;

  static OpPool& instance();

  void* take();
  void give(void* block) noexcept;
  // Hands n blocks to the shared list (beyond kMaxFree, to the heap).
  void give_many(void* const* blocks, std::size_t n) noexcept;

  static void* allocate_block();
  static void free_block(void* block) noexcept;

 private:
  std::mutex mu_;
  std::vector<void*> free_;
};

// The allocator std::allocate_shared gets: a single object that fits a block comes from the pool,
// anything else from the heap.
template <class T>
struct OpPoolAllocator {
  using value_type = T;
  OpPoolAllocator() noexcept = default;
  template <class U>
  OpPoolAllocator(const OpPoolAllocator<U>&) noexcept {}  // NOLINT: rebinding converts implicitly

#if defined(__SANITIZE_ADDRESS__)
  static constexpr bool kPooled = false;  // AddressSanitizer sees a use after free only on the heap
#else
  static constexpr bool kPooled = sizeof(T) <= OpPool::kBlockBytes && alignof(T) <= alignof(std::max_align_t);
#endif

  T* allocate(std::size_t n) {
    if (kPooled && n == 1) return static_cast<T*>(OpPool::instance().take());
    return static_cast<T*>(::operator new(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if (kPooled && n == 1) return OpPool::instance().give(p);
    ::operator delete(p);
  }
  template <class U>
  bool operator==(const OpPoolAllocator<U>&) const noexcept {
    return true;
  }
  template <class U>
  bool operator!=(const OpPoolAllocator<U>&) const noexcept {
    return false;
  }
};

}  // namespace spyre_dma::detail
