// Response blocks: golden bytes computed by hand from the documented layout (word 0: tag 23:0,
// status 27:24, locator 31:28, phase 32, format 47:40; word 1: error kind 15:0, field 31:16;
// words 2..5: detail, start ns, end ns, bytes; words 6, 7 reserved), round trips, and every
// decode error.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "spyre_dma/hw/contract.hpp"

namespace hw = spyre_dma::hw;

namespace {

using Rb = std::array<std::uint8_t, 64>;

struct Piece {
  std::size_t offset;
  std::vector<std::uint8_t> bytes;
};
Rb golden(std::initializer_list<Piece> pieces) {
  Rb b{};
  for (const Piece& p : pieces) {
    for (std::size_t i = 0; i < p.bytes.size(); ++i) b.at(p.offset + i) = p.bytes[i];
  }
  return b;
}
std::uint64_t get64(const Rb& b, std::size_t off) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | b.at(off + i);
  return v;
}
void put64(Rb& b, std::size_t off, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) b.at(off + i) = static_cast<std::uint8_t>(v >> (8 * i));
}

void expect_bytes(const hw::RbBytes& got, const Rb& want) {
  for (std::size_t i = 0; i < 64; ++i) {
    EXPECT_EQ(int(got[i]), int(want[i])) << "offset " << i;
  }
}

hw::ResponseBlock good_rb() {
  hw::ResponseBlock rb;
  rb.tag = 0x123;
  rb.status = hw::RbStatus::kGood;
  rb.locator = hw::Pipeline::kDmai;
  rb.phase = true;
  rb.start_ns = 0x1000;
  rb.end_ns = 0x2000;
  rb.bytes = 0x40000;
  return rb;
}
const Rb kGood = golden({
    {0, {0x23, 0x01, 0x00, 0x10, 0x01, 0xA5, 0x00, 0x00}},
    {24, {0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}},
    {32, {0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}},
    {40, {0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00}},
});

// Malformed CB on DMAO at the largest tag, phase clear: DMO.type (11) with raw value 2.
hw::ResponseBlock malformed_rb() {
  hw::ResponseBlock rb;
  rb.tag = 32768;
  rb.status = hw::RbStatus::kError;
  rb.locator = hw::Pipeline::kDmao;
  rb.phase = false;
  rb.error = hw::ErrorKind::kMalformedCb;
  rb.field = hw::CbField::kDmoType;
  rb.detail = 2;
  return rb;
}
const Rb kMalformed = golden({
    {0, {0x00, 0x80, 0x00, 0x23, 0x00, 0xA5, 0x00, 0x00}},
    {8, {0x01, 0x00, 0x0B, 0x00, 0x00, 0x00, 0x00, 0x00}},
    {16, {0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}},
});

// IOMMU fault on DMAI with the faulting IOVA as detail.
hw::ResponseBlock iommu_rb() {
  hw::ResponseBlock rb;
  rb.tag = 7;
  rb.status = hw::RbStatus::kError;
  rb.locator = hw::Pipeline::kDmai;
  rb.phase = true;
  rb.error = hw::ErrorKind::kIommuFault;
  rb.detail = 0x00007F1234567880ull;
  return rb;
}
const Rb kIommu = golden({
    {0, {0x07, 0x00, 0x00, 0x13, 0x01, 0xA5, 0x00, 0x00}},
    {8, {0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}},
    {16, {0x80, 0x78, 0x56, 0x34, 0x12, 0x7F, 0x00, 0x00}},
});

// Aborted by reset on COMPUTE.
hw::ResponseBlock reset_rb() {
  hw::ResponseBlock rb;
  rb.tag = 1;
  rb.status = hw::RbStatus::kAbend;
  rb.locator = hw::Pipeline::kCompute;
  rb.error = hw::ErrorKind::kReset;
  return rb;
}
const Rb kReset = golden({
    {0, {0x01, 0x00, 0x00, 0x02, 0x00, 0xA5, 0x00, 0x00}},
    {8, {0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}},
});

void expect_decodes_to(const Rb& bytes, const hw::ResponseBlock& want) {
  const hw::RbDecodeResult r = hw::decode_rb(bytes.data());
  ASSERT_FALSE(r.error.has_value()) << *r.error;
  EXPECT_TRUE(r.rb == want);
}

}  // namespace

TEST(RbGolden, Good) {
  expect_bytes(hw::encode(good_rb()), kGood);
  expect_decodes_to(kGood, good_rb());
}

