// SparseMemory: byte-exact reads and writes across pages, fill phase, memmove semantics, bounds,
// and that it costs only what is touched.
#include "spyre_dma/device_core/sparse_memory.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using spyre_dma::device_core::SparseMemory;
constexpr std::uint64_t kPage = SparseMemory::kPageBytes;

std::vector<std::uint8_t> bytes(std::size_t n, std::uint32_t seed) {
  std::vector<std::uint8_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>((i * 131 + seed * 7 + (i >> 9)) & 0xFF);
  return v;
}

TEST(SparseMemory, UntouchedReadsZeroWithoutAllocating) {
  SparseMemory m;  // 128 GiB
  EXPECT_EQ(m.size(), 128ull << 30);
  std::vector<std::uint8_t> out(3 * kPage, 0xEE);
  m.read((100ull << 30) + 17, out.data(), out.size());
  for (auto b : out) ASSERT_EQ(b, 0);
  EXPECT_EQ(m.bytes_resident(), 0u);
}

TEST(SparseMemory, CostsOnlyTouchedPages) {
  SparseMemory m;
  const std::uint8_t one = 1;
  m.write(0, &one, 1);
  m.write((128ull << 30) - 1, &one, 1);           // the very last byte
  m.write(64ull << 30, bytes(kPage, 1).data(), kPage);  // one aligned page
  EXPECT_EQ(m.pages_resident(), 3u);
  EXPECT_EQ(m.bytes_resident(), 3 * kPage);
  m.write(kPage - 1, bytes(2, 2).data(), 2);  // straddles pages 0 and 1
  EXPECT_EQ(m.pages_resident(), 4u);
}

TEST(SparseMemory, WriteReadAcrossPageBoundaries) {
  SparseMemory m(16 * kPage);
  const auto data = bytes(3 * kPage + 333, 3);
  const std::uint64_t at = kPage - 100;
  m.write(at, data.data(), data.size());
  std::vector<std::uint8_t> out(data.size() + 200, 0xEE);
  m.read(at - 100, out.data(), out.size());
  for (std::size_t i = 0; i < 100; ++i) ASSERT_EQ(out[i], 0) << i;
  EXPECT_EQ(0, std::memcmp(out.data() + 100, data.data(), data.size()));
  for (std::size_t i = 100 + data.size(); i < out.size(); ++i) ASSERT_EQ(out[i], 0) << i;
}

TEST(SparseMemory, Fill32RepeatsPatternFromRangeStart) {
  SparseMemory m(8 * kPage);
  const std::uint32_t pat = 0xA1B2C3D4;
  const std::uint64_t at = 2 * kPage - 4097;  // odd start, straddles a page
  const std::size_t n = 2 * 4096 + 4099;      // not a multiple of 4
  m.fill32(at, pat, n);
  std::vector<std::uint8_t> out(n + 2);
  m.read(at - 1, out.data(), out.size());
  EXPECT_EQ(out.front(), 0);
  EXPECT_EQ(out.back(), 0);
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(out[i + 1], static_cast<std::uint8_t>(pat >> (8 * (i % 4)))) << i;
  }
}

TEST(SparseMemory, Fill32UniformAndZero) {
  SparseMemory m(8 * kPage);
  m.fill32(0, 0, 8 * kPage);  // zeros over untouched pages allocate nothing
  EXPECT_EQ(m.bytes_resident(), 0u);
  m.fill32(kPage + 5, 0x7F7F7F7F, 10);
  std::uint8_t out[12];
  m.read(kPage + 4, out, sizeof out);
  EXPECT_EQ(out[0], 0);
  for (int i = 1; i <= 10; ++i) EXPECT_EQ(out[i], 0x7F);
  EXPECT_EQ(out[11], 0);
  m.fill32(kPage + 6, 0, 2);  // zeros over a touched page do write
  m.read(kPage + 4, out, sizeof out);
  EXPECT_EQ(out[2], 0);
  EXPECT_EQ(out[3], 0);
  EXPECT_EQ(out[4], 0x7F);
}

