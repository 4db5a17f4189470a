// Conformance: what a good CB does (docs/programming-model.md, sections 3.4 to 6, 8 and 9): bytes
// moved exactly, XLAT onto physical memory, fills, device copies, COMPUTE, RB fields, interrupts
// (and ending a wait for one), and the device's IOMMU as the engine maps host memory through it.
#include <chrono>
#include <numeric>
#include <thread>

#include "conformance.hpp"

namespace conformance {
namespace {

using spyre_dma::DmaAccess;

class Data : public Conformance {
 protected:
  void SetUp() override {
    Conformance::SetUp();
    ring();
  }
};

TEST_P(Data, AnH2dThenAD2hRoundTripsByteExact) {
  HostBuffer src(dev(), 65536, DmaAccess::kDeviceReads), dst(dev(), 65536, DmaAccess::kDeviceWrites);
  pattern_bytes(src.data(), src.size(), 1);
  const hw::ResponseBlock in = run_cb(Pipeline::kDmai, h2d(1, src.iova(), 0, 65536));
  const hw::ResponseBlock out = run_cb(Pipeline::kDmao, d2h(2, dst.iova(), 0, 65536));
  ASSERT_EQ(in.status, hw::RbStatus::kGood);
  ASSERT_EQ(out.status, hw::RbStatus::kGood);
  EXPECT_EQ(in.bytes, 65536u);
  EXPECT_EQ(out.bytes, 65536u);
  EXPECT_EQ(std::memcmp(src.data(), dst.data(), 65536), 0);
}

TEST_P(Data, APartialLastFlitMovesExactlyItsBytes) {
  HostBuffer src(dev(), 4096, DmaAccess::kDeviceReads), dst(dev(), 4096, DmaAccess::kDeviceWrites, 0xEE);
  pattern_bytes(src.data(), src.size(), 2);
  ASSERT_EQ(run_cb(Pipeline::kDmai, h2d(1, src.iova(), 0, 4096)).bytes, 4096u);
  const hw::ResponseBlock rb = run_cb(Pipeline::kDmao, d2h(2, dst.iova(), 0, 200));
  EXPECT_EQ(rb.bytes, 200u);
  EXPECT_EQ(std::memcmp(src.data(), dst.data(), 200), 0);
  for (std::size_t i = 200; i < 4096; ++i) ASSERT_EQ(dst.data()[i], 0xEE) << "byte " << i << " past the transfer";
}

TEST_P(Data, XlatPlacesTheRangeAtItsPhysicalBase) {
  HostBuffer src(dev(), 4096, DmaAccess::kDeviceReads);
  pattern_bytes(src.data(), src.size(), 3);
  constexpr std::uint64_t kBaseFlits = 1024;  // 128 KiB in
  ASSERT_EQ(run_cb(Pipeline::kDmai, h2d(1, src.iova(), 4, 4096, kBaseFlits)).status, hw::RbStatus::kGood);
  const std::vector<std::uint8_t> got = backdoor((kBaseFlits + 4) * hw::kFlitBytes, 4096);
  EXPECT_EQ(std::memcmp(got.data(), src.data(), 4096), 0);
}

TEST_P(Data, AD2hReadsWhatTheBackdoorWrote) {
  std::vector<std::uint8_t> bytes(4096);
  pattern_bytes(bytes.data(), bytes.size(), 4);
  instance().memory->backdoor_write(8192, bytes.data(), bytes.size());
  HostBuffer dst(dev(), 4096, DmaAccess::kDeviceWrites);
  ASSERT_EQ(run_cb(Pipeline::kDmao, d2h(1, dst.iova(), 64, 4096)).status, hw::RbStatus::kGood);
  EXPECT_EQ(std::memcmp(dst.data(), bytes.data(), 4096), 0);
}

TEST_P(Data, AFillReplicatesItsPatternFromTheRangeStart) {
  const hw::ResponseBlock rb = run_cb(Pipeline::kDmai, fill(1, 8, 1001, 0x44332211));
  ASSERT_EQ(rb.status, hw::RbStatus::kGood);
  EXPECT_EQ(rb.bytes, 1001u);
  const std::vector<std::uint8_t> got = backdoor(8 * hw::kFlitBytes, 1008);
  for (std::size_t i = 0; i < 1001; ++i) ASSERT_EQ(got[i], static_cast<std::uint8_t>(0x11 + i % 4 * 0x11)) << i;
  for (std::size_t i = 1001; i < 1008; ++i) EXPECT_EQ(got[i], 0u) << "past the fill";
}

TEST_P(Data, ADeviceCopyCopiesBetweenDeviceRanges) {
  std::vector<std::uint8_t> bytes(3000);
  pattern_bytes(bytes.data(), bytes.size(), 5);
  instance().memory->backdoor_write(0, bytes.data(), bytes.size());
  const hw::ResponseBlock rb = run_cb(Pipeline::kDmai, device_copy(1, 512, 0, 3000));
  ASSERT_EQ(rb.status, hw::RbStatus::kGood);
  EXPECT_EQ(rb.bytes, 3000u);
  EXPECT_EQ(backdoor(512 * hw::kFlitBytes, 3000), bytes);
}

TEST_P(Data, AComputeCbRetiresGoodAndMovesNothing) {
  const hw::ResponseBlock rb = run_cb(Pipeline::kCompute, compute(9, 1000));
  EXPECT_EQ(rb.tag, 9u);
  EXPECT_EQ(rb.status, hw::RbStatus::kGood);
  EXPECT_EQ(rb.locator, Pipeline::kCompute);
  EXPECT_EQ(rb.bytes, 0u);
}

TEST_P(Data, RbsCarryTheirTagLocatorAndOrderedTimestamps) {
  HostBuffer src(dev(), 4096, DmaAccess::kDeviceReads);
  const hw::ResponseBlock a = run_cb(Pipeline::kDmai, h2d(77, src.iova(), 0, 4096));
  const hw::ResponseBlock b = run_cb(Pipeline::kDmai, h2d(78, src.iova(), 32, 4096));
  EXPECT_EQ(a.tag, 77u);
  EXPECT_EQ(a.locator, Pipeline::kDmai);
  EXPECT_EQ(a.error, hw::ErrorKind::kNone);
  EXPECT_LE(a.start_ns, a.end_ns);
  EXPECT_LE(a.end_ns, b.end_ns) << "a pipeline retires in order";
}

TEST_P(Data, TheLargestCbMovesAllItsBytes) {
  // MAX_CB_BYTES, or less where an eighth of device memory (what a backend may give one segment)
  // is smaller.
  const std::uint64_t bytes = std::min<std::uint64_t>(max_cb_bytes(), memory_bytes() / hw::kNumSegments);
  const hw::ResponseBlock rb = run_cb(Pipeline::kDmai, fill(1, 0, bytes, 0x01020304));
  EXPECT_EQ(rb.status, hw::RbStatus::kGood);
  EXPECT_EQ(rb.bytes, bytes);
}

TEST_P(Data, IrqEnableSignalsThePipelineAfterEachRb) {
  dev().write32(reg::pipe(Pipeline::kDmai, reg::kIrqEnable), 1);
  HostBuffer src(dev(), 4096, DmaAccess::kDeviceReads);
  (void)driver().take_interrupts();
  ASSERT_EQ(run_cb(Pipeline::kDmai, h2d(1, src.iova(), 0, 256)).status, hw::RbStatus::kGood);
  EXPECT_TRUE(driver().eventually([&] { return (driver().take_interrupts() & 2u) != 0; }))
      << "no DMAI interrupt";
}

TEST_P(Data, TheCbInterruptBitSignalsWithoutIrqEnable) {
  HostBuffer src(dev(), 4096, DmaAccess::kDeviceReads);
  hw::ControlBlock cb = h2d(1, src.iova(), 0, 256);
  cb.interrupt = true;
  (void)driver().take_interrupts();
  ASSERT_EQ(run_cb(Pipeline::kDmai, cb).status, hw::RbStatus::kGood);
  EXPECT_TRUE(driver().eventually([&] { return (driver().take_interrupts() & 2u) != 0; }))
      << "no DMAI interrupt";
}

// Device::wake_waiter ends an interrupt wait on an idle device, the one under way or the next one
// (the engine's close relies on it): neither waits out its 10 s.
TEST_P(Data, WakeWaiterEndsAnIdleInterruptWait) {
  using Clock = std::chrono::steady_clock;
  (void)driver().take_interrupts();
  auto t0 = Clock::now();
  std::thread waiter([&] { EXPECT_EQ(dev().wait_for_interrupt(std::chrono::seconds(10)), 0u); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  dev().wake_waiter();
  waiter.join();
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5)) << "the wait under way";
  dev().wake_waiter();
  t0 = Clock::now();
  EXPECT_EQ(dev().wait_for_interrupt(std::chrono::seconds(10)), 0u);
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5)) << "the wait after the wake-up";
}

