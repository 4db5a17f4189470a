// Rejected control blocks: every CbField the decoder can report, with the expected field and raw
// value, starting from hand-written valid images. validate() on structured CBs is in
// cb_validate_test.cpp.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <initializer_list>

#include "spyre_dma/hw/contract.hpp"

namespace hw = spyre_dma::hw;

namespace {

using Cb = std::array<std::uint8_t, 128>;

// The test's own little-endian accessors (independent of the contract's helpers).
std::uint64_t get64(const Cb& b, std::size_t off) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | b.at(off + i);
  return v;
}
void put64(Cb& b, std::size_t off, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) b.at(off + i) = static_cast<std::uint8_t>(v >> (8 * i));
}

constexpr std::uint64_t kSeg = 1ull << 27;
std::uint64_t va(std::uint64_t seg, std::uint64_t off) { return seg << 27 | off; }
// DMA word 0: type 3:0, length 31:8, device VA 61:32.
std::uint64_t dma_w0(std::uint64_t type, std::uint64_t length, std::uint64_t dva) {
  return type | length << 8 | dva << 32;
}
std::uint64_t ctrl(std::uint64_t tag) { return 0x5C | tag << 8; }

// H2D immediate: tag 0x123, 2048 flits to (2, 0x1234) from IOVA flit 0x1234567; XLAT 2 RW.
Cb h2d() {
  Cb b{};
  put64(b, 0, ctrl(0x123));
  put64(b, 16, dma_w0(1, 0x800, va(2, 0x1234)));
  put64(b, 24, 0x1234567);
  put64(b, 80, 2 | 0x1000000ull << 2 | 0x2345678ull << 30);
  return b;
}
// D2H immediate: tag 5, 4 flits from (6, 0x10) to IOVA flit 0x4000; XLAT 6 RO.
Cb d2h() {
  Cb b{};
  put64(b, 0, ctrl(5));
  put64(b, 32, dma_w0(1, 4, va(6, 0x10)));
  put64(b, 40, 0x4000);
  put64(b, 112, 1 | 0x100ull << 2 | 0x40ull << 30);
  return b;
}
// Fill: tag 6, 16 flits at (0, 0) with 0xA5A5A5A5.
Cb fill() {
  Cb b{};
  put64(b, 0, ctrl(6));
  put64(b, 16, dma_w0(2, 16, va(0, 0)));
  put64(b, 24, 0xA5A5A5A5);
  return b;
}
// Device copy: tag 7, 16 flits from (5, 0x2000) to (3, 0x100).
Cb copy() {
  Cb b{};
  put64(b, 0, ctrl(7));
  put64(b, 16, dma_w0(3, 16, va(3, 0x100)));
  put64(b, 24, va(5, 0x2000));
  return b;
}
// Compute timed: tag 8, 1000 ns.
Cb compute() {
  Cb b{};
  put64(b, 0, ctrl(8));
  put64(b, 48, 1);
  put64(b, 56, 1000);
  return b;
}

::testing::AssertionResult accepted(const Cb& b) {
  const hw::CbDecodeResult r = hw::decode_cb(b.data());
  if (!r.error) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "rejected: " << hw::to_string(r.error->field) << " = 0x"
                                       << std::hex << r.error->value;
}

::testing::AssertionResult rejected(const Cb& b, hw::CbField field, std::uint64_t value) {
  const hw::CbDecodeResult r = hw::decode_cb(b.data());
  if (!r.error) return ::testing::AssertionFailure() << "accepted";
  if (r.error->field != field || r.error->value != value) {
    return ::testing::AssertionFailure()
           << "rejected as " << hw::to_string(r.error->field) << " = 0x" << std::hex
           << r.error->value << ", want " << hw::to_string(field) << " = 0x" << value;
  }
  return ::testing::AssertionSuccess();
}

}  // namespace

TEST(CbReject, BaseImagesAreValid) {
  EXPECT_TRUE(accepted(h2d()));
  EXPECT_TRUE(accepted(d2h()));
  EXPECT_TRUE(accepted(fill()));
  EXPECT_TRUE(accepted(copy()));
  EXPECT_TRUE(accepted(compute()));
  EXPECT_EQ(hw::decode_cb(d2h().data()).pipeline, hw::Pipeline::kDmao);
  EXPECT_EQ(hw::decode_cb(compute().data()).pipeline, hw::Pipeline::kCompute);
  EXPECT_EQ(hw::decode_cb(copy().data()).pipeline, hw::Pipeline::kDmai);
}

