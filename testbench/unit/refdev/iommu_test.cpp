// Iommu: IOVA layout, exact-range translation, access direction, unmap rules, pinning, counters.
#include "spyre_dma/device_core/iommu.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace {

using spyre_dma::DmaAccess;
using spyre_dma::device_core::Iommu;

alignas(4096) std::uint8_t g_host[8 * 4096];

TEST(Iommu, IovaKeepsPageOffsetAndLeavesGuardGaps) {
  Iommu mmu;
  const std::uint64_t a = mmu.map(g_host + 0x123, 100, DmaAccess::kBoth);
  EXPECT_EQ(a, Iommu::kDefaultIovaBase + 0x123);
  const std::uint64_t b = mmu.map(g_host, 4096, DmaAccess::kBoth);
  EXPECT_EQ(b % 4096, 0u);
  EXPECT_GE(b, a - 0x123 + 2 * 4096);  // one page for a, one guard page
  const std::uint64_t c = mmu.map(g_host + 4095, 2, DmaAccess::kBoth);  // straddles two pages
  EXPECT_EQ(c % 4096, 4095u);
  EXPECT_GE(c, b + 2 * 4096);
  const std::uint64_t d = mmu.map(g_host, 1, DmaAccess::kBoth);
  EXPECT_GE(d, c - 4095 + 3 * 4096);
  EXPECT_EQ(mmu.mappings_live(), 4u);
}

TEST(Iommu, TranslatesExactlyTheMappedBytes) {
  Iommu mmu;
  const std::uint64_t iova = mmu.map(g_host + 64, 1000, DmaAccess::kBoth);
  auto w = mmu.translate(iova, 1000, false);
  ASSERT_TRUE(w);
  EXPECT_EQ(w.host(), g_host + 64);
  w.release();
  auto mid = mmu.translate(iova + 500, 500, true);
  ASSERT_TRUE(mid);
  EXPECT_EQ(mid.host(), g_host + 564);
  mid.release();
  EXPECT_EQ(mmu.faults(), 0u);
  EXPECT_FALSE(mmu.translate(iova + 500, 501, false));  // one byte past the mapping
  EXPECT_FALSE(mmu.translate(iova - 1, 2, false));      // one byte before (same page)
  EXPECT_FALSE(mmu.translate(iova, 0, false));
  EXPECT_FALSE(mmu.translate(0, 128, false));
  EXPECT_FALSE(mmu.translate(~0ull - 10, 128, false));  // wraps
  EXPECT_EQ(mmu.faults(), 5u);
}

TEST(Iommu, AccessDirectionIsEnforced) {
  Iommu mmu;
  const std::uint64_t ro = mmu.map(g_host, 4096, DmaAccess::kDeviceReads);
  const std::uint64_t wo = mmu.map(g_host + 4096, 4096, DmaAccess::kDeviceWrites);
  EXPECT_TRUE(mmu.translate(ro, 4096, false));
  EXPECT_FALSE(mmu.translate(ro, 4096, true));
  EXPECT_TRUE(mmu.translate(wo, 4096, true));
  EXPECT_FALSE(mmu.translate(wo, 4096, false));
  EXPECT_EQ(mmu.faults(), 2u);
}

TEST(Iommu, RangeAcrossTwoMappingsFaults) {
  Iommu mmu;
  const std::uint64_t a = mmu.map(g_host, 4096, DmaAccess::kBoth);
  const std::uint64_t b = mmu.map(g_host + 4096, 4096, DmaAccess::kBoth);
  ASSERT_GT(b, a);
  EXPECT_FALSE(mmu.translate(a, b - a + 1, false));
  EXPECT_FALSE(mmu.translate(a + 4000, 200, false));
  EXPECT_FALSE(mmu.translate(a + 4096, 1, false));  // the guard page
}

TEST(Iommu, UnmapNeedsTheExactIova) {
  Iommu mmu;
  const std::uint64_t iova = mmu.map(g_host + 16, 256, DmaAccess::kBoth);
  EXPECT_THROW(mmu.unmap(iova + 1), std::invalid_argument);
  EXPECT_THROW(mmu.unmap(iova - 16), std::invalid_argument);
  EXPECT_THROW(mmu.unmap(0x1234), std::invalid_argument);
  mmu.unmap(iova);
  EXPECT_EQ(mmu.mappings_live(), 0u);
  EXPECT_FALSE(mmu.translate(iova, 1, false));  // unmapped
  EXPECT_THROW(mmu.unmap(iova), std::invalid_argument);
  // A fresh mapping does not reuse the stale IOVA straight away.
  const std::uint64_t again = mmu.map(g_host + 16, 256, DmaAccess::kBoth);
  EXPECT_NE(again, iova);
}