TEST_P(Data, NoInterruptIsSignalledUnlessAsked) {
  HostBuffer src(dev(), 4096, DmaAccess::kDeviceReads);
  (void)driver().take_interrupts();
  ASSERT_EQ(run_cb(Pipeline::kDmai, h2d(1, src.iova(), 0, 256)).status, hw::RbStatus::kGood);
  driver().settle();
  EXPECT_EQ(driver().take_interrupts(), 0u);
}

TEST_P(Data, AnIovaKeepsItsHostPageOffset) {
  HostBuffer page(dev(), 8192, DmaAccess::kBoth);
  const std::uint64_t iova = dev().map(page.data() + 300, 100, DmaAccess::kBoth);
  EXPECT_EQ(iova % 4096, 300u);
  dev().unmap(iova);
}

// An IOVA the host chose (VFIO's IOMMU API; a vfio-user server maps its client's memory so): data
// moves through it, and it follows map()'s rules: the host's page offset, a guard page, the IOVA
// space.
TEST_P(Data, AMappingAtAChosenIovaCarriesDataUnderMapsRules) {
  HostBuffer backing(dev(), 3 * 4096, DmaAccess::kBoth);  // memory of the right kind for the device
  std::uint8_t* host = backing.data() + 4096 + 256;
  pattern_bytes(host, 1024, 9);
  const std::uint64_t chosen = backing.iova() + (64ull << 30) + 4096 + 256;  // far from every other mapping
  // A device whose IOVAs its driver picks (vfio-user's client: the server maps at the client's
  // choice) says so with std::logic_error, as the contract allows.
  try {
    ASSERT_EQ(dev().map_at(host, 1024, DmaAccess::kDeviceReads, chosen), chosen);
  } catch (const std::invalid_argument&) {
    throw;
  } catch (const std::logic_error& e) {
    GTEST_SKIP() << e.what();
  }
  ASSERT_EQ(run_cb(Pipeline::kDmai, h2d(1, chosen, 0, 1024)).status, hw::RbStatus::kGood);
  const std::vector<std::uint8_t> got = backdoor(0, 1024);
  EXPECT_EQ(std::memcmp(got.data(), host, 1024), 0);
  // The same rules as map(): the page offset must match, the range and its guard page must be free.
  EXPECT_THROW((void)dev().map_at(host, 64, DmaAccess::kBoth, chosen + 128), std::invalid_argument);
  EXPECT_THROW((void)dev().map_at(host, 64, DmaAccess::kBoth, chosen + 4096), std::invalid_argument)
      << "the guard page after the mapping";
  EXPECT_THROW((void)dev().map_at(host, 64, DmaAccess::kBoth, 256), std::invalid_argument) << "below the IOVA space";
  EXPECT_THROW((void)dev().map_at(nullptr, 64, DmaAccess::kBoth, chosen + (1ull << 30)), std::invalid_argument);
  dev().unmap(chosen);
  EXPECT_EQ(run_cb(Pipeline::kDmai, h2d(2, chosen, 0, 1024)).error, hw::ErrorKind::kIommuFault);
}