TEST(CbReject, FormatByte) {
  for (std::uint8_t f : {0x00, 0x5D, 0xA5, 0xDC, 0xFF}) {
    Cb b = h2d();
    b[0] = f;
    EXPECT_TRUE(rejected(b, hw::CbField::kCtrlFormat, f)) << int(f);
  }
  // An all-zero slot (a ring slot never written) is a format error.
  EXPECT_TRUE(rejected(Cb{}, hw::CbField::kCtrlFormat, 0));
}

TEST(CbReject, Tag) {
  for (std::uint64_t tag : {0ull, 32769ull, 0x10000ull, 0xFFFFFFull}) {
    Cb b = h2d();
    put64(b, 0, ctrl(tag));
    EXPECT_TRUE(rejected(b, hw::CbField::kCtrlTag, tag)) << tag;
  }
}

TEST(CbReject, CtrlReservedBits) {
  for (unsigned bit : {34u, 35u, 48u, 63u}) {
    Cb b = h2d();
    const std::uint64_t w = ctrl(0x123) | 1ull << bit;
    put64(b, 0, w);
    EXPECT_TRUE(rejected(b, hw::CbField::kCtrlReserved, w)) << bit;
  }
  // Bits 32 and 33 are barrier and interrupt, not reserved.
  Cb b = h2d();
  put64(b, 0, ctrl(0x123) | 3ull << 32);
  EXPECT_TRUE(accepted(b));
}

TEST(CbReject, ReservedWord) {
  for (std::uint64_t w : {1ull, 0x8000000000000000ull, 0x5Cull}) {
    Cb b = h2d();
    put64(b, 8, w);
    EXPECT_TRUE(rejected(b, hw::CbField::kReservedWord, w)) << w;
  }
}

TEST(CbReject, UnknownDmiType) {
  for (std::uint64_t t = 4; t < 16; ++t) {
    Cb b = h2d();
    put64(b, 16, (get64(b, 16) & ~0xFull) | t);
    EXPECT_TRUE(rejected(b, hw::CbField::kDmiType, t)) << t;
  }
}

TEST(CbReject, UnknownOrDmiOnlyDmoType) {
  // MEMORY_FILL (2) and DEVICE_COPY (3) belong to DMI only.
  for (std::uint64_t t = 2; t < 16; ++t) {
    Cb b = d2h();
    put64(b, 32, (get64(b, 32) & ~0xFull) | t);
    EXPECT_TRUE(rejected(b, hw::CbField::kDmoType, t)) << t;
  }
}

TEST(CbReject, UnknownCmptType) {
  for (std::uint64_t t = 2; t < 16; ++t) {
    Cb b = compute();
    put64(b, 48, t);
    EXPECT_TRUE(rejected(b, hw::CbField::kCmptType, t)) << t;
  }
}

TEST(CbReject, DmaWord0ReservedBits) {
  for (unsigned bit : {4u, 7u, 62u, 63u}) {
    Cb b = h2d();
    const std::uint64_t w0 = get64(b, 16) | 1ull << bit;
    put64(b, 16, w0);
    EXPECT_TRUE(rejected(b, hw::CbField::kDmiReserved, w0)) << bit;
    Cb o = d2h();
    const std::uint64_t o0 = get64(o, 32) | 1ull << bit;
    put64(o, 32, o0);
    EXPECT_TRUE(rejected(o, hw::CbField::kDmoReserved, o0)) << bit;
  }
}

TEST(CbReject, DmaWord1ReservedBits) {
  // Fill: bits 56:32 are reserved.
  for (unsigned bit : {32u, 40u, 56u}) {
    Cb b = fill();
    const std::uint64_t w1 = get64(b, 24) | 1ull << bit;
    put64(b, 24, w1);
    EXPECT_TRUE(rejected(b, hw::CbField::kDmiReserved, w1)) << bit;
  }
  // Device copy: bits 56:30 are reserved.
  for (unsigned bit : {30u, 31u, 56u}) {
    Cb b = copy();
    const std::uint64_t w1 = get64(b, 24) | 1ull << bit;
    put64(b, 24, w1);
    EXPECT_TRUE(rejected(b, hw::CbField::kDmiReserved, w1)) << bit;
  }
  // Immediate uses every bit of word 1 (IOVA 56:0, last-flit 63:57).
  Cb b = h2d();
  put64(b, 24, ~0ull);
  EXPECT_TRUE(accepted(b));
}

