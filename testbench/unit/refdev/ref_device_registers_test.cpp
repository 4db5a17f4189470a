// RefDevice BAR0: identification, capabilities, depths, access widths, unassigned and
// out-of-range offsets, configuration checks.
#include <gtest/gtest.h>

#include "ring_driver.hpp"
#include "spyre_dma/refdev/ref_device.hpp"

namespace {

using namespace device_test;
using spyre_dma::refdev::RefDevice;
using spyre_dma::refdev::RefDeviceConfig;
namespace reg = hw::reg;

TEST(RefDeviceRegisters, Identification) {
  RefDevice dev;
  EXPECT_EQ(dev.read32(reg::kId), (0x06a7u << 16) | 0x1014u);
  EXPECT_EQ(dev.read32(reg::kVersion), hw::kContractVersion);
  const std::uint64_t caps = hw::kCapFill | hw::kCapDeviceCopy | hw::kCapCompute | hw::kCapTimestamps;
  EXPECT_EQ(dev.read64(reg::kCapabilities_64), caps);
  EXPECT_EQ(dev.read32(reg::kCapabilities_64), static_cast<std::uint32_t>(caps));
  EXPECT_EQ(dev.read32(reg::kCapabilities_64 + 4), 0u);
  EXPECT_EQ(dev.read32(reg::kDepthCompute), 256u);
  EXPECT_EQ(dev.read32(reg::kDepthDmai), 1024u);
  EXPECT_EQ(dev.read32(reg::kDepthDmao), 1024u);
  EXPECT_EQ(dev.read32(reg::kMaxCbBytes), 64u << 20);
  EXPECT_EQ(dev.read32(reg::kNumTags), hw::kMaxTag);
  EXPECT_EQ(dev.read64(reg::kDeviceMemBytes_64), 128ull << 30);
  EXPECT_EQ(dev.read64(reg::kDeviceMemUsable_64), 112ull << 30);
  EXPECT_EQ(dev.read32(reg::kDeviceMemBytes_64 + 4), 32u);  // high half of 128 GiB

  const auto d = dev.describe();
  EXPECT_EQ(d.backend, "refdev");
  EXPECT_EQ(d.progress, spyre_dma::Progress::kSelfTimed);
  EXPECT_FALSE(d.name.empty());
}

TEST(RefDeviceRegisters, ConfiguredValuesAppear) {
  RefDeviceConfig c;
  c.device_memory_bytes = 1ull << 30;
  c.usable_bytes = 1ull << 29;
  c.depth = {8, 16, 32};
  c.max_cb_bytes = 4096;
  c.capabilities = hw::kCapFill;
  RefDevice dev(c);
  EXPECT_EQ(dev.read32(reg::kDepthCompute), 8u);
  EXPECT_EQ(dev.read32(reg::kDepthDmai), 16u);
  EXPECT_EQ(dev.read32(reg::kDepthDmao), 32u);
  EXPECT_EQ(dev.read32(reg::kMaxCbBytes), 4096u);
  EXPECT_EQ(dev.read64(reg::kCapabilities_64), hw::kCapFill);
  EXPECT_EQ(dev.read64(reg::kDeviceMemBytes_64), 1ull << 30);
  EXPECT_EQ(dev.read64(reg::kDeviceMemUsable_64), 1ull << 29);
  EXPECT_EQ(dev.memory().size(), 1ull << 30);
}

TEST(RefDeviceRegisters, ConfigurationIsChecked) {
  RefDeviceConfig c;
  c.depth[1] = 1000;
  EXPECT_THROW(RefDevice{c}, std::invalid_argument);
  c = RefDeviceConfig{};
  c.usable_bytes = c.device_memory_bytes + 1;
  EXPECT_THROW(RefDevice{c}, std::invalid_argument);
  c = RefDeviceConfig{};
  c.max_cb_bytes = 0;
  EXPECT_THROW(RefDevice{c}, std::invalid_argument);
}

TEST(RefDeviceRegisters, TimestampAdvances) {
  RefDevice dev;
  const std::uint64_t a = dev.read64(reg::kTimestampNs_64);
  std::this_thread::sleep_for(2ms);
  const std::uint64_t b = dev.read64(reg::kTimestampNs_64);
  EXPECT_GE(b - a, 1'000'000u);
}

TEST(RefDeviceRegisters, UnassignedReadZeroWritesIgnored) {
  RefDevice dev;
  for (std::uint64_t off : std::initializer_list<std::uint64_t>{0x0040, 0x00FC, 0x0200, 0x0FFC, reg::pipe(Pipeline::kDmai, 0x3C),
                            reg::pipe(Pipeline::kDmao, 0xFC), 0x1300, reg::kBar0Bytes - 4}) {
    dev.write32(off, 0xFFFF'FFFF);
    EXPECT_EQ(dev.read32(off), 0u) << std::hex << off;
  }
  dev.write32(reg::kId, 0);  // read-only registers ignore writes
  EXPECT_EQ(dev.read32(reg::kId), (0x06a7u << 16) | 0x1014u);
  dev.write64(reg::kDeviceMemBytes_64, 5);
  EXPECT_EQ(dev.read64(reg::kDeviceMemBytes_64), 128ull << 30);
  dev.write32(reg::pipe(Pipeline::kDmai, reg::kCbCi), 7);
  EXPECT_EQ(dev.read32(reg::pipe(Pipeline::kDmai, reg::kCbCi)), 0u);
  // Misaligned accesses read zero and count as bad accesses.
  const auto before = dev.counters().bad_register_accesses;
  EXPECT_EQ(dev.read32(reg::kId + 2), 0u);
  EXPECT_GT(dev.counters().bad_register_accesses, before);
}

TEST(RefDeviceRegisters, OutOfRangeThrows) {
  RefDevice dev;
  EXPECT_THROW(dev.read32(reg::kBar0Bytes), std::out_of_range);
  EXPECT_THROW(dev.read32(reg::kBar0Bytes - 2), std::out_of_range);
  EXPECT_THROW(dev.read64(reg::kBar0Bytes - 4), std::out_of_range);
  EXPECT_THROW(dev.write32(reg::kBar0Bytes, 1), std::out_of_range);
  EXPECT_THROW(dev.write64(~0ull, 1), std::out_of_range);
  EXPECT_NO_THROW(dev.read64(reg::kBar0Bytes - 8));
}

TEST(RefDeviceRegisters, PipelineRegistersAndWidths) {
  RefDevice dev;
  const std::uint64_t base = reg::pipe(Pipeline::kDmao, reg::kCbRingBase_64);
  dev.write32(base, 0x2000'3000);  // 64-bit register written as two halves
  dev.write32(base + 4, 0x10);
  EXPECT_EQ(dev.read64(base), 0x10'2000'3000ull);
  dev.write64(reg::pipe(Pipeline::kDmao, reg::kRbRingBase_64), 0xABCD'0000'1000ull);
  EXPECT_EQ(dev.read32(reg::pipe(Pipeline::kDmao, reg::kRbRingBase_64) + 4), 0xABCDu);
  // Other pipelines are untouched.
  EXPECT_EQ(dev.read64(reg::pipe(Pipeline::kDmai, reg::kCbRingBase_64)), 0u);
  dev.write32(reg::pipe(Pipeline::kCompute, reg::kCbRingSize), 64);
  dev.write32(reg::pipe(Pipeline::kCompute, reg::kIrqVector), 5);
  dev.write32(reg::pipe(Pipeline::kCompute, reg::kQueueControl), 0xFF);
  EXPECT_EQ(dev.read32(reg::pipe(Pipeline::kCompute, reg::kCbRingSize)), 64u);
  EXPECT_EQ(dev.read32(reg::pipe(Pipeline::kCompute, reg::kIrqVector)), 5u);
  EXPECT_EQ(dev.read32(reg::pipe(Pipeline::kCompute, reg::kQueueControl)), hw::kQueueEnable);
  // A 64-bit access to 32-bit registers covers two of them.
  dev.write64(reg::pipe(Pipeline::kCompute, reg::kIrqEnable), (7ull << 32) | 1);
  EXPECT_EQ(dev.read32(reg::pipe(Pipeline::kCompute, reg::kIrqEnable)), 1u);
  EXPECT_EQ(dev.read32(reg::pipe(Pipeline::kCompute, reg::kIrqVector)), 7u);
}

TEST(RefDeviceRegisters, ControlAndStatus) {
  RefDevice dev;
  EXPECT_EQ(dev.read32(reg::kStatus), 0u);  // not enabled yet
  dev.write32(reg::kControl, hw::kControlEnable);
  EXPECT_EQ(dev.read32(reg::kControl), hw::kControlEnable);
  EXPECT_EQ(dev.read32(reg::kStatus), hw::kStatusReady);
  dev.write32(reg::kControl, 0);
  EXPECT_EQ(dev.read32(reg::kStatus), 0u);
  dev.write32(reg::kControl, hw::kControlEnable | hw::kControlReset);  // reset self-clears
  EXPECT_EQ(dev.read32(reg::kControl), hw::kControlEnable);
  EXPECT_EQ(dev.read32(reg::kStatus), hw::kStatusReady);
  EXPECT_EQ(dev.counters().resets, 1u);
}

}  // namespace
