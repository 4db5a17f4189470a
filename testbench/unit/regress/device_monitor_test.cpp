// The engine-device boundary monitor, fed by hand: it must catch a tag reused while live, an RB
// for no live CB, an unmap under a live CB and a staging buffer refilled under a live H2D, and
// stay silent on a clean exchange.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <vector>

#include "device_monitor.hpp"

namespace spyre_dma::regress {
namespace {

// The inner device: records nothing, maps host pointers one to one. Only the monitor is tested.
class Inert final : public Device {
 public:
  DeviceDescription describe() const override { return {"inert", "inert", Progress::kSelfTimed}; }
  std::uint32_t read32(std::uint64_t) override { return 0; }
  void write32(std::uint64_t, std::uint32_t) override {}
  std::uint64_t read64(std::uint64_t) override { return 0; }
  void write64(std::uint64_t, std::uint64_t) override {}
  std::uint64_t map(void* host, std::size_t, DmaAccess) override { return reinterpret_cast<std::uintptr_t>(host); }
  void unmap(std::uint64_t) override {}
  std::uint32_t wait_for_interrupt(std::chrono::nanoseconds) override { return 0; }
};

class MonitorTest : public ::testing::Test {
 protected:
  static constexpr unsigned kSlots = 8;
  void SetUp() override {
    cb_ring.assign(kSlots * hw::kCbBytes, 0);
    rb_ring.assign(kSlots * hw::kRbBytes, 0);
    std::memset(data, 0x11, sizeof data);
    using namespace hw::reg;
    cb_iova = m.map(cb_ring.data(), cb_ring.size(), DmaAccess::kDeviceReads);
    rb_iova = m.map(rb_ring.data(), rb_ring.size(), DmaAccess::kBoth);
    data_iova = m.map(data, sizeof data, DmaAccess::kBoth);
    m.write64(pipe(hw::Pipeline::kDmai, kCbRingBase_64), cb_iova);
    m.write32(pipe(hw::Pipeline::kDmai, kCbRingSize), kSlots);
    m.write64(pipe(hw::Pipeline::kDmai, kRbRingBase_64), rb_iova);
    m.write32(pipe(hw::Pipeline::kDmai, kRbRingSize), kSlots);
  }
  // Puts an H2D CB of `tag` reading data[off, off + n) in the next slot and rings it.
  void h2d(std::uint32_t tag, std::uint64_t off, std::uint32_t n) {
    hw::ControlBlock cb;
    cb.tag = tag;
    cb.dmi.type = hw::DmaType::kImmediate;
    cb.dmi.length_flits = n / 128;
    cb.dmi.host_iova_flits = (data_iova + off) / 128;
    cb.xlat[0] = hw::XlatEntry{hw::XlatMode::kReadWrite, 0, 8192};
    const hw::CbBytes bytes = hw::encode(cb);
    std::memcpy(cb_ring.data() + (pi % kSlots) * hw::kCbBytes, bytes.data(), hw::kCbBytes);
    m.write32(hw::reg::pipe(hw::Pipeline::kDmai, hw::reg::kCbPi), ++pi);
  }
  // Writes an RB for `tag` in the next slot and hands it back.
  void rb(std::uint32_t tag) {
    hw::ResponseBlock r;
    r.tag = tag;
    r.locator = hw::Pipeline::kDmai;
    r.phase = hw::expected_phase(ci, kSlots);
    const hw::RbBytes bytes = hw::encode(r);
    std::memcpy(rb_ring.data() + (ci % kSlots) * hw::kRbBytes, bytes.data(), hw::kRbBytes);
    m.write32(hw::reg::pipe(hw::Pipeline::kDmai, hw::reg::kRbCi), ++ci);
  }
  std::string first() const { return f.empty() ? "" : f.list().front().message; }

  Findings f;
  DeviceMonitor m{std::make_shared<Inert>(), f};
  std::vector<std::uint8_t> cb_ring, rb_ring;
  alignas(4096) std::uint8_t data[1 << 16];  // CBs address host memory in 128-byte flits
  std::uint64_t cb_iova = 0, rb_iova = 0, data_iova = 0;
  std::uint32_t pi = 0, ci = 0;
};

TEST_F(MonitorTest, ACleanExchangeIsSilent) {
  h2d(1, 0, 4096);
  h2d(2, 4096, 4096);
  rb(1);
  rb(2);
  EXPECT_TRUE(f.empty()) << first();
  EXPECT_EQ(m.counters().cbs, 2u);
  EXPECT_EQ(m.live_cbs(), 0u);
}

TEST_F(MonitorTest, ATagReusedWhileLive) {
  h2d(5, 0, 4096);
  h2d(5, 4096, 4096);
  EXPECT_NE(first().find("reuses tag 5 while its earlier CB is live"), std::string::npos) << first();
}

TEST_F(MonitorTest, AnRbForNoLiveCb) {
  rb(9);
  EXPECT_NE(first().find("RB index 0 for tag 9, which has no live CB"), std::string::npos) << first();
}

TEST_F(MonitorTest, AnUnmapUnderALiveCb) {
  h2d(3, 0, 4096);
  m.unmap(data_iova);
  EXPECT_NE(first().find("while CB tag 3"), std::string::npos) << first();
}

TEST_F(MonitorTest, HostBytesChangingUnderALiveH2d) {
  h2d(4, 0, 4096);
  data[100] = 0x22;  // a staging buffer refilled before the device was done with it
  rb(4);
  EXPECT_NE(first().find("changed while the CB was live"), std::string::npos) << first();
}

TEST_F(MonitorTest, ACbOutsideAnyMapping) {
  h2d(6, sizeof data, 4096);  // past the mapping's end
  EXPECT_NE(first().find("unmapped host memory"), std::string::npos) << first();
}

}  // namespace
}  // namespace spyre_dma::regress
