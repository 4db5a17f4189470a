// RefDevice data movement driven at register level: H2D / D2H byte-exact, fill, device copy,
// compute, placement through XLAT, and that device memory costs only what is touched.
#include <gtest/gtest.h>

#include <vector>

#include "ring_driver.hpp"
#include "spyre_dma/refdev/ref_device.hpp"

namespace {

using namespace device_test;
using spyre_dma::refdev::RefDevice;
using spyre_dma::refdev::RefDeviceConfig;

class RefDeviceDma : public ::testing::Test {
 protected:
  RefDevice dev;
  RingDriver drv{dev};
};

void expect_good(const hw::ResponseBlock& rb, std::uint32_t tag, Pipeline p, std::uint64_t bytes) {
  EXPECT_EQ(rb.tag, tag);
  EXPECT_EQ(rb.status, hw::RbStatus::kGood) << hw::to_string(rb.error) << " " << hw::to_string(rb.field);
  EXPECT_EQ(rb.error, hw::ErrorKind::kNone);
  EXPECT_EQ(rb.locator, p);
  EXPECT_EQ(rb.bytes, bytes);
  EXPECT_LE(rb.start_ns, rb.end_ns);
  EXPECT_GT(rb.end_ns, 0u);
}

class RefDeviceRoundTrip : public RefDeviceDma, public ::testing::WithParamInterface<std::size_t> {};

TEST_P(RefDeviceRoundTrip, H2dThenD2hIsByteExact) {
  const std::size_t n = GetParam();
  constexpr std::size_t kCanary = 256;
  HostBuffer src(dev, n, DmaAccess::kDeviceReads);
  HostBuffer dst(dev, n + kCanary, DmaAccess::kDeviceWrites, 0xC5);
  pattern_bytes(src.data(), n, static_cast<std::uint32_t>(n));
  const std::uint32_t dev_flit = 1000;

  drv.submit(Pipeline::kDmai, h2d(1, src.iova(), dev_flit, n));
  expect_good(drv.next_rb(Pipeline::kDmai), 1, Pipeline::kDmai, n);
  drv.submit(Pipeline::kDmao, d2h(2, dst.iova(), dev_flit, n));
  expect_good(drv.next_rb(Pipeline::kDmao), 2, Pipeline::kDmao, n);

  EXPECT_EQ(0, std::memcmp(src.data(), dst.data(), n));
  for (std::size_t i = n; i < n + kCanary; ++i) ASSERT_EQ(dst.data()[i], 0xC5) << "overrun at " << i;
  // Backdoor: the bytes sit at the physical address, and nothing past them was written.
  std::vector<std::uint8_t> back(n + 128);
  dev.memory().read(dev_flit * hw::kFlitBytes, back.data(), back.size());
  EXPECT_EQ(0, std::memcmp(back.data(), src.data(), n));
  for (std::size_t i = n; i < back.size(); ++i) ASSERT_EQ(back[i], 0) << i;
  const auto c = dev.counters();
  EXPECT_EQ(c.cbs_executed[idx(Pipeline::kDmai)], 1u);
  EXPECT_EQ(c.cbs_executed[idx(Pipeline::kDmao)], 1u);
  EXPECT_EQ(c.bytes_moved, 2 * n);
}

INSTANTIATE_TEST_SUITE_P(Sizes, RefDeviceRoundTrip,
                         ::testing::Values(std::size_t{128}, std::size_t{4096 + 128}, std::size_t{4} << 20,
                                           std::size_t{1000}, std::size_t{1}, std::size_t{129},
                                           (std::size_t{1} << 20) + 77));

TEST_F(RefDeviceDma, XlatPlacesDataAndMemoryCostsOnlyWhatIsTouched) {
  constexpr std::size_t n = 4u << 20;
  HostBuffer src(dev, n, DmaAccess::kDeviceReads);
  pattern_bytes(src.data(), n, 7);
  // Segment 5 -> physical 100 GiB; device VA (5, 8192 flits) -> 100 GiB + 1 MiB.
  hw::ControlBlock cb = h2d(3, src.iova(), 8192, n);
  cb.xlat[0] = hw::XlatEntry{};
  cb.dmi.device.segment = 5;
  set_xlat(cb, 5, (100ull << 30) / hw::kFlitBytes);
  drv.submit(Pipeline::kDmai, cb);
  expect_good(drv.next_rb(Pipeline::kDmai), 3, Pipeline::kDmai, n);
  std::vector<std::uint8_t> back(n);
  dev.memory().read((100ull << 30) + (1u << 20), back.data(), n);
  EXPECT_EQ(0, std::memcmp(back.data(), src.data(), n));
  // Only the pages the copy touched, of a 128 GiB device.
  constexpr std::uint64_t kPage = spyre_dma::device_core::SparseMemory::kPageBytes;
  const std::uint64_t first = ((100ull << 30) + (1u << 20)) / kPage;
  const std::uint64_t last = ((100ull << 30) + (1u << 20) + n - 1) / kPage;
  EXPECT_EQ(dev.memory().bytes_resident(), (last - first + 1) * kPage);
}

TEST_F(RefDeviceDma, FillRepeatsPatternLittleEndian) {
  const std::size_t n = 4096 + 3;  // last flit partial, not a multiple of four
  drv.submit(Pipeline::kDmai, fill(4, 64, n, 0xDEADBEEF));
  expect_good(drv.next_rb(Pipeline::kDmai), 4, Pipeline::kDmai, n);
  std::vector<std::uint8_t> back(n + 1);
  dev.memory().read(64 * hw::kFlitBytes, back.data(), back.size());
  const std::uint8_t expect[4] = {0xEF, 0xBE, 0xAD, 0xDE};
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(back[i], expect[i % 4]) << i;
  EXPECT_EQ(back[n], 0);
}

TEST_F(RefDeviceDma, DeviceCopyIncludingOverlap) {
  const std::size_t n = 64 * 1024;
  HostBuffer src(dev, n, DmaAccess::kDeviceReads);
  HostBuffer out(dev, n, DmaAccess::kDeviceWrites);
  pattern_bytes(src.data(), n, 11);
  drv.submit(Pipeline::kDmai, h2d(1, src.iova(), 0, n));
  expect_good(drv.next_rb(Pipeline::kDmai), 1, Pipeline::kDmai, n);
  drv.submit(Pipeline::kDmai, device_copy(2, 4096, 0, n));  // disjoint
  expect_good(drv.next_rb(Pipeline::kDmai), 2, Pipeline::kDmai, n);
  drv.submit(Pipeline::kDmao, d2h(3, out.iova(), 4096, n));
  expect_good(drv.next_rb(Pipeline::kDmao), 3, Pipeline::kDmao, n);
  EXPECT_EQ(0, std::memcmp(out.data(), src.data(), n));

  // Overlapping: shift the block up by one flit (memmove semantics).
  drv.submit(Pipeline::kDmai, device_copy(4, 1, 0, n));
  expect_good(drv.next_rb(Pipeline::kDmai), 4, Pipeline::kDmai, n);
  drv.submit(Pipeline::kDmao, d2h(5, out.iova(), 1, n));
  expect_good(drv.next_rb(Pipeline::kDmao), 5, Pipeline::kDmao, n);
  EXPECT_EQ(0, std::memcmp(out.data(), src.data(), n));
}

TEST_F(RefDeviceDma, ComputeTouchesNothing) {
  drv.submit(Pipeline::kCompute, compute(9, 1'000'000'000));  // not honoured: returns at once
  expect_good(drv.next_rb(Pipeline::kCompute), 9, Pipeline::kCompute, 0);
  EXPECT_EQ(dev.memory().bytes_resident(), 0u);
  EXPECT_EQ(dev.counters().cbs_executed[idx(Pipeline::kCompute)], 1u);
}

TEST(RefDeviceCompute, HonouredDurationTakesThatLong) {
  RefDeviceConfig c;
  c.honour_compute_time = true;
  RefDevice dev(c);
  RingDriver drv(dev);
  drv.submit(Pipeline::kCompute, compute(1, 20'000'000));  // 20 ms
  const auto rb = drv.next_rb(Pipeline::kCompute);
  EXPECT_EQ(rb.status, hw::RbStatus::kGood);
  EXPECT_GE(rb.end_ns - rb.start_ns, 20'000'000u);
}

TEST(RefDeviceTimestamps, ZeroWithoutTheCapability) {
  RefDeviceConfig c;
  c.capabilities = hw::kCapFill;
  RefDevice dev(c);
  RingDriver drv(dev);
  drv.submit(Pipeline::kDmai, fill(1, 0, 128, 1));
  const auto rb = drv.next_rb(Pipeline::kDmai);
  EXPECT_EQ(rb.status, hw::RbStatus::kGood);
  EXPECT_EQ(rb.start_ns, 0u);
  EXPECT_EQ(rb.end_ns, 0u);
}

// All three pipelines at once, each with a stream of CBs, RBs consumed as they come.
TEST_F(RefDeviceDma, PipelinesRunConcurrently) {
  constexpr int kCbs = 300;
  constexpr std::size_t n = 4096;
  HostBuffer src(dev, n, DmaAccess::kDeviceReads);
  HostBuffer dst(dev, n, DmaAccess::kDeviceWrites);
  pattern_bytes(src.data(), n, 5);
  std::array<int, hw::kNumPipelines> submitted{}, done{};
  auto make = [&](Pipeline p, std::uint32_t tag) {
    switch (p) {
      case Pipeline::kDmai: return h2d(tag, src.iova(), 0, n);
      case Pipeline::kDmao: return d2h(tag, dst.iova(), 8192, n);
      default: return compute(tag, 100);
    }
  };
  Watchdog dog(20000ms, "PipelinesRunConcurrently");
  while (done[0] + done[1] + done[2] < 3 * kCbs) {
    for (unsigned p = 0; p < hw::kNumPipelines; ++p) {
      const Pipeline pl = static_cast<Pipeline>(p);
      while (submitted[p] < kCbs && submitted[p] - done[p] < 8) {
        drv.write_cb(pl, make(pl, static_cast<std::uint32_t>(submitted[p] % hw::kMaxTag + 1)));
        ++submitted[p];
      }
      drv.ring(pl);
      while (done[p] < submitted[p] && drv.rb_ready(pl)) {
        const auto rb = drv.next_rb(pl);
        ASSERT_EQ(rb.tag, static_cast<std::uint32_t>(done[p] % hw::kMaxTag + 1));
        ASSERT_EQ(rb.status, hw::RbStatus::kGood);
        ASSERT_EQ(rb.locator, pl);
        ++done[p];
      }
    }
  }
  EXPECT_EQ(dev.counters().total_cbs(), 3u * kCbs);
  EXPECT_EQ(dev.counters().total_errors(), 0u);
}

}  // namespace
