// Control-block round trips: encode -> decode for every field at its limits, a randomized round
// trip over thousands of valid CBs (fixed seed), and a bit-flip test showing that the encoding is
// canonical (every image the decoder accepts re-encodes to the same bytes).
#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <random>

#include "spyre_dma/hw/contract.hpp"

namespace hw = spyre_dma::hw;

namespace {

constexpr std::uint32_t kSegFlits = 1u << 27;

hw::ControlBlock h2d(std::uint32_t tag = 1) {
  hw::ControlBlock cb;
  cb.tag = tag;
  cb.dmi.type = hw::DmaType::kImmediate;
  cb.dmi.device = {1, 0x40};
  cb.dmi.length_flits = 8;
  cb.dmi.host_iova_flits = 0x1000;
  cb.xlat[1] = {hw::XlatMode::kReadWrite, 0x100000, 0x1000};
  return cb;
}

hw::ControlBlock d2h() {
  hw::ControlBlock cb;
  cb.tag = 9;
  cb.dmo.type = hw::DmaType::kImmediate;
  cb.dmo.device = {4, 0};
  cb.dmo.length_flits = 2;
  cb.dmo.host_iova_flits = 0x2000;
  cb.xlat[4] = {hw::XlatMode::kReadOnly, 0x200000, 0x10};
  return cb;
}

void expect_round_trip(const hw::ControlBlock& cb, hw::Pipeline pipeline) {
  const auto v = hw::validate(cb);
  EXPECT_FALSE(v.has_value()) << "validate: " << hw::to_string(v->field) << " = 0x" << std::hex
                              << v->value;
  const hw::CbBytes bytes = hw::encode(cb);
  const hw::CbDecodeResult r = hw::decode_cb(bytes.data());
  ASSERT_FALSE(r.error.has_value()) << "decode: " << hw::to_string(r.error->field) << " = 0x"
                                    << std::hex << r.error->value;
  EXPECT_TRUE(r.cb == cb);
  EXPECT_EQ(r.pipeline, pipeline);
}

}  // namespace

TEST(CbRoundTrip, TagLimits) {
  for (std::uint32_t tag : {1u, 2u, 0x7FFFu, 32767u, 32768u}) {
    SCOPED_TRACE(tag);
    expect_round_trip(h2d(tag), hw::Pipeline::kDmai);
  }
}

TEST(CbRoundTrip, BarrierAndInterrupt) {
  for (int bits = 0; bits < 4; ++bits) {
    hw::ControlBlock cb = h2d();
    cb.barrier = bits & 1;
    cb.interrupt = bits & 2;
    SCOPED_TRACE(bits);
    expect_round_trip(cb, hw::Pipeline::kDmai);
  }
}

TEST(CbRoundTrip, LengthLimits) {
  hw::ControlBlock cb = h2d();
  cb.dmi.device = {0, 0};
  cb.dmi.length_flits = 1;
  expect_round_trip(cb, hw::Pipeline::kDmai);
  cb.dmi.length_flits = hw::kLengthFlitsMax;  // 2^24 - 1 from offset 0 fits the segment
  expect_round_trip(cb, hw::Pipeline::kDmai);
  // The largest length at the largest offset that still fits the segment.
  cb.dmi.device = {7, kSegFlits - hw::kLengthFlitsMax};
  expect_round_trip(cb, hw::Pipeline::kDmai);
  hw::ControlBlock o = d2h();
  o.dmo.length_flits = hw::kLengthFlitsMax;
  expect_round_trip(o, hw::Pipeline::kDmao);
}