TEST(RbGolden, ErrorWithFieldAndDetail) {
  expect_bytes(hw::encode(malformed_rb()), kMalformed);
  expect_decodes_to(kMalformed, malformed_rb());
}

TEST(RbGolden, IommuFaultCarriesIova) {
  expect_bytes(hw::encode(iommu_rb()), kIommu);
  expect_decodes_to(kIommu, iommu_rb());
}

TEST(RbGolden, AbendByReset) {
  expect_bytes(hw::encode(reset_rb()), kReset);
  expect_decodes_to(kReset, reset_rb());
}

TEST(RbGolden, PhaseBitIsBit32) {
  hw::ResponseBlock rb = reset_rb();
  rb.phase = false;
  hw::RbBytes b = hw::encode(rb);
  EXPECT_EQ(b[4], 0x00);
  EXPECT_FALSE(hw::rb_phase(b.data()));
  rb.phase = true;
  b = hw::encode(rb);
  EXPECT_EQ(b[4], 0x01);
  EXPECT_TRUE(hw::rb_phase(b.data()));
  // rb_phase reads only bit 32: other bits of byte 4 and its neighbours do not matter.
  Rb raw{};
  raw[4] = 0xFE;
  raw[3] = 0xFF;
  raw[5] = 0xFF;
  EXPECT_FALSE(hw::rb_phase(raw.data()));
  raw[4] = 0x01;
  raw[3] = raw[5] = 0;
  EXPECT_TRUE(hw::rb_phase(raw.data()));
  // A zeroed slot reads as phase 0: the first lap's RBs carry phase 1.
  EXPECT_FALSE(hw::rb_phase(Rb{}.data()));
  EXPECT_TRUE(hw::expected_phase(0, 16));
}

TEST(RbGolden, TimestampsAndBytesAtTheirOffsets) {
  hw::ResponseBlock rb = good_rb();
  rb.detail = 0x1111111111111111ull;
  rb.start_ns = 0x2222222222222222ull;
  rb.end_ns = 0x3333333333333333ull;
  rb.bytes = 0x4444444444444444ull;
  const hw::RbBytes b = hw::encode(rb);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(b[16 + i], 0x11);
    EXPECT_EQ(b[24 + i], 0x22);
    EXPECT_EQ(b[32 + i], 0x33);
    EXPECT_EQ(b[40 + i], 0x44);
    EXPECT_EQ(b[48 + i], 0x00);
    EXPECT_EQ(b[56 + i], 0x00);
  }
}

TEST(RbRoundTrip, FieldLimits) {
  for (std::uint32_t tag : {1u, 32768u}) {
    for (int status = 0; status < 4; ++status) {
      for (int loc = 0; loc < 3; ++loc) {
        hw::ResponseBlock rb;
        rb.tag = tag;
        rb.status = static_cast<hw::RbStatus>(status);
        rb.locator = static_cast<hw::Pipeline>(loc);
        rb.phase = (status + loc) & 1;
        rb.error = hw::ErrorKind::kQueueFault;
        rb.field = hw::CbField::kDmiSource;
        rb.detail = rb.start_ns = rb.end_ns = rb.bytes = ~0ull;
        const hw::RbBytes b = hw::encode(rb);
        const hw::RbDecodeResult r = hw::decode_rb(b.data());
        ASSERT_FALSE(r.error.has_value()) << *r.error;
        EXPECT_TRUE(r.rb == rb) << tag << " " << status << " " << loc;
      }
    }
  }
}

