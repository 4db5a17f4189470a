#include "op_pool.hpp"

namespace spyre_dma::detail {

OpPool& OpPool::instance() {
  // Deliberately leaked: ops freed by other static destructors at exit still find it.
  static OpPool* const pool = new OpPool;
  return *pool;
}

void* OpPool::take() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_.empty()) {
      void* block = free_.back();
      free_.pop_back();
      return block;
    }
  }
  return ::operator new(kBlockBytes);
}

void OpPool::give(void* block) noexcept {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.size() < kMaxFree) {
      try {
        free_.push_back(block);
        return;
      } catch (...) {  // no room to remember it: the heap takes it back
      }
    }
  }
  ::operator delete(block);
}

}  // namespace spyre_dma::detail
