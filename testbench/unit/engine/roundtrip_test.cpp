// Round trips through the engine on refdev, byte-exact, with canaries around every target range:
// H2D then D2H over sizes that are and are not multiples of the flit, the page and the 4 MiB CB
// piece; device offsets; registered (direct DMA), pageable and unaligned (staged) host memory;
// single- and multi-chunk allocations (CBs cut at chunk boundaries); fills; device copies.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "engine_fixture.hpp"

namespace spyre_dma::test {
namespace {

constexpr std::uint32_t kCanary = 0xC3A5'5A3Cu;
constexpr std::uint64_t kTail = 384;              // device bytes after every target range
constexpr std::uint64_t kChunk = 1 * MiB + 128;   // forces chunk boundaries off the CB grid

const std::vector<std::uint64_t> kSizes = {
    1, 127, 128, 129, 4095, 4096, 4097, 4 * MiB - 128, 4 * MiB, 4 * MiB + 1, 9 * MiB + 333,
};

// Where the host side of a copy lives.
enum class HostKind { kPageable, kAllocHost, kRegisterHost128, kRegisteredPlus1, kRegisteredPlus64 };
const char* host_kind_name(HostKind k) {
  switch (k) {
    case HostKind::kPageable: return "Pageable";
    case HostKind::kAllocHost: return "AllocHost";
    case HostKind::kRegisterHost128: return "RegisterHostAt128";
    case HostKind::kRegisteredPlus1: return "RegisteredAt1";
    case HostKind::kRegisteredPlus64: return "RegisteredAt64";
  }
  return "?";
}
bool staged(HostKind k) {
  return k == HostKind::kPageable || k == HostKind::kRegisteredPlus1 || k == HostKind::kRegisteredPlus64;
}

// One host range of `bytes` at the kind's offset inside a larger backing (canaries around it).
class HostRange {
 public:
  static constexpr std::size_t kSlack = 512;
  static constexpr std::uint8_t kHostCanary = 0xCC;

  HostRange(Engine& e, HostKind kind, std::size_t bytes) : bytes_(bytes) {
    const std::size_t backing = bytes + kSlack;
    switch (kind) {
      case HostKind::kPageable:
        vec_.assign(backing, kHostCanary);
        base_ = vec_.data();
        offset_ = 0;
        break;
      case HostKind::kAllocHost:
      case HostKind::kRegisteredPlus1:
        reg_ = e.allocate_host(backing);
        base_ = static_cast<std::uint8_t*>(reg_.data());
        offset_ = kind == HostKind::kAllocHost ? 0 : 1;
        break;
      case HostKind::kRegisterHost128:
      case HostKind::kRegisteredPlus64:
        user_ = std::make_unique<AlignedHost>(backing);
        reg_ = e.register_host(user_->data(), backing);
        base_ = user_->data();
        offset_ = kind == HostKind::kRegisterHost128 ? 128 : 64;
        break;
    }
    backing_ = backing;
    std::memset(base_, kHostCanary, backing_);
  }
  std::uint8_t* ptr() const { return base_ + offset_; }
  // Bytes of the backing outside the range still hold the canary.
  ::testing::AssertionResult canaries_intact() const {
    for (std::size_t i = 0; i < backing_; ++i) {
      if (i >= offset_ && i < offset_ + bytes_) continue;
      if (base_[i] != kHostCanary) {
        return ::testing::AssertionFailure() << "host byte " << i << " outside the range [" << offset_
                                             << ", +" << bytes_ << ") was written";
      }
    }
    return ::testing::AssertionSuccess();
  }

