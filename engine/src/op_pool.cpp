#include "op_pool.hpp"

#include <algorithm>

namespace spyre_dma::detail {
namespace {

// Each thread keeps up to kThreadBlocks blocks of its own: take() and give() on the thread that
// submits (and, usually, reaps) take no lock. The cache moves half its capacity to or from the
// shared list at a time, so a thread that only frees (a reaper) or only takes (a submitter) pays
// one lock per kThreadBlocks / 2 ops.
constexpr std::size_t kThreadBlocks = 256;

// Set once the thread's cache is destroyed: an op freed later in that thread's exit (by another
// thread-local object) goes straight to the shared list.
thread_local bool t_cache_gone = false;
// The thread's cache once made: a plain pointer, read once per op without the guard that a
// thread-local with a constructor costs on every access.
thread_local std::vector<void*>* t_blocks = nullptr;

struct ThreadCache {
  std::vector<void*> blocks;
  ThreadCache() {
    try {
      blocks.reserve(kThreadBlocks);
    } catch (...) {  // no memory for a cache: this thread uses the shared list (see cache())
    }
  }
  ~ThreadCache() {  // the thread ends: its blocks go back to the shared list
    t_cache_gone = true;
    t_blocks = nullptr;
    OpPool::instance().give_many(blocks.data(), blocks.size());
  }
};

// The thread's cache; null once it is gone, or if it could not be made.
std::vector<void*>* cache() noexcept {
  if (t_blocks) return t_blocks;
  if (t_cache_gone) return nullptr;
  thread_local ThreadCache c;
  if (c.blocks.capacity() >= kThreadBlocks) t_blocks = &c.blocks;
  return t_blocks;
}

}  // namespace

void* OpPool::allocate_block() { return ::operator new(kBlockBytes, std::align_val_t{kBlockAlign}); }
void OpPool::free_block(void* block) noexcept { ::operator delete(block, std::align_val_t{kBlockAlign}); }

OpPool& OpPool::instance() {
  // Deliberately leaked: ops freed by other static destructors at exit still find it.
  static OpPool* const pool = new OpPool;
  return *pool;
}

void* OpPool::take() {
  std::vector<void*>* mine = cache();
  if (!mine || mine->empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!mine) {
      if (free_.empty()) return allocate_block();
      void* block = free_.back();
      free_.pop_back();
      return block;
    }
    const std::size_t n = std::min(free_.size(), kThreadBlocks / 2);
    mine->insert(mine->end(), free_.end() - static_cast<std::ptrdiff_t>(n), free_.end());  // reserved: no allocation
    free_.resize(free_.size() - n);
  }
  if (mine->empty()) return allocate_block();
  void* block = mine->back();
  mine->pop_back();
  return block;
}

void OpPool::give(void* block) noexcept {
  std::vector<void*>* mine = cache();
  if (!mine) return give_many(&block, 1);
  if (mine->size() == kThreadBlocks) {
    // Full: the older half goes to the shared list (the newer half, warmer in cache, stays).
    give_many(mine->data(), kThreadBlocks / 2);
    mine->erase(mine->begin(), mine->begin() + kThreadBlocks / 2);
  }
  mine->push_back(block);  // within the reserved capacity: no allocation
}

void OpPool::give_many(void* const* blocks, std::size_t n) noexcept {
  std::size_t kept = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (; kept < n && free_.size() < kMaxFree; ++kept) {
      try {
        free_.push_back(blocks[kept]);
      } catch (...) {  // no room to remember it: the heap takes it back
        break;
      }
    }
  }
  for (std::size_t i = kept; i < n; ++i) free_block(blocks[i]);
}

}  // namespace spyre_dma::detail