TEST(CbRoundTrip, SegmentAndOffsetLimits) {
  for (std::uint8_t seg : {0, 7}) {
    for (std::uint32_t off : {0u, 1u, kSegFlits - 1}) {
      SCOPED_TRACE(testing::Message() << "segment " << int(seg) << " offset " << off);
      hw::ControlBlock cb = h2d();
      cb.dmi.device = {seg, off};
      cb.dmi.length_flits = 1;
      expect_round_trip(cb, hw::Pipeline::kDmai);
      hw::ControlBlock o = d2h();
      o.dmo.device = {seg, off};
      o.dmo.length_flits = 1;
      expect_round_trip(o, hw::Pipeline::kDmao);
    }
  }
  // A range that ends exactly at the end of its segment.
  hw::ControlBlock cb = h2d();
  cb.dmi.device = {5, kSegFlits - 16};
  cb.dmi.length_flits = 16;
  expect_round_trip(cb, hw::Pipeline::kDmai);
}

TEST(CbRoundTrip, HostIovaLimits) {
  for (std::uint64_t iova : {0ull, 1ull, (1ull << 56), (1ull << 57) - 1}) {
    SCOPED_TRACE(iova);
    hw::ControlBlock cb = h2d();
    cb.dmi.host_iova_flits = iova;
    cb.dmi.last_flit_bytes = 127;  // shares word 1 with the IOVA: must not collide
    expect_round_trip(cb, hw::Pipeline::kDmai);
    hw::ControlBlock o = d2h();
    o.dmo.host_iova_flits = iova;
    o.dmo.last_flit_bytes = 127;
    expect_round_trip(o, hw::Pipeline::kDmao);
  }
}

TEST(CbRoundTrip, LastFlitBytes) {
  for (std::uint8_t last : {0, 1, 64, 127}) {
    SCOPED_TRACE(int(last));
    hw::ControlBlock cb = h2d();
    cb.dmi.last_flit_bytes = last;
    cb.dmi.host_iova_flits = (1ull << 57) - 1;
    expect_round_trip(cb, hw::Pipeline::kDmai);
    hw::ControlBlock f = h2d();
    f.dmi.type = hw::DmaType::kMemoryFill;
    f.dmi.host_iova_flits = 0;
    f.dmi.fill_pattern = 0xFFFFFFFF;
    f.dmi.last_flit_bytes = last;
    expect_round_trip(f, hw::Pipeline::kDmai);
    hw::ControlBlock c = h2d();
    c.dmi.type = hw::DmaType::kDeviceCopy;
    c.dmi.host_iova_flits = 0;
    c.dmi.source = {7, kSegFlits - 8};
    c.dmi.last_flit_bytes = last;
    expect_round_trip(c, hw::Pipeline::kDmai);
  }
}

TEST(CbRoundTrip, FillPatternLimits) {
  for (std::uint32_t pattern : {0u, 1u, 0x80000000u, 0xFFFFFFFFu}) {
    SCOPED_TRACE(pattern);
    hw::ControlBlock cb = h2d();
    cb.dmi.type = hw::DmaType::kMemoryFill;
    cb.dmi.host_iova_flits = 0;
    cb.dmi.fill_pattern = pattern;
    expect_round_trip(cb, hw::Pipeline::kDmai);
  }
}

TEST(CbRoundTrip, DeviceCopySourceLimits) {
  for (std::uint8_t seg : {0, 7}) {
    for (std::uint32_t off : {0u, kSegFlits - 8}) {
      hw::ControlBlock cb = h2d();
      cb.dmi.type = hw::DmaType::kDeviceCopy;
      cb.dmi.host_iova_flits = 0;
      cb.dmi.source = {seg, off};
      cb.xlat[seg] = {hw::XlatMode::kReadOnly, 0, kSegFlits};
      SCOPED_TRACE(testing::Message() << "segment " << int(seg) << " offset " << off);
      expect_round_trip(cb, hw::Pipeline::kDmai);
    }
  }
}

TEST(CbRoundTrip, ComputeDurationLimits) {
  for (std::uint64_t d : std::initializer_list<std::uint64_t>{0, 1, hw::kMaxComputeNs}) {
    SCOPED_TRACE(d);
    hw::ControlBlock cb;
    cb.tag = 3;
    cb.cmpt.type = hw::ComputeType::kTimed;
    cb.cmpt.duration_ns = d;
    expect_round_trip(cb, hw::Pipeline::kCompute);
  }
}