 private:
  std::size_t bytes_;
  std::vector<std::uint8_t> vec_;
  std::unique_ptr<AlignedHost> user_;
  HostBuffer reg_;
  std::uint8_t* base_ = nullptr;
  std::size_t offset_ = 0;
  std::size_t backing_ = 0;
};

// How many CBs the engine must cut [offset, offset + bytes) of `a` into: pieces of at most `cap`
// that never cross a chunk boundary (of either allocation, for a device copy).
std::size_t expected_cbs(const CompositeAddress& a, std::uint64_t offset, std::uint64_t bytes,
                         std::uint64_t cap, const CompositeAddress* b = nullptr, std::uint64_t b_offset = 0) {
  std::size_t n = 0;
  for (std::uint64_t done = 0; done < bytes; ++n) {
    std::uint64_t piece = std::min(bytes - done, cap);
    const auto pa = a.locate(offset + done);
    piece = std::min(piece, a.chunks()[pa.chunk].size - pa.offset_in_chunk);
    if (b) {
      const auto pb = b->locate(b_offset + done);
      piece = std::min(piece, b->chunks()[pb.chunk].size - pb.offset_in_chunk);
    }
    done += piece;
  }
  return n;
}

std::size_t count_cbs(const std::vector<SeenCb>& cbs, hw::Pipeline p, std::uint64_t max_bytes) {
  std::size_t n = 0;
  for (const SeenCb& c : cbs) {
    if (c.pipe != p) continue;
    EXPECT_LE(c.bytes, max_bytes);
    ++n;
  }
  return n;
}

// The device image a buffer of `total` bytes has after a whole-buffer fill with kCanary.
std::vector<std::uint8_t> canary_image(std::uint64_t total) {
  std::vector<std::uint8_t> v(total);
  fill32_reference(v.data(), v.size(), kCanary);
  return v;
}

// Reads the whole buffer back through registered, aligned memory (no staging) and compares.
void expect_device_image(Engine& e, Stream& s, const DeviceBuffer& buf, const std::vector<std::uint8_t>& want) {
  HostBuffer all = e.allocate_host(want.size());
  std::memset(all.data(), 0, want.size());
  Op op = s.copy_d2h(all.data(), buf, 0, want.size());
  SPYRE_ASSERT_OK(op.wait(kWait));
  EXPECT_TRUE(bytes_equal(want.data(), all.data(), want.size())) << "device image";
}

AllocOptions layout_alloc(bool multi) { return AllocOptions{multi ? kChunk : 0}; }

std::uint64_t expected_chunks(std::uint64_t total, bool multi) {
  const std::uint64_t rounded = (total + 127) / 128 * 128;
  return multi ? (rounded + kChunk - 1) / kChunk : 1;
}

// --- H2D then D2H ---------------------------------------------------------------------------

// (size, host kind, layout): layout 0 single chunk at offset 0, 1 single chunk at 4 MiB - 128
// (the first CB ends one flit in), 2 multi-chunk at 128, 3 multi-chunk at 1 MiB (one flit before
// the first chunk boundary).
using RoundTripParam = std::tuple<std::uint64_t, HostKind, int>;

class RoundTrip : public ::testing::TestWithParam<RoundTripParam> {};

TEST_P(RoundTrip, H2dThenD2hByteExact) {
  const auto [bytes, kind, layout] = GetParam();
  const bool multi = layout >= 2;
  const std::uint64_t dev_off = std::array<std::uint64_t, 4>{0, 4 * MiB - 128, 128, 1 * MiB}[layout];
  const std::uint64_t total = dev_off + bytes + kTail;

  Rig rig = make_rig();
  Engine& e = *rig.engine;
  Stream s = e.create_stream();
  DeviceBuffer buf = e.allocate(total, layout_alloc(multi));
  ASSERT_EQ(buf.address().chunks().size(), expected_chunks(total, multi));
  SPYRE_ASSERT_OK(s.fill(buf, 0, total, kCanary).wait(kWait));

  HostRange src(e, kind, bytes), dst(e, kind, bytes);
  const std::uint64_t seed = bytes * 31 + static_cast<std::uint64_t>(kind) * 7 + layout;
  fill_pattern(src.ptr(), bytes, seed);
  const EngineStats before = e.stats();
  rig.spy->clear();

  Op h2d = s.copy_h2d(buf, dev_off, src.ptr(), bytes);
  Op d2h = s.copy_d2h(dst.ptr(), buf, dev_off, bytes);
  SPYRE_ASSERT_OK(s.synchronize(kWait));
  EXPECT_TRUE(h2d.done());
  EXPECT_TRUE(d2h.done());
  SPYRE_EXPECT_OK(h2d.status());
  SPYRE_EXPECT_OK(d2h.status());

  const std::vector<std::uint8_t> want = pattern(bytes, seed);
  EXPECT_TRUE(bytes_equal(want.data(), dst.ptr(), bytes)) << "D2H result";
  EXPECT_TRUE(bytes_equal(want.data(), src.ptr(), bytes)) << "source overwritten";
  EXPECT_TRUE(dst.canaries_intact());
  EXPECT_TRUE(src.canaries_intact());

  const EngineStats after = e.stats();
  EXPECT_EQ(after.bytes_h2d - before.bytes_h2d, bytes);
  EXPECT_EQ(after.bytes_d2h - before.bytes_d2h, bytes);
  EXPECT_EQ(after.bytes_staged - before.bytes_staged, staged(kind) ? 2 * bytes : 0);
  EXPECT_EQ(after.ops_completed - before.ops_completed, 2u);
  EXPECT_EQ(after.ops_failed, 0u);

  // CB cutting: at most 4 MiB (max_cb_bytes and the staging buffer size), never across a chunk.
  const auto cbs = rig.spy->cbs();
  const std::size_t want_cbs = expected_cbs(buf.address(), dev_off, bytes, 4 * MiB);
  EXPECT_EQ(count_cbs(cbs, hw::Pipeline::kDmai, 4 * MiB), want_cbs);
  EXPECT_EQ(count_cbs(cbs, hw::Pipeline::kDmao, 4 * MiB), want_cbs);

  std::vector<std::uint8_t> image = canary_image(total);
  std::memcpy(image.data() + dev_off, want.data(), bytes);
  expect_device_image(e, s, buf, image);
}

std::string round_trip_name(const ::testing::TestParamInfo<RoundTripParam>& pinfo) {
  return std::to_string(std::get<0>(pinfo.param)) + "B_" + host_kind_name(std::get<1>(pinfo.param)) + "_Layout" +
         std::to_string(std::get<2>(pinfo.param));
}

// Every host kind at offset 0 of a single chunk and at 128 of a multi-chunk allocation ...
INSTANTIATE_TEST_SUITE_P(
    Sizes, RoundTrip,
    ::testing::Combine(::testing::ValuesIn(kSizes),
                       ::testing::Values(HostKind::kPageable, HostKind::kAllocHost,
                                         HostKind::kRegisterHost128, HostKind::kRegisteredPlus1,
                                         HostKind::kRegisteredPlus64),
                       ::testing::Values(0, 2)),
    round_trip_name);
// ... and the offsets that put piece and chunk boundaries one flit in, staged and direct.
INSTANTIATE_TEST_SUITE_P(
    Offsets, RoundTrip,
    ::testing::Combine(::testing::ValuesIn(kSizes), ::testing::Values(HostKind::kPageable, HostKind::kAllocHost),
                       ::testing::Values(1, 3)),
    round_trip_name);

// One large transfer through the staging pipeline: 64 CBs each way through 8 staging buffers.
TEST(RoundTripLarge, Pageable256MiB) {
  constexpr std::uint64_t n = 256 * MiB;
  Rig rig = make_rig();
  Engine& e = *rig.engine;
  Stream s = e.create_stream();
  DeviceBuffer buf = e.allocate(n);
  std::vector<std::uint8_t> src = pattern(n, 256);
  std::vector<std::uint8_t> dst(n, 0);
  s.copy_h2d(buf, 0, src.data(), n);
  s.copy_d2h(dst.data(), buf, 0, n);
  SPYRE_ASSERT_OK(s.synchronize(60s));
  EXPECT_TRUE(bytes_equal(src.data(), dst.data(), n));
  const EngineStats st = e.stats();
  EXPECT_EQ(st.bytes_staged, 2 * n);
  EXPECT_EQ(st.cbs_completed, 2 * n / (4 * MiB));
  EXPECT_EQ(st.quarantined_staging, 0u);
}

// Staged copies on any number of staging threads (0: the submitting and completing threads copy):
// four streams, each an H2D then a D2H of pageable memory several staging buffers long, with
// callbacks; every byte lands, every callback runs once, and each stream's callbacks come in
// submission order.
class StagingThreads : public ::testing::TestWithParam<unsigned> {};

TEST_P(StagingThreads, StreamsKeepTheirOrderAndEveryByte) {
  constexpr std::size_t kStreams = 4;
  constexpr std::uint64_t n = 10 * MiB + 384;  // three 4 MiB pieces, the last partial
  EngineOptions o;
  o.staging_threads = GetParam();
  Rig rig = make_rig(o);
  Engine& e = *rig.engine;
  DeviceBuffer buf = e.allocate(kStreams * 11 * MiB);
  std::vector<Stream> streams;
  std::vector<std::vector<std::uint8_t>> src, dst;
  std::vector<std::vector<int>> order(kStreams);
  std::mutex mu;
  for (std::size_t i = 0; i < kStreams; ++i) {
    streams.push_back(e.create_stream());
    src.push_back(pattern(n, 300 + i));
    dst.emplace_back(n, 0);
  }
  for (std::size_t i = 0; i < kStreams; ++i) {
    auto log = [&, i](int k) {
      return [&, i, k](const Status& st) {
        EXPECT_TRUE(st.ok()) << st.to_string();
        std::lock_guard<std::mutex> lock(mu);
        order[i].push_back(k);
      };
    };
    streams[i].copy_h2d(buf, i * 11 * MiB, src[i].data(), n, log(0));
    streams[i].copy_d2h(dst[i].data(), buf, i * 11 * MiB, n, log(1));
  }
  for (auto& s : streams) SPYRE_ASSERT_OK(s.synchronize(kWait));
  for (std::size_t i = 0; i < kStreams; ++i) {
    EXPECT_TRUE(bytes_equal(src[i].data(), dst[i].data(), n)) << "stream " << i;
  }
  ASSERT_TRUE(eventually([&] {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& v : order) {
      if (v.size() != 2) return false;
    }
    return true;
  }));
  for (std::size_t i = 0; i < kStreams; ++i) EXPECT_EQ(order[i], (std::vector<int>{0, 1})) << "stream " << i;
  EXPECT_EQ(e.stats().bytes_staged, 2 * kStreams * n);
}

INSTANTIATE_TEST_SUITE_P(Threads, StagingThreads, ::testing::Values(0u, 1u, 3u),
                         [](const ::testing::TestParamInfo<unsigned>& param_info) {
                           return std::to_string(param_info.param);
                         });

// A registration covers only the bytes registered: a copy reaching past it, or one made after
// release(), is staged; a copy inside it is direct.
TEST(RoundTripHostPath, RegistrationBoundsDecideDirectOrStaged) {
  Rig rig = make_rig();
  Engine& e = *rig.engine;
  Stream s = e.create_stream();
  DeviceBuffer buf = e.allocate(64 * KiB);
  AlignedHost mem(64 * KiB);
  fill_pattern(mem.data(), mem.size(), 5);
  HostBuffer reg = e.register_host(mem.data(), 16 * KiB);
  EXPECT_EQ(reg.size(), 16 * KiB);
  EXPECT_NE(reg.iova(), 0u);

  SPYRE_ASSERT_OK(s.copy_h2d(buf, 0, mem.data(), 16 * KiB).wait(kWait));
  EXPECT_EQ(e.stats().bytes_staged, 0u);
  SPYRE_ASSERT_OK(s.copy_h2d(buf, 0, mem.data(), 32 * KiB).wait(kWait));  // past the registration
  EXPECT_EQ(e.stats().bytes_staged, 32 * KiB);
  reg.release();
  EXPECT_FALSE(reg.valid());
  SPYRE_ASSERT_OK(s.copy_h2d(buf, 0, mem.data(), 16 * KiB).wait(kWait));  // released: staged
  EXPECT_EQ(e.stats().bytes_staged, 48 * KiB);

  std::vector<std::uint8_t> out(32 * KiB);
  SPYRE_ASSERT_OK(s.copy_d2h(out.data(), buf, 0, out.size()).wait(kWait));
  EXPECT_TRUE(bytes_equal(mem.data(), out.data(), out.size()));
}

// Records, for every buffer of `bytes` bytes mapped (the staging buffers, given a size nothing
// else of the test maps), its first byte when it was first mapped.
class StagingWatch final : public ForwardingDevice {
 public:
  StagingWatch(std::shared_ptr<Device> inner, std::size_t bytes) : ForwardingDevice(std::move(inner)), bytes_(bytes) {}
  std::uint64_t map(void* host, std::size_t bytes, DmaAccess access) override {
    if (bytes == bytes_) {
      std::lock_guard lock(mu_);
      seen_.emplace(host, *static_cast<const std::uint8_t*>(host));
    }
    return ForwardingDevice::map(host, bytes, access);
  }
  std::map<void*, std::uint8_t> seen() const {
    std::lock_guard lock(mu_);
    return seen_;
  }