TEST(Iommu, MapRejectsBadArguments) {
  Iommu mmu;
  EXPECT_THROW(mmu.map(nullptr, 10, DmaAccess::kBoth), std::invalid_argument);
  EXPECT_THROW(mmu.map(g_host, 0, DmaAccess::kBoth), std::invalid_argument);
  EXPECT_THROW(mmu.map(g_host, 10, static_cast<DmaAccess>(0)), std::invalid_argument);
  EXPECT_THROW(Iommu(123, 1ull << 40), std::invalid_argument);
}

TEST(Iommu, ExhaustionThrowsAndFreedSpaceIsReusedAfterWrap) {
  Iommu mmu(0x10000, 0x10000 + 8 * 4096);  // room for four 1-page mappings with guards
  std::vector<std::uint64_t> iovas;
  for (int i = 0; i < 4; ++i) iovas.push_back(mmu.map(g_host, 4096, DmaAccess::kBoth));
  EXPECT_THROW(mmu.map(g_host, 4096, DmaAccess::kBoth), std::runtime_error);
  mmu.unmap(iovas[1]);
  EXPECT_EQ(mmu.map(g_host, 4096, DmaAccess::kBoth), iovas[1]);
  EXPECT_THROW(mmu.map(g_host, 5 * 4096, DmaAccess::kBoth), std::runtime_error);
}

TEST(Iommu, UnmapWaitsForOpenWindows) {
  Iommu mmu;
  const std::uint64_t iova = mmu.map(g_host, 4096, DmaAccess::kBoth);
  auto w = mmu.translate(iova, 4096, true);
  ASSERT_TRUE(w);
  std::atomic<bool> done{false};
  std::thread t([&] {
    mmu.unmap(iova);
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_FALSE(done.load());
  EXPECT_FALSE(mmu.translate(iova, 1, false));  // already gone for new accesses
  w.release();
  t.join();
  EXPECT_TRUE(done.load());
}

// A window kept open across accesses (the model's root complex): it follows accesses within its
// mapping on the one pin, moves to another mapping when an access lands there, and once unmap()
// has begun it faults the next access, which closes it and lets unmap() return.
TEST(Iommu, RetargetKeepsOnePinWithinAMappingAndLetsUnmapThrough) {
  Iommu mmu;
  const std::uint64_t a = mmu.map(g_host, 8192, DmaAccess::kBoth);
  const std::uint64_t b = mmu.map(g_host + 4 * 4096, 4096, DmaAccess::kDeviceReads);
  Iommu::Window w;
  ASSERT_TRUE(mmu.retarget(w, a, 512, true));
  EXPECT_EQ(w.host(), g_host);
  ASSERT_TRUE(mmu.retarget(w, a + 4096, 512, true));
  EXPECT_EQ(w.host(), g_host + 4096);
  EXPECT_FALSE(mmu.retarget(w, a + 8000, 512, true));  // past the mapping's end: a fault closes it
  EXPECT_FALSE(w);
  EXPECT_EQ(mmu.faults(), 1u);
  ASSERT_TRUE(mmu.retarget(w, a + 64, 64, false));
  ASSERT_TRUE(mmu.retarget(w, b + 8, 8, false));  // another mapping: a's pin goes, b's comes
  EXPECT_EQ(w.host(), g_host + 4 * 4096 + 8);
  mmu.unmap(a);  // a is no longer pinned: returns at once
  EXPECT_FALSE(mmu.retarget(w, b, 8, true));  // b does not let the device write
  ASSERT_TRUE(mmu.retarget(w, b, 8, false));

  std::atomic<bool> done{false};
  std::thread t([&] {
    mmu.unmap(b);
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_FALSE(done.load());  // the open window holds b
  EXPECT_FALSE(mmu.retarget(w, b + 8, 8, false));  // but no access passes once unmap() has begun
  EXPECT_FALSE(w);
  t.join();
  EXPECT_TRUE(done.load());
  EXPECT_EQ(mmu.mappings_live(), 0u);
}

TEST(Iommu, ManyReadersWhileMappingAndUnmapping) {
  Iommu mmu;
  const std::uint64_t stable = mmu.map(g_host, 4096, DmaAccess::kBoth);
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> ok{0};
  std::vector<std::thread> readers;
  for (int i = 0; i < 3; ++i) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        if (auto w = mmu.translate(stable + 64, 128, false)) {
          if (w.host() == g_host + 64) ok.fetch_add(1);
        }
      }
    });
  }
  // Map and unmap until the readers have translated plenty meanwhile (bounded in time).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (int i = 0; i < 2000 || (ok.load() < 10000 && std::chrono::steady_clock::now() < deadline); ++i) {
    mmu.unmap(mmu.map(g_host + 8192, 4096, DmaAccess::kBoth));
  }
  stop = true;
  for (auto& t : readers) t.join();
  EXPECT_GT(ok.load(), 0u);
  EXPECT_EQ(mmu.faults(), 0u);
  EXPECT_EQ(mmu.mappings_live(), 1u);
}

}  // namespace