TEST(CbRoundTrip, XlatLimits) {
  hw::ControlBlock cb = h2d();
  cb.xlat[0] = {hw::XlatMode::kReadOnly, (1ull << 34) - 1, 1u << 27};
  cb.xlat[1] = {hw::XlatMode::kReadWrite, 0, 1u << 27};
  cb.xlat[2] = {hw::XlatMode::kReadWrite, (1ull << 34) - 1, 0};
  cb.xlat[7] = {hw::XlatMode::kReadOnly, 0, 1};
  expect_round_trip(cb, hw::Pipeline::kDmai);
  for (unsigned i = 0; i < hw::kNumXlatEntries; ++i) {
    cb.xlat[i] = {i % 2 ? hw::XlatMode::kReadOnly : hw::XlatMode::kReadWrite, (1ull << 34) - 1 - i,
                  (1u << 27) - i};
  }
  expect_round_trip(cb, hw::Pipeline::kDmai);
}

namespace {

class Gen {
 public:
  explicit Gen(std::uint64_t seed) : rng_(seed) {}
  std::uint64_t bits(unsigned n) { return n >= 64 ? rng_() : rng_() & ((1ull << n) - 1); }
  // Uniform in [lo, hi], with the ends themselves picked often.
  std::uint64_t range(std::uint64_t lo, std::uint64_t hi) {
    switch (rng_() % 8) {
      case 0: return lo;
      case 1: return hi;
      default: return hi - lo == ~0ull ? rng_() : lo + rng_() % (hi - lo + 1);
    }
  }
  bool coin() { return rng_() & 1; }
  std::uint64_t next() { return rng_(); }

  hw::DeviceVa va_for(std::uint32_t length) {
    return {static_cast<std::uint8_t>(range(0, 7)),
            static_cast<std::uint32_t>(range(0, kSegFlits - length))};
  }

  // A random valid CB and the pipeline it belongs on.
  hw::ControlBlock cb(hw::Pipeline& pipeline) {
    hw::ControlBlock c;
    c.tag = static_cast<std::uint32_t>(range(1, 32768));
    c.barrier = coin();
    c.interrupt = coin();
    const unsigned kind = rng_() % 5;
    hw::DmaSection* s = kind == 3 ? &c.dmo : &c.dmi;
    if (kind == 4) {
      c.cmpt.type = hw::ComputeType::kTimed;
      c.cmpt.duration_ns = range(0, hw::kMaxComputeNs);
      pipeline = hw::Pipeline::kCompute;
    } else {
      pipeline = kind == 3 ? hw::Pipeline::kDmao : hw::Pipeline::kDmai;
      s->length_flits = static_cast<std::uint32_t>(range(1, hw::kLengthFlitsMax));
      s->device = va_for(s->length_flits);
      s->last_flit_bytes = static_cast<std::uint8_t>(range(0, 127));
      switch (kind) {
        case 0:
        case 3:
          s->type = hw::DmaType::kImmediate;
          s->host_iova_flits = range(0, (1ull << 57) - 1);
          break;
        case 1:
          s->type = hw::DmaType::kMemoryFill;
          s->fill_pattern = static_cast<std::uint32_t>(range(0, 0xFFFFFFFF));
          break;
        case 2:
          s->type = hw::DmaType::kDeviceCopy;
          s->source = va_for(s->length_flits);
          break;
      }
    }
    for (auto& e : c.xlat) {
      const unsigned mode = rng_() % 3;
      if (mode == 0) continue;
      e.mode = static_cast<hw::XlatMode>(mode);
      e.base_flits = range(0, (1ull << 34) - 1);
      e.length_flits = static_cast<std::uint32_t>(range(0, kSegFlits));
    }
    return c;
  }

 private:
  std::mt19937_64 rng_;
};

}  // namespace