// Copies within memory against std::memmove on a flat image, for overlap in both directions and
// across page boundaries.
TEST(SparseMemory, CopyHasMemmoveSemantics) {
  constexpr std::uint64_t kSize = 6 * kPage;
  struct Case {
    std::uint64_t dst, src, n;
  };
  const Case cases[] = {
      {0, 10, 3 * kPage},                     // overlap, dst below src
      {10, 0, 3 * kPage},                     // overlap, dst above src
      {kPage + 7, kPage - 3, 2 * kPage + 11}, // small shift upwards across pages
      {kPage - 3, kPage + 7, 2 * kPage + 11}, // small shift downwards
      {4 * kPage, 5, kPage + 100},            // disjoint
      {3 * kPage, 3 * kPage, 100},            // same place
  };
  for (const Case& c : cases) {
    SparseMemory m(kSize);
    std::vector<std::uint8_t> flat = bytes(kSize, 9);
    flat.resize(kSize);
    // Leave page 5 untouched (zeros) in both images, so copies from untouched pages are covered.
    std::fill(flat.begin() + 5 * kPage, flat.end(), 0);
    m.write(0, flat.data(), 5 * kPage);
    m.copy(c.dst, c.src, c.n);
    std::memmove(flat.data() + c.dst, flat.data() + c.src, c.n);
    std::vector<std::uint8_t> out(kSize);
    m.read(0, out.data(), kSize);
    ASSERT_EQ(0, std::memcmp(out.data(), flat.data(), kSize)) << "dst " << c.dst << " src " << c.src;
  }
}

TEST(SparseMemory, CopyFromUntouchedPagesZeroesOrSkips) {
  SparseMemory m(4 * kPage);
  m.copy(2 * kPage, 0, kPage);  // both untouched: nothing allocated
  EXPECT_EQ(m.bytes_resident(), 0u);
  const auto data = bytes(kPage, 4);
  m.write(2 * kPage, data.data(), kPage);
  m.copy(2 * kPage + 10, 10, 100);  // untouched source zeroes a touched destination
  std::vector<std::uint8_t> out(kPage);
  m.read(2 * kPage, out.data(), kPage);
  for (int i = 10; i < 110; ++i) ASSERT_EQ(out[i], 0);
  EXPECT_EQ(out[9], data[9]);
  EXPECT_EQ(out[110], data[110]);
}

TEST(SparseMemory, BoundsCheckedWithAddressAndSize) {
  SparseMemory m(4 * kPage);
  std::uint8_t b[16] = {};
  EXPECT_NO_THROW(m.write(4 * kPage - 16, b, 16));
  EXPECT_NO_THROW(m.read(4 * kPage, b, 0));
  try {
    m.write(4 * kPage - 15, b, 16);
    FAIL() << "no throw";
  } catch (const std::out_of_range& e) {
    const std::string what = e.what();
    std::ostringstream address;
    address << "0x" << std::hex << 4 * kPage - 15;
    EXPECT_NE(what.find(address.str()), std::string::npos) << what;
    EXPECT_NE(what.find("0x10"), std::string::npos) << what;
  }
  EXPECT_THROW(m.read(~0ull - 3, b, 8), std::out_of_range);  // wraps around
  EXPECT_THROW(m.fill32(4 * kPage, 1, 1), std::out_of_range);
  EXPECT_THROW(m.copy(0, 4 * kPage - 8, 16), std::out_of_range);
  EXPECT_THROW(m.copy(4 * kPage - 8, 0, 16), std::out_of_range);
  EXPECT_THROW(SparseMemory(0), std::invalid_argument);
}