 private:
  std::size_t bytes_;
  mutable std::mutex mu_;
  std::map<void*, std::uint8_t> seen_;
};

// An engine opened after another closed stages through the buffers the first one left, which
// still hold its bytes (fresh ones would hold zeros): every copy of the second is exact all the
// same, a short unaligned one included, and nothing next to it changes.
TEST(RoundTripHostPath, StagingBuffersOfAClosedEngineServeTheNextExactly) {
  EngineOptions o;
  o.cb_timeout = 10s;
  o.staging_buffer_bytes = 384 * KiB;  // a size no other test stages through
  o.staging_buffers = 2;
  {
    auto e = Engine::open(make_device({}), o);
    Stream s = e->create_stream();
    DeviceBuffer buf = e->allocate(1 * MiB);
    std::vector<std::uint8_t> junk(1 * MiB, 0xEE);
    SPYRE_ASSERT_OK(s.copy_h2d(buf, 0, junk.data(), junk.size()).wait(kWait));
    SPYRE_ASSERT_OK(s.copy_d2h(junk.data(), buf, 0, junk.size()).wait(kWait));  // both ways through staging
  }
  auto watch = std::make_shared<StagingWatch>(make_device({}), o.staging_buffer_bytes);
  auto e = Engine::open(watch, o);
  Stream s = e->create_stream();
  DeviceBuffer buf = e->allocate(1 * MiB);
  const std::vector<std::uint8_t> zeros(1 * MiB, 0);
  SPYRE_ASSERT_OK(s.copy_h2d(buf, 0, zeros.data(), zeros.size()).wait(kWait));
  const std::vector<std::uint8_t> data = pattern(1000, 17);
  SPYRE_ASSERT_OK(s.copy_h2d(buf, 128, data.data() + 3, 997).wait(kWait));
  std::vector<std::uint8_t> back(1 * MiB, 0x11);
  SPYRE_ASSERT_OK(s.copy_d2h(back.data() + 5, buf, 128, 997).wait(kWait));
  EXPECT_TRUE(bytes_equal(data.data() + 3, back.data() + 5, 997));
  EXPECT_TRUE(std::all_of(back.begin(), back.begin() + 5, [](std::uint8_t b) { return b == 0x11; }));
  EXPECT_TRUE(std::all_of(back.begin() + 5 + 997, back.end(), [](std::uint8_t b) { return b == 0x11; }));
  SPYRE_ASSERT_OK(s.copy_d2h(back.data(), buf, 0, back.size()).wait(kWait));
  std::vector<std::uint8_t> want(1 * MiB, 0);
  std::copy(data.begin() + 3, data.end(), want.begin() + 128);
  EXPECT_TRUE(bytes_equal(want.data(), back.data(), back.size()));
  const auto seen = watch->seen();
  EXPECT_EQ(seen.size(), o.staging_buffers);
  for (const auto& [host, first_byte] : seen) EXPECT_EQ(first_byte, 0xEE) << "a staging buffer not kept: " << host;
}

// --- Fill -----------------------------------------------------------------------------------

// (size, layout): layout 0 single chunk at 0, 1 single chunk at 384, 2 multi-chunk at 1 MiB.
using FillParam = std::tuple<std::uint64_t, int>;
class Fill : public ::testing::TestWithParam<FillParam> {};

TEST_P(Fill, PatternFromRangeStartPartialLastFlit) {
  const auto [bytes, layout] = GetParam();
  const std::uint64_t off = std::array<std::uint64_t, 3>{0, 384, 1 * MiB}[layout];
  const std::uint64_t total = off + bytes + kTail;
  const std::uint32_t pat = 0x1122'3344u ^ static_cast<std::uint32_t>(bytes);

  Rig rig = make_rig();
  Engine& e = *rig.engine;
  Stream s = e.create_stream();
  DeviceBuffer buf = e.allocate(total, layout_alloc(layout == 2));
  ASSERT_EQ(buf.address().chunks().size(), expected_chunks(total, layout == 2));
  // Background: random bytes, so that a fill too long or too short shows.
  std::vector<std::uint8_t> image = pattern(total, bytes + 1);
  SPYRE_ASSERT_OK(s.copy_h2d(buf, 0, image.data(), total).wait(kWait));

  rig.spy->clear();
  Op f = s.fill(buf, off, bytes, pat);
  SPYRE_ASSERT_OK(f.wait(kWait));
  EXPECT_EQ(count_cbs(rig.spy->cbs(), hw::Pipeline::kDmai, 4 * MiB),
            expected_cbs(buf.address(), off, bytes, 4 * MiB));
  EXPECT_EQ(e.stats().bytes_fill, bytes);

  fill32_reference(image.data() + off, bytes, pat);
  expect_device_image(e, s, buf, image);
}

INSTANTIATE_TEST_SUITE_P(
    Sizes, Fill,
    ::testing::Combine(::testing::Values<std::uint64_t>(1, 2, 3, 5, 127, 129, 4095, 4097, 4 * MiB + 1,
                                                        9 * MiB + 333),
                       ::testing::Values(0, 1, 2)),
    [](const ::testing::TestParamInfo<FillParam>& pinfo) {
      return std::to_string(std::get<0>(pinfo.param)) + "B_Layout" + std::to_string(std::get<1>(pinfo.param));
    });

// --- Device to device -----------------------------------------------------------------------

// (size, within): between a single-chunk source and a multi-chunk destination at offsets that put
// their chunk boundaries at different places, or within one multi-chunk allocation.
using D2dParam = std::tuple<std::uint64_t, bool>;
class DeviceCopy : public ::testing::TestWithParam<D2dParam> {};

TEST_P(DeviceCopy, NonOverlappingByteExact) {
  const auto [bytes, within] = GetParam();
  const std::uint64_t rounded = (bytes + 127) / 128 * 128;
  Rig rig = make_rig();
  Engine& e = *rig.engine;
  Stream s = e.create_stream();

  std::uint64_t src_off, dst_off, src_total, dst_total;
  DeviceBuffer src, dst;
  if (within) {
    src_off = 256;
    dst_off = src_off + rounded + 512;
    src_total = dst_total = dst_off + bytes + kTail;
    src = dst = e.allocate(src_total, AllocOptions{kChunk});
  } else {
    src_off = 128;
    dst_off = 640;
    src_total = src_off + bytes + kTail;
    dst_total = dst_off + bytes + kTail;
    src = e.allocate(src_total);
    dst = e.allocate(dst_total, AllocOptions{kChunk});
    EXPECT_EQ(src.address().chunks().size(), 1u);
  }
  EXPECT_EQ(dst.address().chunks().size(), expected_chunks(dst_total, true));

  std::vector<std::uint8_t> src_image = pattern(src_total, bytes * 3 + within);
  SPYRE_ASSERT_OK(s.copy_h2d(src, 0, src_image.data(), src_total).wait(kWait));
  if (!within) SPYRE_ASSERT_OK(s.fill(dst, 0, dst_total, kCanary).wait(kWait));

  rig.spy->clear();
  Op op = s.copy_d2d(dst, dst_off, src, src_off, bytes);
  SPYRE_ASSERT_OK(op.wait(kWait));
  EXPECT_EQ(count_cbs(rig.spy->cbs(), hw::Pipeline::kDmai, 4 * MiB),
            expected_cbs(dst.address(), dst_off, bytes, 4 * MiB, &src.address(), src_off));
  EXPECT_EQ(e.stats().bytes_d2d, bytes);

  std::vector<std::uint8_t> dst_image = within ? src_image : canary_image(dst_total);
  std::memcpy(dst_image.data() + dst_off, src_image.data() + src_off, bytes);
  expect_device_image(e, s, dst, dst_image);
  if (!within) expect_device_image(e, s, src, src_image);  // the source is untouched
}

INSTANTIATE_TEST_SUITE_P(
    Sizes, DeviceCopy,
    ::testing::Combine(::testing::Values<std::uint64_t>(1, 129, 4097, 1 * MiB, 4 * MiB + 1, 9 * MiB + 333),
                       ::testing::Bool()),
    [](const ::testing::TestParamInfo<D2dParam>& pinfo) {
      return std::to_string(std::get<0>(pinfo.param)) + "B_" + (std::get<1>(pinfo.param) ? "Within" : "Between");
    });

}  // namespace
}  // namespace spyre_dma::test
