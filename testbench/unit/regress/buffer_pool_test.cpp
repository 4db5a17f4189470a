// PooledBuffer: a buffer given back is handed to the next test that asks for as much or somewhat
// less, or more within its size class, aligned as promised; one far larger than asked is not; and
// the pool stays within its bound and empties when asked (before a soak measures the process).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "buffer_pool.hpp"
#include "spyre_dma/shareable_memory.hpp"

namespace spyre_dma::regress {
namespace {

TEST(BufferPool, AGivenBackBufferIsReused) {
  // An odd size, so that no buffer another test of this process gave back fits it as well.
  constexpr std::uint64_t kBytes = (97ull << 20) + 12288;
  std::uint8_t* first = nullptr;
  const std::uint64_t pooled_before = PooledBuffer::pooled_bytes();
  std::uint64_t capacity = 0;
  {
    PooledBuffer b(kBytes);
    first = b.data();
    capacity = b.capacity();
    EXPECT_GE(capacity, kBytes);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % (2u << 20), 0u);  // huge-page aligned
    b.data()[kBytes - 1] = 1;                                                // all of it is usable
  }
  ASSERT_EQ(PooledBuffer::pooled_bytes(), pooled_before + capacity);
  PooledBuffer again(97ull << 20);  // a little smaller: the same buffer
  EXPECT_EQ(again.data(), first);
  EXPECT_EQ(PooledBuffer::pooled_bytes(), pooled_before);
  PooledBuffer small(4096);  // far smaller: not that one
  EXPECT_NE(small.data(), first);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(small.data()) % 4096, 0u);
}

// Buffers come in power-of-two size classes: one given back serves a later, larger ask of its
// class (a test's big buffers are twice its largest op, a different size in every test), and the
// bytes past the ask are usable.
TEST(BufferPool, ABufferServesLargerAsksOfItsSizeClass) {
  constexpr std::uint64_t kFirst = (33ull << 20) + 4096, kLater = (63ull << 20) + 123;  // both in the 64 MiB class
  PooledBuffer::release_pooled();  // a larger buffer another test gave back would serve both asks
  std::uint8_t* first = nullptr;
  {
    PooledBuffer b(kFirst);
    first = b.data();
    EXPECT_EQ(b.capacity(), 64ull << 20);
  }
  PooledBuffer again(kLater);
  EXPECT_EQ(again.data(), first);
  again.data()[kLater - 1] = 1;
}

// Shareable buffers (registered host memory) are pooled apart: a device in another process can map
// them, and neither kind is handed out for the other.
TEST(BufferPool, ShareableBuffersAreReusedAsShareable) {
  constexpr std::uint64_t kBytes = (5ull << 20) + 8192;
  std::uint8_t* first = nullptr;
  {
    PooledBuffer b(kBytes, PooledBuffer::Memory::kShareable);
    first = b.data();
    const auto range = find_shareable(b.data() + 100, kBytes - 100);
    ASSERT_TRUE(range.has_value());
    EXPECT_EQ(range->offset, 100u);
  }
  {
    PooledBuffer heap(kBytes);  // the heap kind does not take it
    EXPECT_NE(heap.data(), first);
    EXPECT_FALSE(find_shareable(heap.data(), kBytes).has_value());
  }
  PooledBuffer again(kBytes, PooledBuffer::Memory::kShareable);
  EXPECT_EQ(again.data(), first);
  EXPECT_TRUE(find_shareable(again.data(), kBytes).has_value());
}

TEST(BufferPool, MovesKeepOneOwner) {
  PooledBuffer a(1 << 20);
  std::uint8_t* p = a.data();
  PooledBuffer b(std::move(a));
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move): moved-from is empty
  PooledBuffer c(8192);
  c = std::move(b);
  EXPECT_EQ(c.data(), p);
}

TEST(BufferPool, StaysWithinItsBoundAndEmptiesOnRequest) {
  {
    std::vector<PooledBuffer> many;
    for (int i = 0; i < 24; ++i) many.emplace_back(64ull << 20);  // 1.5 GiB in all
  }
  EXPECT_LE(PooledBuffer::pooled_bytes(), PooledBuffer::kMaxPooledBytes);
  EXPECT_GE(PooledBuffer::pooled_bytes(), 512ull << 20);
  PooledBuffer::release_pooled();
  EXPECT_EQ(PooledBuffer::pooled_bytes(), 0u);
}

}  // namespace
}  // namespace spyre_dma::regress