TEST(CbReject, CmptReservedBits) {
  for (unsigned bit : {4u, 8u, 63u}) {
    Cb b = compute();
    const std::uint64_t w0 = 1 | 1ull << bit;
    put64(b, 48, w0);
    EXPECT_TRUE(rejected(b, hw::CbField::kCmptReserved, w0)) << bit;
  }
}

TEST(CbReject, NonzeroSkipSection) {
  {  // DMO SKIP with word 0 bits (a length but type 0): the value is word 0.
    Cb b = h2d();
    put64(b, 32, 0x100);
    EXPECT_TRUE(rejected(b, hw::CbField::kDmoReserved, 0x100));
  }
  {  // DMO SKIP with only word 1 bits: the value is word 1.
    Cb b = h2d();
    put64(b, 40, 5);
    EXPECT_TRUE(rejected(b, hw::CbField::kDmoReserved, 5));
  }
  {  // Both words nonzero: the value is word 0.
    Cb b = h2d();
    put64(b, 32, 0x200);
    put64(b, 40, 9);
    EXPECT_TRUE(rejected(b, hw::CbField::kDmoReserved, 0x200));
  }
  {  // DMI SKIP with a last-flit count.
    Cb b = d2h();
    put64(b, 24, 1ull << 57);
    EXPECT_TRUE(rejected(b, hw::CbField::kDmiReserved, 1ull << 57));
  }
  {  // CMPT SKIP with a duration.
    Cb b = h2d();
    put64(b, 56, 42);
    EXPECT_TRUE(rejected(b, hw::CbField::kCmptReserved, 42));
  }
  {  // CMPT SKIP with reserved type-word bits.
    Cb b = h2d();
    put64(b, 48, 0x10);
    EXPECT_TRUE(rejected(b, hw::CbField::kCmptReserved, 0x10));
  }
  {  // A TIMED duration beyond the longest a CB may carry; the longest itself decodes.
    Cb b = compute();
    put64(b, 56, hw::kMaxComputeNs + 1);
    EXPECT_TRUE(rejected(b, hw::CbField::kCmptDuration, hw::kMaxComputeNs + 1));
    put64(b, 56, ~0ull);
    EXPECT_TRUE(rejected(b, hw::CbField::kCmptDuration, ~0ull));
    put64(b, 56, hw::kMaxComputeNs);
    EXPECT_FALSE(hw::decode_cb(b.data()).error.has_value());
  }
}

TEST(CbReject, LengthZero) {
  {
    Cb b = h2d();
    put64(b, 16, dma_w0(1, 0, va(2, 0x1234)));
    EXPECT_TRUE(rejected(b, hw::CbField::kDmiLength, 0));
  }
  {
    Cb b = fill();
    put64(b, 16, dma_w0(2, 0, 0));
    EXPECT_TRUE(rejected(b, hw::CbField::kDmiLength, 0));
  }
  {
    Cb b = d2h();
    put64(b, 32, dma_w0(1, 0, va(6, 0x10)));
    EXPECT_TRUE(rejected(b, hw::CbField::kDmoLength, 0));
  }
}

TEST(CbReject, RangeCrossesSegment) {
  {  // Offset 2^27 - 1, length 2: one flit past the segment.
    Cb b = h2d();
    put64(b, 16, dma_w0(1, 2, va(2, kSeg - 1)));
    EXPECT_TRUE(rejected(b, hw::CbField::kDmiDeviceVa, va(2, kSeg - 1)));
    put64(b, 16, dma_w0(1, 1, va(2, kSeg - 1)));  // exact fit
    EXPECT_TRUE(accepted(b));
  }
  {  // Largest length, one flit too far.
    Cb b = h2d();
    const std::uint64_t max = (1u << 24) - 1;
    put64(b, 16, dma_w0(1, max, va(7, kSeg - max + 1)));
    EXPECT_TRUE(rejected(b, hw::CbField::kDmiDeviceVa, va(7, kSeg - max + 1)));
    put64(b, 16, dma_w0(1, max, va(7, kSeg - max)));
    EXPECT_TRUE(accepted(b));
  }
  {
    Cb b = d2h();
    put64(b, 32, dma_w0(1, 4, va(6, kSeg - 3)));
    EXPECT_TRUE(rejected(b, hw::CbField::kDmoDeviceVa, va(6, kSeg - 3)));
  }
  {  // Device copy: the source range crosses its segment.
    Cb b = copy();
    put64(b, 24, va(5, kSeg - 15));
    EXPECT_TRUE(rejected(b, hw::CbField::kDmiSource, va(5, kSeg - 15)));
    put64(b, 24, va(5, kSeg - 16));
    EXPECT_TRUE(accepted(b));
  }
}