TEST_P(Data, MapAndUnmapRefuseWhatTheyCannotDo) {
  EXPECT_THROW((void)dev().map(nullptr, 4096, DmaAccess::kBoth), std::invalid_argument);
  std::vector<std::uint8_t> host(64);
  EXPECT_THROW((void)dev().map(host.data(), 0, DmaAccess::kBoth), std::invalid_argument);
  EXPECT_THROW(dev().unmap(0x1234'5000), std::invalid_argument);
}

TEST_P(Data, AfterUnmapTheDeviceNoLongerReachesTheMemory) {
  HostBuffer src(dev(), 4096, DmaAccess::kDeviceReads);
  const std::uint64_t iova = src.iova();
  src.unmap();
  const hw::ResponseBlock rb = run_cb(Pipeline::kDmai, h2d(1, iova, 0, 1024));
  EXPECT_EQ(rb.error, hw::ErrorKind::kIommuFault);
}

TEST_P(Data, ResetKeepsDeviceMemory) {
  ASSERT_EQ(run_cb(Pipeline::kDmai, fill(1, 0, 512, 0x77777777)).status, hw::RbStatus::kGood);
  reset_and_reprogram();
  const std::vector<std::uint8_t> got = backdoor(0, 512);
  EXPECT_TRUE(std::all_of(got.begin(), got.end(), [](std::uint8_t b) { return b == 0x77; }));
}

INSTANTIATE_TEST_SUITE_P(Backends, Data, ::testing::ValuesIn(backends_under_test()), backend_label);

}  // namespace
}  // namespace conformance