TEST(CbRoundTrip, RandomizedValidCbs) {
  Gen gen(0x5EED'C0DE'0001ull);
  int per_pipeline[3] = {0, 0, 0};
  for (int i = 0; i < 20000; ++i) {
    hw::Pipeline p{};
    const hw::ControlBlock cb = gen.cb(p);
    ++per_pipeline[static_cast<int>(p)];
    const auto v = hw::validate(cb);
    ASSERT_FALSE(v.has_value()) << "iteration " << i << ": " << hw::to_string(v->field);
    const hw::CbBytes bytes = hw::encode(cb);
    const hw::CbDecodeResult r = hw::decode_cb(bytes.data());
    ASSERT_FALSE(r.error.has_value()) << "iteration " << i << ": " << hw::to_string(r.error->field);
    ASSERT_TRUE(r.cb == cb) << "iteration " << i;
    ASSERT_EQ(r.pipeline, p) << "iteration " << i;
    ASSERT_EQ(hw::encode(r.cb), bytes) << "iteration " << i;
  }
  for (int n : per_pipeline) EXPECT_GT(n, 1000);
}

TEST(CbRoundTrip, BitFlipsAreRejectedOrCanonical) {
  // Flip one to three random bits of a valid CB. Either the decoder names a field, or the image is
  // a valid CB that re-encodes to exactly the flipped bytes (nothing is silently ignored).
  Gen gen(0xF11Bull);
  int rejected = 0, accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    hw::Pipeline p{};
    hw::CbBytes bytes = hw::encode(gen.cb(p));
    const int flips = 1 + static_cast<int>(gen.next() % 3);
    for (int f = 0; f < flips; ++f) {
      const unsigned bit = static_cast<unsigned>(gen.next() % (128 * 8));
      bytes[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
    }
    const hw::CbDecodeResult r = hw::decode_cb(bytes.data());
    if (r.error) {
      ++rejected;
      ASSERT_NE(r.error->field, hw::CbField::kNone) << "iteration " << i;
    } else {
      ++accepted;
      ASSERT_EQ(hw::encode(r.cb), bytes) << "iteration " << i;
      ASSERT_FALSE(hw::validate(r.cb).has_value()) << "iteration " << i;
    }
  }
  EXPECT_GT(rejected, 1000);
  EXPECT_GT(accepted, 1000);
}

// The DMA-CB encoder a driver uses on its hot path writes exactly the bytes of the general
// encoder for the same CB, over random sections of every DMA type, both directions and the two
// XLAT entries it carries (fields at random widths, including out-of-range values: both encoders
// mask the same way). A ring slot's previous contents must not show through either.
TEST(CbRoundTrip, DmaCbEncodesAsTheControlBlock) {
  std::mt19937_64 rng(0xD3ACB);
  auto any = [&](unsigned bits) { return rng() & (bits >= 64 ? ~0ull : (1ull << bits) - 1); };
  const hw::DmaType types[] = {hw::DmaType::kImmediate, hw::DmaType::kMemoryFill, hw::DmaType::kDeviceCopy};
  for (int i = 0; i < 5000; ++i) {
    hw::DmaCb cb;
    cb.tag = static_cast<std::uint32_t>(any(32));
    cb.barrier = any(1);
    cb.interrupt = any(1);
    cb.outbound = any(1);
    cb.section.type = types[any(8) % 3];
    cb.section.device = {static_cast<std::uint8_t>(any(8)), static_cast<std::uint32_t>(any(32))};
    cb.section.length_flits = static_cast<std::uint32_t>(any(32));
    cb.section.last_flit_bytes = static_cast<std::uint8_t>(any(8));
    cb.section.host_iova_flits = any(64);
    cb.section.fill_pattern = static_cast<std::uint32_t>(any(32));
    cb.section.source = {static_cast<std::uint8_t>(any(8)), static_cast<std::uint32_t>(any(32))};
    for (auto& e : cb.xlat) {
      e = {static_cast<hw::XlatMode>(any(2)), any(64), static_cast<std::uint32_t>(any(32))};
    }
    hw::CbBytes direct;
    direct.fill(0xEE);
    hw::encode(cb, direct.data());
    ASSERT_EQ(direct, hw::encode(hw::to_control_block(cb))) << "case " << i;
  }
}
