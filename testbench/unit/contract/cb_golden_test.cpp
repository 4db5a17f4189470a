// Golden-byte tests for control blocks: every expected byte below was computed by hand from the
// documented layout (CTRL at 0: format 7:0, tag 31:8, barrier 32, interrupt 33; RSVD at 8; DMI at 16;
// DMO at 32; CMPT at 48; XLAT entry i at 64 + 8*i), never by calling encode(). Each test checks the
// encoder against the bytes and the decoder against the structure.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <vector>

#include "spyre_dma/hw/contract.hpp"

namespace hw = spyre_dma::hw;

namespace {

using Cb = std::array<std::uint8_t, 128>;

struct Piece {
  std::size_t offset;
  std::vector<std::uint8_t> bytes;
};

// A 128-byte image that is zero except for the pieces given.
Cb golden(std::initializer_list<Piece> pieces) {
  Cb b{};
  for (const Piece& p : pieces) {
    for (std::size_t i = 0; i < p.bytes.size(); ++i) b.at(p.offset + i) = p.bytes[i];
  }
  return b;
}

::testing::AssertionResult same_bytes(const std::uint8_t* got, const std::uint8_t* want,
                                      std::size_t n) {
  std::string diffs;
  for (std::size_t i = 0; i < n; ++i) {
    if (got[i] != want[i]) {
      char line[64];
      std::snprintf(line, sizeof line, "\n  offset %3zu: got 0x%02X, want 0x%02X", i, got[i], want[i]);
      diffs += line;
    }
  }
  if (diffs.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "bytes differ:" << diffs;
}

void expect_decodes_to(const Cb& bytes, const hw::ControlBlock& want, hw::Pipeline pipeline) {
  const hw::CbDecodeResult r = hw::decode_cb(bytes.data());
  ASSERT_FALSE(r.error.has_value()) << "field " << hw::to_string(r.error->field) << " value 0x"
                                    << std::hex << r.error->value;
  EXPECT_TRUE(r.cb == want);
  EXPECT_EQ(r.pipeline, pipeline);
  EXPECT_FALSE(hw::validate(want).has_value());
}

// H2D immediate: tag 0x123, 2048 flits to segment 2 offset 0x1234 from IOVA flit 0x1234567,
// XLAT entry 2 read-write, base flit 0x2345678, 2^24 flits.
hw::ControlBlock h2d_cb() {
  hw::ControlBlock cb;
  cb.tag = 0x123;
  cb.dmi.type = hw::DmaType::kImmediate;
  cb.dmi.device = {2, 0x1234};
  cb.dmi.length_flits = 0x800;
  cb.dmi.host_iova_flits = 0x1234567;
  cb.xlat[2] = {hw::XlatMode::kReadWrite, 0x2345678, 0x1000000};
  return cb;
}
const Cb kH2d = golden({
    {0, {0x5C, 0x23, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00}},
    {16, {0x01, 0x00, 0x08, 0x00, 0x34, 0x12, 0x00, 0x10}},
    {24, {0x67, 0x45, 0x23, 0x01, 0x00, 0x00, 0x00, 0x00}},
    {80, {0x02, 0x00, 0x00, 0x04, 0x9E, 0x15, 0x8D, 0x00}},
});

// D2H immediate with interrupt: tag 0x7BCD, one flit of which 100 bytes move, from the last flit of
// segment 7 to the highest IOVA flit; XLAT entry 7 read-only with the largest base and length.
hw::ControlBlock d2h_cb() {
  hw::ControlBlock cb;
  cb.tag = 0x7BCD;
  cb.interrupt = true;
  cb.dmo.type = hw::DmaType::kImmediate;
  cb.dmo.device = {7, (1u << 27) - 1};
  cb.dmo.length_flits = 1;
  cb.dmo.last_flit_bytes = 100;
  cb.dmo.host_iova_flits = (1ull << 57) - 1;
  cb.xlat[7] = {hw::XlatMode::kReadOnly, (1ull << 34) - 1, 1u << 27};
  return cb;
}
const Cb kD2h = golden({
    {0, {0x5C, 0xCD, 0x7B, 0x00, 0x02, 0x00, 0x00, 0x00}},
    {32, {0x01, 0x01, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0x3F}},
    {40, {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xC9}},
    {120, {0x01, 0x00, 0x00, 0xE0, 0xFF, 0xFF, 0xFF, 0xFF}},
});

// Fill with barrier at the largest tag: 2^24-1 flits at segment 0 offset 0 with 0xDEADBEEF, one
// byte of the last flit; XLAT entry 0 read-write, base flit 0x10, 2^24-1 flits.
hw::ControlBlock fill_cb() {
  hw::ControlBlock cb;
  cb.tag = 32768;
  cb.barrier = true;
  cb.dmi.type = hw::DmaType::kMemoryFill;
  cb.dmi.device = {0, 0};
  cb.dmi.length_flits = 0xFFFFFF;
  cb.dmi.last_flit_bytes = 1;
  cb.dmi.fill_pattern = 0xDEADBEEF;
  cb.xlat[0] = {hw::XlatMode::kReadWrite, 0x10, 0xFFFFFF};
  return cb;
}
const Cb kFill = golden({
    {0, {0x5C, 0x00, 0x80, 0x00, 0x01, 0x00, 0x00, 0x00}},
    {16, {0x02, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00}},
    {24, {0xEF, 0xBE, 0xAD, 0xDE, 0x00, 0x00, 0x00, 0x02}},
    {64, {0xFE, 0xFF, 0xFF, 0x03, 0x04, 0x00, 0x00, 0x00}},
});

// Device copy: tag 0x42, 16 flits (127 bytes of the last) from segment 5 offset 0x2000 to segment
// 3 offset 0x100; XLAT entry 3 read-write (base 0x30000, 0x1000 flits), entry 5 read-only (base
// 0x50000, 0x4000 flits).
hw::ControlBlock copy_cb() {
  hw::ControlBlock cb;
  cb.tag = 0x42;
  cb.dmi.type = hw::DmaType::kDeviceCopy;
  cb.dmi.device = {3, 0x100};
  cb.dmi.length_flits = 0x10;
  cb.dmi.last_flit_bytes = 127;
  cb.dmi.source = {5, 0x2000};
  cb.xlat[3] = {hw::XlatMode::kReadWrite, 0x30000, 0x1000};
  cb.xlat[5] = {hw::XlatMode::kReadOnly, 0x50000, 0x4000};
  return cb;
}
const Cb kCopy = golden({
    {0, {0x5C, 0x42, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}},
    {16, {0x03, 0x10, 0x00, 0x00, 0x00, 0x01, 0x00, 0x18}},
    {24, {0x00, 0x20, 0x00, 0x28, 0x00, 0x00, 0x00, 0xFE}},
    {88, {0x02, 0x40, 0x00, 0x00, 0x00, 0xC0, 0x00, 0x00}},
    {104, {0x01, 0x00, 0x01, 0x00, 0x00, 0x40, 0x01, 0x00}},
});

// Compute timed with barrier and interrupt: tag 0x7654, 0x456789ABCDEF ns (47 bits), no XLAT.
hw::ControlBlock compute_cb() {
  hw::ControlBlock cb;
  cb.tag = 0x7654;
  cb.barrier = true;
  cb.interrupt = true;
  cb.cmpt.type = hw::ComputeType::kTimed;
  cb.cmpt.duration_ns = 0x456789ABCDEFull;
  return cb;
}
const Cb kCompute = golden({
    {0, {0x5C, 0x54, 0x76, 0x00, 0x03, 0x00, 0x00, 0x00}},
    {48, {0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}},
    {56, {0xEF, 0xCD, 0xAB, 0x89, 0x67, 0x45, 0x00, 0x00}},
});

}  // namespace

TEST(CbGolden, H2dImmediate) {
  const hw::CbBytes got = hw::encode(h2d_cb());
  EXPECT_TRUE(same_bytes(got.data(), kH2d.data(), 128));
  expect_decodes_to(kH2d, h2d_cb(), hw::Pipeline::kDmai);
}

TEST(CbGolden, D2hImmediateWithInterrupt) {
  const hw::CbBytes got = hw::encode(d2h_cb());
  EXPECT_TRUE(same_bytes(got.data(), kD2h.data(), 128));
  expect_decodes_to(kD2h, d2h_cb(), hw::Pipeline::kDmao);
}

TEST(CbGolden, FillWithPatternBarrierAndMaxTag) {
  const hw::CbBytes got = hw::encode(fill_cb());
  EXPECT_TRUE(same_bytes(got.data(), kFill.data(), 128));
  expect_decodes_to(kFill, fill_cb(), hw::Pipeline::kDmai);
}

TEST(CbGolden, DeviceCopy) {
  const hw::CbBytes got = hw::encode(copy_cb());
  EXPECT_TRUE(same_bytes(got.data(), kCopy.data(), 128));
  expect_decodes_to(kCopy, copy_cb(), hw::Pipeline::kDmai);
}

TEST(CbGolden, ComputeTimedWithBarrierAndInterrupt) {
  const hw::CbBytes got = hw::encode(compute_cb());
  EXPECT_TRUE(same_bytes(got.data(), kCompute.data(), 128));
  expect_decodes_to(kCompute, compute_cb(), hw::Pipeline::kCompute);
}

TEST(CbGolden, CtrlBitPositions) {
  // Tag 1, no flags: only bit 8 of the tag field.
  hw::ControlBlock cb = h2d_cb();
  cb.tag = 1;
  hw::CbBytes b = hw::encode(cb);
  EXPECT_EQ(b[0], 0x5C);
  EXPECT_EQ(b[1], 0x01);
  EXPECT_EQ(b[2], 0x00);
  EXPECT_EQ(b[3], 0x00);
  EXPECT_EQ(b[4], 0x00);
  // Tag 32768 = 0x8000: bits 31:8 hold 0x008000, so byte 2 is 0x80.
  cb.tag = 32768;
  b = hw::encode(cb);
  EXPECT_EQ(b[1], 0x00);
  EXPECT_EQ(b[2], 0x80);
  EXPECT_EQ(b[3], 0x00);
  // Barrier is bit 32 (byte 4 bit 0); interrupt is bit 33 (byte 4 bit 1); nothing above.
  cb.barrier = true;
  b = hw::encode(cb);
  EXPECT_EQ(b[4], 0x01);
  cb.barrier = false;
  cb.interrupt = true;
  b = hw::encode(cb);
  EXPECT_EQ(b[4], 0x02);
  for (int i = 5; i < 16; ++i) EXPECT_EQ(b[i], 0x00) << "byte " << i;
}

TEST(CbGolden, UnusedSectionsAndReservedWordAreZero) {
  const hw::CbBytes b = hw::encode(h2d_cb());
  for (int i = 8; i < 16; ++i) EXPECT_EQ(b[i], 0) << "RSVD byte " << i;
  for (int i = 32; i < 64; ++i) EXPECT_EQ(b[i], 0) << "DMO/CMPT byte " << i;
  for (int i = 64; i < 128; ++i) {
    if (i >= 80 && i < 88) continue;  // entry 2
    EXPECT_EQ(b[i], 0) << "XLAT byte " << i;
  }
}

TEST(CbGolden, SkipSectionWithStaleFieldsEncodesAsZero) {
  hw::ControlBlock cb = h2d_cb();
  cb.dmo.type = hw::DmaType::kSkip;
  cb.dmo.length_flits = 77;
  cb.dmo.device = {3, 99};
  cb.dmo.host_iova_flits = 1234;
  cb.dmo.last_flit_bytes = 5;
  cb.cmpt.type = hw::ComputeType::kSkip;
  cb.cmpt.duration_ns = 1000;
  cb.xlat[6] = {hw::XlatMode::kInvalid, 0x1234, 0x10};
  const hw::CbBytes b = hw::encode(cb);
  EXPECT_TRUE(same_bytes(b.data(), kH2d.data(), 128));
  // Such a CB is exactly as valid as the bytes it encodes to.
  EXPECT_FALSE(hw::validate(cb).has_value());
}

TEST(CbGolden, XlatEntriesAtTheirOffsets) {
  // Eight distinct entries; entry i at 64 + 8*i, word = mode | length << 2 | base << 30.
  hw::ControlBlock cb = h2d_cb();
  cb.xlat[0] = {hw::XlatMode::kReadOnly, 0x1, 0x1};                         // 0x0000_0000_4000_0005
  cb.xlat[1] = {hw::XlatMode::kReadWrite, 0x0, 0x8000000};                  // 0x0000_0000_2000_0002
  cb.xlat[2] = {hw::XlatMode::kReadWrite, 0x2345678, 0x1000000};            // as kH2d
  cb.xlat[3] = {hw::XlatMode::kInvalid, 0, 0};                              // zero
  cb.xlat[4] = {hw::XlatMode::kReadOnly, 0x3, 0x3FFFFFF};                   // 0x0000_0000_CFFF_FFFD
  cb.xlat[5] = {hw::XlatMode::kReadWrite, 0x200000000ull, 0x80};            // 0x8000_0000_0000_0202
  cb.xlat[6] = {hw::XlatMode::kReadOnly, 0x3FFFFFFFFull, 0x8000000};        // 0xFFFF_FFFF_E000_0001
  cb.xlat[7] = {hw::XlatMode::kReadWrite, 0x4, 0x2};                        // 0x0000_0001_0000_000A
  const Cb want = golden({
      {0, {0x5C, 0x23, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00}},
      {16, {0x01, 0x00, 0x08, 0x00, 0x34, 0x12, 0x00, 0x10}},
      {24, {0x67, 0x45, 0x23, 0x01, 0x00, 0x00, 0x00, 0x00}},
      {64, {0x05, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00, 0x00}},
      {72, {0x02, 0x00, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00}},
      {80, {0x02, 0x00, 0x00, 0x04, 0x9E, 0x15, 0x8D, 0x00}},
      {96, {0xFD, 0xFF, 0xFF, 0xCF, 0x00, 0x00, 0x00, 0x00}},
      {104, {0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80}},
      {112, {0x01, 0x00, 0x00, 0xE0, 0xFF, 0xFF, 0xFF, 0xFF}},
      {120, {0x0A, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00}},
  });
  const hw::CbBytes b = hw::encode(cb);
  EXPECT_TRUE(same_bytes(b.data(), want.data(), 128));
  expect_decodes_to(want, cb, hw::Pipeline::kDmai);
}

TEST(CbGolden, DecoderIgnoresNothingItAccepts) {
  // Every golden image re-encodes to itself after decoding (the encoding is canonical).
  for (const Cb* img : {&kH2d, &kD2h, &kFill, &kCopy, &kCompute}) {
    const hw::CbDecodeResult r = hw::decode_cb(img->data());
    ASSERT_FALSE(r.error.has_value());
    const hw::CbBytes again = hw::encode(r.cb);
    EXPECT_TRUE(same_bytes(again.data(), img->data(), 128));
  }
}