TEST(RbRoundTrip, Randomized) {
  std::mt19937_64 rng(0x5EED'0B0Bull);
  for (int i = 0; i < 20000; ++i) {
    hw::ResponseBlock rb;
    rb.tag = 1 + static_cast<std::uint32_t>(rng() % 32768);
    rb.status = static_cast<hw::RbStatus>(rng() % 4);
    rb.locator = static_cast<hw::Pipeline>(rng() % 3);
    rb.phase = rng() & 1;
    rb.error = static_cast<hw::ErrorKind>(rng() % 9);
    rb.field = static_cast<hw::CbField>(rng() % 26);
    rb.detail = rng();
    rb.start_ns = rng();
    rb.end_ns = rng();
    rb.bytes = rng();
    const hw::RbBytes b = hw::encode(rb);
    const hw::RbDecodeResult r = hw::decode_rb(b.data());
    ASSERT_FALSE(r.error.has_value()) << "iteration " << i << ": " << *r.error;
    ASSERT_TRUE(r.rb == rb) << "iteration " << i;
    ASSERT_EQ(hw::rb_phase(b.data()), rb.phase);
  }
}

TEST(RbRoundTrip, BitFlipsAreRejectedOrCanonical) {
  std::mt19937_64 rng(0xB17F11Bull);
  int rejected = 0, accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    hw::ResponseBlock rb = good_rb();
    rb.tag = 1 + static_cast<std::uint32_t>(rng() % 32768);
    rb.status = static_cast<hw::RbStatus>(rng() % 4);
    hw::RbBytes b = hw::encode(rb);
    const unsigned bit = static_cast<unsigned>(rng() % (64 * 8));
    b[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
    const hw::RbDecodeResult r = hw::decode_rb(b.data());
    if (r.error) {
      ++rejected;
    } else {
      ++accepted;
      ASSERT_EQ(hw::encode(r.rb), b) << "iteration " << i << " bit " << bit;
    }
  }
  EXPECT_GT(rejected, 1000);
  EXPECT_GT(accepted, 1000);
}

namespace {

::testing::AssertionResult rb_rejected(const Rb& b, const char* why) {
  const hw::RbDecodeResult r = hw::decode_rb(b.data());
  if (!r.error) return ::testing::AssertionFailure() << "accepted";
  if (r.error->find(why) == std::string_view::npos) {
    return ::testing::AssertionFailure() << "rejected for '" << *r.error << "', want '" << why << "'";
  }
  return ::testing::AssertionSuccess();
}

}  // namespace

TEST(RbReject, Format) {
  for (std::uint8_t f : {0x00, 0x5C, 0xA4, 0xFF}) {
    Rb b = kGood;
    b[5] = f;
    EXPECT_TRUE(rb_rejected(b, "format")) << int(f);
  }
  EXPECT_TRUE(rb_rejected(Rb{}, "format"));  // an unwritten slot
}

TEST(RbReject, ReservedBits) {
  for (unsigned bit : {33u, 39u, 48u, 63u}) {
    Rb b = kGood;
    put64(b, 0, get64(b, 0) | 1ull << bit);
    EXPECT_TRUE(rb_rejected(b, "reserved")) << "word 0 bit " << bit;
  }
  for (unsigned bit : {32u, 63u}) {
    Rb b = kGood;
    put64(b, 8, 1ull << bit);
    EXPECT_TRUE(rb_rejected(b, "reserved")) << "word 1 bit " << bit;
  }
  for (std::size_t off : {48u, 56u}) {
    Rb b = kGood;
    b[off + 3] = 1;
    EXPECT_TRUE(rb_rejected(b, "reserved")) << "offset " << off;
  }
}

TEST(RbReject, Tag) {
  for (std::uint64_t tag : {0ull, 32769ull, 0xFFFFFFull}) {
    Rb b = kGood;
    put64(b, 0, (get64(b, 0) & ~0xFFFFFFull) | tag);
    EXPECT_TRUE(rb_rejected(b, "tag")) << tag;
  }
}

TEST(RbReject, Status) {
  for (std::uint64_t s = 4; s < 16; ++s) {
    Rb b = kGood;
    put64(b, 0, (get64(b, 0) & ~(0xFull << 24)) | s << 24);
    EXPECT_TRUE(rb_rejected(b, "status")) << s;
  }
}

TEST(RbReject, Locator) {
  for (std::uint64_t l = 3; l < 16; ++l) {
    Rb b = kGood;
    put64(b, 0, (get64(b, 0) & ~(0xFull << 28)) | l << 28);
    EXPECT_TRUE(rb_rejected(b, "locator")) << l;
  }
}

TEST(RbReject, ErrorKindAndField) {
  for (std::uint64_t k : {9ull, 0x100ull, 0xFFFFull}) {
    Rb b = kMalformed;
    put64(b, 8, (get64(b, 8) & ~0xFFFFull) | k);
    EXPECT_TRUE(rb_rejected(b, "error kind")) << k;
  }
  for (std::uint64_t f : {26ull, 0xFFFFull}) {
    Rb b = kMalformed;
    put64(b, 8, (get64(b, 8) & 0xFFFFull) | f << 16);
    EXPECT_TRUE(rb_rejected(b, "field")) << f;
  }
  // The largest defined values are accepted.
  Rb b = kMalformed;
  put64(b, 8, 8 | 25ull << 16);
  const hw::RbDecodeResult r = hw::decode_rb(b.data());
  ASSERT_FALSE(r.error.has_value());
  EXPECT_EQ(r.rb.error, hw::ErrorKind::kQueueFault);
  EXPECT_EQ(r.rb.field, hw::CbField::kCmptDuration);
}
