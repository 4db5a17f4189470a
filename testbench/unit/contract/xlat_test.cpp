// XLAT translation (entry i translates segment i for this CB) and XLAT entry encoding.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "spyre_dma/hw/contract.hpp"

namespace hw = spyre_dma::hw;

namespace {

hw::ControlBlock table() {
  hw::ControlBlock cb;
  cb.tag = 1;
  cb.xlat[1] = {hw::XlatMode::kReadWrite, 0x1000, 0x100};
  cb.xlat[2] = {hw::XlatMode::kReadOnly, 0x2000, 0x10};
  cb.xlat[3] = {hw::XlatMode::kInvalid, 0x3000, 0x100};  // stale fields: still invalid
  cb.xlat[6] = {hw::XlatMode::kReadWrite, (1ull << 34) - 1, 1u << 27};
  return cb;
}

void expect_ok(const hw::XlatResult& r, std::uint64_t phys) {
  EXPECT_EQ(r.error, hw::ErrorKind::kNone);
  EXPECT_EQ(r.phys_flits, phys);
}
void expect_fault(const hw::XlatResult& r) { EXPECT_EQ(r.error, hw::ErrorKind::kXlatFault); }

}  // namespace

TEST(Translate, ReadWriteEntryWrite) {
  expect_ok(hw::translate(table(), {1, 0x10}, 0x20, true), 0x1010);
  expect_ok(hw::translate(table(), {1, 0}, 1, true), 0x1000);
}

TEST(Translate, ReadWriteEntryRead) {
  expect_ok(hw::translate(table(), {1, 0x80}, 0x80, false), 0x1080);
}

TEST(Translate, ReadOnlyEntryRead) {
  expect_ok(hw::translate(table(), {2, 0x4}, 0x8, false), 0x2004);
}

TEST(Translate, ReadOnlyEntryWriteFaults) {
  expect_fault(hw::translate(table(), {2, 0x4}, 0x8, true));
  expect_fault(hw::translate(table(), {2, 0}, 1, true));
}

TEST(Translate, InvalidEntryFaults) {
  expect_fault(hw::translate(table(), {3, 0}, 1, false));
  expect_fault(hw::translate(table(), {3, 0}, 1, true));
  expect_fault(hw::translate(table(), {0, 0}, 1, false));
  expect_fault(hw::translate(table(), {7, 0}, 1, false));
}

TEST(Translate, ExactFitOk) {
  expect_ok(hw::translate(table(), {1, 0}, 0x100, true), 0x1000);
  expect_ok(hw::translate(table(), {1, 0xF0}, 0x10, true), 0x10F0);
  expect_ok(hw::translate(table(), {2, 0}, 0x10, false), 0x2000);
  expect_ok(hw::translate(table(), {2, 0xF}, 1, false), 0x200F);
}

TEST(Translate, BeyondEntryLengthFaults) {
  expect_fault(hw::translate(table(), {1, 0}, 0x101, true));
  expect_fault(hw::translate(table(), {1, 0xF0}, 0x11, false));
  expect_fault(hw::translate(table(), {1, 0x100}, 1, false));
  expect_fault(hw::translate(table(), {2, 0x10}, 1, false));
  expect_fault(hw::translate(table(), {2, 1}, 0x10, false));
}

TEST(Translate, HugeLengthDoesNotWrap) {
  // offset + length must be computed without wrapping around 2^64.
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  expect_fault(hw::translate(table(), {1, 1}, kMax, false));
  expect_fault(hw::translate(table(), {1, 0x10}, kMax - 0xF, false));
  expect_fault(hw::translate(table(), {6, 0}, kMax, true));
}

TEST(Translate, SegmentOutOfRangeFaults) {
  expect_fault(hw::translate(table(), {8, 0}, 1, false));
  expect_fault(hw::translate(table(), {255, 0}, 1, false));
}

TEST(Translate, FullSegmentAtLargestBase) {
  expect_ok(hw::translate(table(), {6, 0}, 1u << 27, true), (1ull << 34) - 1);
  expect_ok(hw::translate(table(), {6, (1u << 27) - 1}, 1, true), (1ull << 34) - 1 + (1u << 27) - 1);
  expect_fault(hw::translate(table(), {6, (1u << 27) - 1}, 2, true));
}

TEST(Translate, EachSegmentUsesItsOwnEntry) {
  hw::ControlBlock cb;
  for (unsigned i = 0; i < hw::kNumXlatEntries; ++i) {
    cb.xlat[i] = {hw::XlatMode::kReadWrite, 0x100000ull * (i + 1), 0x1000};
  }
  for (std::uint8_t s = 0; s < 8; ++s) {
    expect_ok(hw::translate(cb, {s, 0x20}, 0x10, true), 0x100000ull * (s + 1) + 0x20);
  }
}

TEST(XlatEncoding, EntryWordLayout) {
  // bits 1:0 mode, 29:2 length, 63:30 base; entry i at byte 64 + 8*i.
  hw::ControlBlock cb;
  cb.tag = 1;
  cb.cmpt.type = hw::ComputeType::kTimed;
  for (unsigned i = 0; i < 8; ++i) {
    cb.xlat[i] = {i % 2 ? hw::XlatMode::kReadOnly : hw::XlatMode::kReadWrite,
                  0x123456789ull + i, 0x7654321u - i};
  }
  const hw::CbBytes b = hw::encode(cb);
  for (unsigned i = 0; i < 8; ++i) {
    std::uint64_t w = 0;
    for (int k = 7; k >= 0; --k) w = (w << 8) | b[64 + 8 * i + k];
    const std::uint64_t mode = i % 2 ? 1 : 2;
    EXPECT_EQ(w & 3, mode) << i;
    EXPECT_EQ((w >> 2) & ((1ull << 28) - 1), 0x7654321u - i) << i;
    EXPECT_EQ(w >> 30, 0x123456789ull + i) << i;
    EXPECT_EQ(w, mode | std::uint64_t(0x7654321u - i) << 2 | (0x123456789ull + i) << 30) << i;
  }
}

TEST(XlatEncoding, InvalidEntryEncodesAsZero) {
  hw::ControlBlock cb;
  cb.tag = 1;
  cb.cmpt.type = hw::ComputeType::kTimed;
  cb.xlat[5] = {hw::XlatMode::kInvalid, 0xFFFF, 0xFFFF};
  const hw::CbBytes b = hw::encode(cb);
  for (int i = 64; i < 128; ++i) EXPECT_EQ(b[i], 0) << i;
}