TEST(SparseMemory, ConcurrentDisjointWritesRacingForPages) {
  SparseMemory m(8 * kPage);
  constexpr int kThreads = 8;
  constexpr std::size_t kSlice = kPage / kThreads;  // every thread touches every page
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&m, t] {
      const auto data = bytes(kSlice, static_cast<std::uint32_t>(t));
      for (std::uint64_t page = 0; page < 8; ++page) m.write(page * kPage + t * kSlice, data.data(), kSlice);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(m.pages_resident(), 8u);
  std::vector<std::uint8_t> out(kSlice);
  for (int t = 0; t < kThreads; ++t) {
    const auto data = bytes(kSlice, static_cast<std::uint32_t>(t));
    for (std::uint64_t page = 0; page < 8; ++page) {
      m.read(page * kPage + t * kSlice, out.data(), kSlice);
      ASSERT_EQ(0, std::memcmp(out.data(), data.data(), kSlice));
    }
  }
}

TEST(SparseMemory, ViewShowsWrittenBytesInPlaceUpToThePageEnd) {
  SparseMemory m(4 * kPage);
  std::size_t got = 99;
  EXPECT_EQ(m.view(kPage, 16, got), nullptr);  // never written: zeros with nothing behind them
  EXPECT_EQ(got, 0u);
  const auto data = bytes(256, 5);
  m.write(2 * kPage - 128, data.data(), data.size());  // across the end of page 1
  const std::uint8_t* p = m.view(2 * kPage - 128, 256, got);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(got, 128u);  // the rest lies in page 2
  EXPECT_EQ(0, std::memcmp(p, data.data(), 128));
  const std::uint8_t* q = m.view(2 * kPage, 128, got);
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(got, 128u);
  EXPECT_EQ(0, std::memcmp(q, data.data() + 128, 128));
  m.fill32(2 * kPage - 128, 0x11111111u, 4);  // later writes show through
  EXPECT_EQ(p[0], 0x11);
  EXPECT_EQ(m.view(4 * kPage - 8, 16, got), nullptr);  // beyond the memory
  EXPECT_EQ(got, 0u);
  EXPECT_EQ(m.view(0, 0, got), nullptr);
}

// A destroyed memory's pages are kept for the next: they must read as zeros wherever the new
// memory has not written, whichever write (write, fill32, copy) first touches them, also when
// writers race for a kept page.
TEST(SparseMemory, KeptPagesReadAsZerosWhereNotWritten) {
  constexpr std::uint64_t kPages = 8;
  {
    SparseMemory dirty(kPages * kPage);
    dirty.fill32(0, 0xA5A5A5A5u, kPages * kPage);
  }
  EXPECT_GE(SparseMemory::pooled_pages(), kPages);
  SparseMemory m(kPages * kPage);
  const auto data = bytes(4096, 3);
  m.write(kPage / 2, data.data(), data.size());                 // page 0: a write in its middle
  m.fill32(kPage + 100, 0x01020304u, 1000);                     // page 1: a fill
  m.copy(2 * kPage + 64, kPage / 2, data.size());               // page 2: a copy
  constexpr int kThreads = 4;                                   // pages 3..7: racing writers
  constexpr std::size_t kSlice = kPage / kThreads;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&m, &data, t] {
      for (std::uint64_t page = 3; page < kPages; ++page) m.write(page * kPage + t * kSlice, data.data(), data.size());
    });
  }
  for (auto& th : threads) th.join();

  std::vector<std::uint8_t> expected(kPages * kPage, 0);
  std::memcpy(expected.data() + kPage / 2, data.data(), data.size());
  for (std::size_t i = 0; i < 1000; ++i) expected[kPage + 100 + i] = static_cast<std::uint8_t>(0x01020304u >> (8 * (i % 4)));
  std::memcpy(expected.data() + 2 * kPage + 64, data.data(), data.size());
  for (std::uint64_t page = 3; page < kPages; ++page) {
    for (int t = 0; t < kThreads; ++t) std::memcpy(expected.data() + page * kPage + t * kSlice, data.data(), data.size());
  }
  std::vector<std::uint8_t> out(kPages * kPage, 0xEE);
  m.read(0, out.data(), out.size());
  for (std::size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], expected[i]) << "byte " << i;

  SparseMemory::release_pooled_pages();
  EXPECT_EQ(SparseMemory::pooled_pages(), 0u);
}

}  // namespace
