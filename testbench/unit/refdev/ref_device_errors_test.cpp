// RefDevice error RBs: malformed CBs, pipeline mismatch, byte-count limit, XLAT, device-memory and
// IOMMU faults, injected PCIe errors. Every failing CB must leave memory untouched.
#include <gtest/gtest.h>

#include <vector>

#include "ring_driver.hpp"
#include "spyre_dma/refdev/ref_device.hpp"

namespace {

using namespace device_test;
using spyre_dma::refdev::RefDevice;
using spyre_dma::refdev::RefDeviceConfig;
using spyre_dma::refdev::RefDeviceFaults;
using hw::CbField;
using hw::ErrorKind;

RefDeviceConfig small_config() {
  RefDeviceConfig c;
  c.device_memory_bytes = 1ull << 30;
  c.usable_bytes = 1ull << 30;
  c.max_cb_bytes = 1u << 20;
  return c;
}

class RefDeviceErrors : public ::testing::Test {
 protected:
  RefDevice dev{small_config()};
  RingDriver drv{dev};
  HostBuffer src{dev, 8192, DmaAccess::kDeviceReads, 0x5A};
  HostBuffer dst{dev, 8192, DmaAccess::kDeviceWrites, 0xC5};

  // Submits and expects an Error RB naming `kind`, `field` and `detail`, with memory untouched.
  void expect_error(Pipeline p, const hw::CbBytes& bytes, std::uint32_t tag, ErrorKind kind, CbField field,
                    std::uint64_t detail) {
    drv.submit(p, bytes);
    auto r = drv.wait_rb(p);
    ASSERT_TRUE(r) << "no RB";
    ASSERT_FALSE(r->error) << *r->error;
    EXPECT_EQ(r->rb.tag, tag);
    EXPECT_EQ(r->rb.status, hw::RbStatus::kError);
    EXPECT_EQ(r->rb.locator, p);
    EXPECT_EQ(r->rb.error, kind) << hw::to_string(r->rb.error);
    EXPECT_EQ(r->rb.field, field) << hw::to_string(r->rb.field);
    EXPECT_EQ(r->rb.detail, detail) << std::hex << r->rb.detail;
    EXPECT_EQ(r->rb.bytes, 0u);
    expect_untouched();
  }
  void expect_error(Pipeline p, const hw::ControlBlock& cb, ErrorKind kind, CbField field, std::uint64_t detail) {
    expect_error(p, hw::encode(cb), cb.tag, kind, field, detail);
  }
  void expect_untouched() {
    EXPECT_EQ(dev.memory().bytes_resident(), 0u);
    for (std::size_t i = 0; i < dst.size(); ++i) ASSERT_EQ(dst.data()[i], 0xC5) << i;
  }
};

std::uint64_t va(std::uint8_t seg, std::uint32_t off) { return (std::uint64_t(seg) << 27) | off; }

TEST_F(RefDeviceErrors, MalformedCbNamesFieldAndValue) {
  hw::CbBytes b = hw::encode(h2d(7, src.iova(), 0, 4096));
  hw::store_le64(b.data() + hw::kReservedOffset, 0x77);
  expect_error(Pipeline::kDmai, b, 7, ErrorKind::kMalformedCb, CbField::kReservedWord, 0x77);

  b = hw::encode(h2d(8, src.iova(), 0, 4096));
  b[hw::kXlatOffset + 8 * 3] = 0x80;  // an invalid XLAT entry with stray bits
  expect_error(Pipeline::kDmai, b, 8, ErrorKind::kMalformedCb, CbField::kXlatReserved, 0x80);

  hw::ControlBlock two = h2d(9, src.iova(), 0, 4096);
  two.cmpt = hw::ComputeSection{hw::ComputeType::kTimed, 5};
  expect_error(Pipeline::kDmai, two, ErrorKind::kMalformedCb, CbField::kSections, 2);

  hw::ControlBlock none;
  none.tag = 10;
  expect_error(Pipeline::kDmai, none, ErrorKind::kMalformedCb, CbField::kSections, 0);
}

TEST_F(RefDeviceErrors, MalformedCtrlStillAnsweredInOrder) {
  hw::CbBytes b = hw::encode(h2d(11, src.iova(), 0, 4096));
  b[0] = 0x00;  // not the contract's format byte
  drv.submit(Pipeline::kDmai, b);
  auto r = drv.wait_rb(Pipeline::kDmai);
  ASSERT_TRUE(r);
  ASSERT_FALSE(r->error);
  EXPECT_EQ(r->rb.tag, 11u);  // the raw tag bits
  EXPECT_EQ(r->rb.field, CbField::kCtrlFormat);
  EXPECT_EQ(r->rb.detail, 0u);

  // Tag 0: the RB carries tag 0, which decode_rb refuses; the engine matches it by position.
  b = hw::encode(h2d(1, src.iova(), 0, 4096));
  hw::store_le64(b.data(), hw::load_le64(b.data()) & ~0xFFFF'FF00ull);
  drv.submit(Pipeline::kDmai, b);
  r = drv.wait_rb(Pipeline::kDmai);
  ASSERT_TRUE(r);
  ASSERT_TRUE(r->error);
  EXPECT_EQ(*r->error, "tag");
  EXPECT_EQ(dev.counters().error_rbs[idx(Pipeline::kDmai)], 2u);
  expect_untouched();
}

TEST_F(RefDeviceErrors, WorkForAnotherPipeline) {
  expect_error(Pipeline::kDmao, h2d(1, src.iova(), 0, 4096), ErrorKind::kMalformedCb, CbField::kPipeline,
               static_cast<std::uint64_t>(Pipeline::kDmai));
  expect_error(Pipeline::kCompute, d2h(2, dst.iova(), 0, 4096), ErrorKind::kMalformedCb, CbField::kPipeline,
               static_cast<std::uint64_t>(Pipeline::kDmao));
  expect_error(Pipeline::kDmai, compute(3, 10), ErrorKind::kMalformedCb, CbField::kPipeline,
               static_cast<std::uint64_t>(Pipeline::kCompute));
}

TEST_F(RefDeviceErrors, ByteCountAboveMaxCbBytes) {
  const std::uint32_t flits = (1u << 20) / 128 + 1;
  hw::ControlBlock cb = fill(4, 0, std::uint64_t(flits) * 128, 1);
  expect_error(Pipeline::kDmai, cb, ErrorKind::kMalformedCb, CbField::kDmiLength, flits);
  cb = d2h(5, dst.iova(), 0, std::uint64_t(flits) * 128);
  expect_error(Pipeline::kDmao, cb, ErrorKind::kMalformedCb, CbField::kDmoLength, flits);
  // Exactly max_cb_bytes is fine.
  drv.submit(Pipeline::kDmai, fill(6, 0, 1u << 20, 1));
  EXPECT_EQ(drv.next_rb(Pipeline::kDmai).status, hw::RbStatus::kGood);
}

TEST_F(RefDeviceErrors, XlatFaults) {
  // Range past the entry: 8 flits mapped, 16 moved.
  hw::ControlBlock cb = h2d(1, src.iova(), 4, 16 * 128);
  set_xlat(cb, 0, 0, 8);
  expect_error(Pipeline::kDmai, cb, ErrorKind::kXlatFault, CbField::kDmiDeviceVa, va(0, 4));
  // Write through a read-only entry.
  cb = h2d(2, src.iova(), 0, 4096);
  set_xlat(cb, 0, 0, hw::kSegmentFlits, hw::XlatMode::kReadOnly);
  expect_error(Pipeline::kDmai, cb, ErrorKind::kXlatFault, CbField::kDmiDeviceVa, va(0, 0));
  cb = fill(3, 0, 4096, 0xFF);
  set_xlat(cb, 0, 0, hw::kSegmentFlits, hw::XlatMode::kReadOnly);
  expect_error(Pipeline::kDmai, cb, ErrorKind::kXlatFault, CbField::kDmiDeviceVa, va(0, 0));
  // A segment without an entry.
  cb = d2h(4, dst.iova(), 12, 4096);
  cb.dmo.device.segment = 6;
  expect_error(Pipeline::kDmao, cb, ErrorKind::kXlatFault, CbField::kDmoDeviceVa, va(6, 12));
  // Device copy: the source segment is unmapped.
  cb = device_copy(5, 0, 100, 4096);
  cb.dmi.source.segment = 2;
  expect_error(Pipeline::kDmai, cb, ErrorKind::kXlatFault, CbField::kDmiSource, va(2, 100));
  // Reading (D2H) through a read-only entry is allowed.
  cb = d2h(6, dst.iova(), 0, 128);
  set_xlat(cb, 0, 0, hw::kSegmentFlits, hw::XlatMode::kReadOnly);
  drv.submit(Pipeline::kDmao, cb);
  EXPECT_EQ(drv.next_rb(Pipeline::kDmao).status, hw::RbStatus::kGood);
}

TEST_F(RefDeviceErrors, DeviceMemoryFault) {
  // The device has 1 GiB; map segment 0 onto physical 1 GiB - 2 KiB.
  const std::uint64_t base = ((1ull << 30) - 2048) / 128;
  hw::ControlBlock cb = h2d(1, src.iova(), 0, 4096, base);
  expect_error(Pipeline::kDmai, cb, ErrorKind::kDeviceMemoryFault, CbField::kDmiDeviceVa, base * 128);
  cb = device_copy(2, 0, 0, 4096);
  set_xlat(cb, 1, base);
  cb.dmi.source.segment = 1;
  expect_error(Pipeline::kDmai, cb, ErrorKind::kDeviceMemoryFault, CbField::kDmiSource, base * 128);
  cb = d2h(3, dst.iova(), 0, 4096, base);
  expect_error(Pipeline::kDmao, cb, ErrorKind::kDeviceMemoryFault, CbField::kDmoDeviceVa, base * 128);
}

TEST_F(RefDeviceErrors, IommuFaults) {
  // An IOVA nobody mapped.
  const std::uint64_t bogus = 0x7000'0000'0000ull;
  expect_error(Pipeline::kDmai, h2d(1, bogus, 0, 4096), ErrorKind::kIommuFault, CbField::kDmiHostIova, bogus);
  // A range longer than the mapping.
  expect_error(Pipeline::kDmai, h2d(2, src.iova(), 0, 8192 + 128), ErrorKind::kIommuFault,
               CbField::kDmiHostIova, src.iova());
  // A mapping the device may only read, written by D2H.
  expect_error(Pipeline::kDmao, d2h(3, src.iova(), 0, 4096), ErrorKind::kIommuFault, CbField::kDmoHostIova,
               src.iova());
  // A write-only mapping read by H2D.
  expect_error(Pipeline::kDmai, h2d(4, dst.iova(), 0, 4096), ErrorKind::kIommuFault, CbField::kDmiHostIova,
               dst.iova());
  // After unmap.
  HostBuffer gone(dev, 4096, DmaAccess::kBoth);
  const std::uint64_t iova = gone.iova();
  gone.unmap();
  expect_error(Pipeline::kDmai, h2d(5, iova, 0, 4096), ErrorKind::kIommuFault, CbField::kDmiHostIova, iova);
  EXPECT_EQ(dev.counters().error_rbs[idx(Pipeline::kDmai)], 4u);
  EXPECT_GE(dev.iommu().faults(), 5u);
}

TEST_F(RefDeviceErrors, InjectedPcieErrorsEveryNth) {
  dev.set_faults(RefDeviceFaults{false, 3});
  for (std::uint32_t tag = 1; tag <= 9; ++tag) {
    drv.submit(Pipeline::kDmao, d2h(tag, dst.iova(), 0, 128 * tag));
    const auto rb = drv.next_rb(Pipeline::kDmao);
    ASSERT_EQ(rb.tag, tag);
    if (tag % 3 == 0) {
      EXPECT_EQ(rb.status, hw::RbStatus::kError);
      EXPECT_EQ(rb.error, ErrorKind::kPcieError);
      EXPECT_EQ(rb.detail, dst.iova());
      // The destination beyond what the previous (good) CB wrote is untouched.
      EXPECT_EQ(dst.data()[128 * (tag - 1)], 0xC5);
    } else {
      EXPECT_EQ(rb.status, hw::RbStatus::kGood);
    }
  }
  EXPECT_EQ(dev.counters().injected_errors, 3u);
  dev.set_faults(RefDeviceFaults{});
  drv.submit(Pipeline::kDmao, d2h(10, dst.iova(), 0, 128));
  EXPECT_EQ(drv.next_rb(Pipeline::kDmao).status, hw::RbStatus::kGood);
}

}  // namespace