TEST(CbReject, SectionCount) {
  {  // No section describes work.
    Cb b = h2d();
    put64(b, 16, 0);
    put64(b, 24, 0);
    EXPECT_TRUE(rejected(b, hw::CbField::kSections, 0));
  }
  Cb both = h2d();
  const Cb o = d2h();
  put64(both, 32, get64(o, 32));
  put64(both, 40, get64(o, 40));
  EXPECT_TRUE(rejected(both, hw::CbField::kSections, 2));
  Cb dmi_cmpt = h2d();
  put64(dmi_cmpt, 48, 1);
  EXPECT_TRUE(rejected(dmi_cmpt, hw::CbField::kSections, 2));
  Cb all = both;
  put64(all, 48, 1);
  put64(all, 56, 7);
  EXPECT_TRUE(rejected(all, hw::CbField::kSections, 3));
}

TEST(CbReject, XlatMode3) {
  for (unsigned i = 0; i < 8; ++i) {
    Cb b = h2d();
    put64(b, 64 + 8 * i, 3 | 0x10ull << 2);
    EXPECT_TRUE(rejected(b, hw::CbField::kXlatMode, 3)) << "entry " << i;
  }
}

TEST(CbReject, XlatLengthBeyondSegment) {
  for (std::uint64_t len : std::initializer_list<std::uint64_t>{kSeg + 1, (1ull << 28) - 1}) {
    Cb b = h2d();
    put64(b, 80, 2 | len << 2 | 0x2345678ull << 30);
    EXPECT_TRUE(rejected(b, hw::CbField::kXlatLength, len)) << len;
  }
  Cb b = h2d();
  put64(b, 80, 2 | kSeg << 2);  // exactly one segment
  EXPECT_TRUE(accepted(b));
}

TEST(CbReject, InvalidXlatEntryWithBits) {
  for (std::uint64_t w : {0x4ull, 1ull << 30, 1ull << 63, ~0ull << 2}) {
    Cb b = h2d();
    put64(b, 64 + 8 * 4, w);
    EXPECT_TRUE(rejected(b, hw::CbField::kXlatReserved, w)) << std::hex << w;
  }
}

TEST(CbReject, FirstOffendingFieldWins) {
  // Order: CTRL format, tag, CTRL reserved, RSVD word, DMI, DMO, CMPT, XLAT 0..7, section count.
  Cb b = h2d();
  put64(b, 0, 0x5D);  // bad format and tag 0
  EXPECT_TRUE(rejected(b, hw::CbField::kCtrlFormat, 0x5D));
  b = h2d();
  put64(b, 0, ctrl(0) | 1ull << 40);
  EXPECT_TRUE(rejected(b, hw::CbField::kCtrlTag, 0));
  b = h2d();
  put64(b, 0, ctrl(1) | 1ull << 40);
  put64(b, 8, 1);
  EXPECT_TRUE(rejected(b, hw::CbField::kCtrlReserved, ctrl(1) | 1ull << 40));
  b = h2d();
  put64(b, 8, 1);
  put64(b, 16, 0xF);
  EXPECT_TRUE(rejected(b, hw::CbField::kReservedWord, 1));
  b = h2d();
  put64(b, 16, 0xF);
  put64(b, 32, 0xF);
  EXPECT_TRUE(rejected(b, hw::CbField::kDmiType, 0xF));
  b = h2d();
  put64(b, 32, 0xF);
  put64(b, 48, 0xF);
  EXPECT_TRUE(rejected(b, hw::CbField::kDmoType, 0xF));
  b = h2d();
  put64(b, 48, 0xF);
  put64(b, 64, 3);
  EXPECT_TRUE(rejected(b, hw::CbField::kCmptType, 0xF));
  b = h2d();
  put64(b, 64, 3);          // entry 0: mode 3
  put64(b, 72, 4);          // entry 1: invalid with bits
  EXPECT_TRUE(rejected(b, hw::CbField::kXlatMode, 3));
  b = h2d();
  put64(b, 16, 0);
  put64(b, 24, 0);
  put64(b, 120, 4);  // entry 7 wrong and no work at all
  EXPECT_TRUE(rejected(b, hw::CbField::kXlatReserved, 4));
}
