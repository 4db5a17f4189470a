// validate() on structured control blocks whose fields are out of range for their encodings:
// each reports the field at fault (the decoder's rejections of raw images are in
// cb_reject_test.cpp).
#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <utility>

#include "spyre_dma/hw/contract.hpp"

namespace hw = spyre_dma::hw;

namespace {

hw::ControlBlock valid_h2d() {
  hw::ControlBlock cb;
  cb.tag = 1;
  cb.dmi.type = hw::DmaType::kImmediate;
  cb.dmi.device = {1, 0};
  cb.dmi.length_flits = 4;
  cb.dmi.host_iova_flits = 0x100;
  cb.xlat[1] = {hw::XlatMode::kReadWrite, 0, 0x1000};
  return cb;
}
hw::ControlBlock valid_d2h() {
  hw::ControlBlock cb = valid_h2d();
  std::swap(cb.dmi, cb.dmo);
  return cb;
}
hw::ControlBlock valid_copy() {
  hw::ControlBlock cb = valid_h2d();
  cb.dmi.type = hw::DmaType::kDeviceCopy;
  cb.dmi.host_iova_flits = 0;
  cb.dmi.source = {2, 0x10};
  return cb;
}

::testing::AssertionResult reports(const hw::ControlBlock& cb, hw::CbField field) {
  const auto e = hw::validate(cb);
  if (!e) return ::testing::AssertionFailure() << "validate accepted it";
  if (e->field != field) {
    return ::testing::AssertionFailure() << "reported " << hw::to_string(e->field) << ", want "
                                         << hw::to_string(field);
  }
  return ::testing::AssertionSuccess();
}

}  // namespace

TEST(CbValidate, ValidCbsPass) {
  EXPECT_FALSE(hw::validate(valid_h2d()).has_value());
  EXPECT_FALSE(hw::validate(valid_d2h()).has_value());
  EXPECT_FALSE(hw::validate(valid_copy()).has_value());
}

TEST(CbValidate, Tag) {
  for (std::uint32_t tag : {0u, 32769u, 1u << 24, (1u << 24) + 1, 0xFFFFFFFFu}) {
    hw::ControlBlock cb = valid_h2d();
    cb.tag = tag;
    EXPECT_TRUE(reports(cb, hw::CbField::kCtrlTag)) << tag;
  }
}

TEST(CbValidate, LengthOutOfRange) {
  for (std::uint32_t len : {0u, 1u << 24, (1u << 24) + 5, 0xFFFFFFFFu}) {
    hw::ControlBlock cb = valid_h2d();
    cb.dmi.length_flits = len;
    EXPECT_TRUE(reports(cb, hw::CbField::kDmiLength)) << len;
    hw::ControlBlock o = valid_d2h();
    o.dmo.length_flits = len;
    EXPECT_TRUE(reports(o, hw::CbField::kDmoLength)) << len;
  }
}

TEST(CbValidate, LastFlitBytesOutOfRange) {
  for (std::uint8_t last : {128, 200, 255}) {
    hw::ControlBlock cb = valid_h2d();
    cb.dmi.last_flit_bytes = last;
    EXPECT_TRUE(reports(cb, hw::CbField::kDmiLastFlit)) << int(last);
    hw::ControlBlock o = valid_d2h();
    o.dmo.last_flit_bytes = last;
    EXPECT_TRUE(reports(o, hw::CbField::kDmoLastFlit)) << int(last);
  }
}

TEST(CbValidate, HostIovaOutOfRange) {
  for (std::uint64_t iova : {1ull << 57, ~0ull}) {
    hw::ControlBlock cb = valid_h2d();
    cb.dmi.host_iova_flits = iova;
    EXPECT_TRUE(reports(cb, hw::CbField::kDmiHostIova));
    hw::ControlBlock o = valid_d2h();
    o.dmo.host_iova_flits = iova;
    EXPECT_TRUE(reports(o, hw::CbField::kDmoHostIova));
  }
}

TEST(CbValidate, DeviceVaOutOfRange) {
  hw::ControlBlock cb = valid_h2d();
  cb.dmi.device = {8, 0};
  EXPECT_TRUE(reports(cb, hw::CbField::kDmiDeviceVa));
  cb.dmi.device = {1, 1u << 27};
  EXPECT_TRUE(reports(cb, hw::CbField::kDmiDeviceVa));
  cb.dmi.device = {1, (1u << 27) - 2};  // in range but the 4-flit range crosses the segment
  EXPECT_TRUE(reports(cb, hw::CbField::kDmiDeviceVa));
  hw::ControlBlock o = valid_d2h();
  o.dmo.device = {9, 0};
  EXPECT_TRUE(reports(o, hw::CbField::kDmoDeviceVa));
}

TEST(CbValidate, DeviceCopySourceOutOfRange) {
  hw::ControlBlock cb = valid_copy();
  cb.dmi.source = {8, 0};
  EXPECT_TRUE(reports(cb, hw::CbField::kDmiSource));
  cb.dmi.source = {2, 1u << 27};
  EXPECT_TRUE(reports(cb, hw::CbField::kDmiSource));
  cb.dmi.source = {2, (1u << 27) - 3};
  EXPECT_TRUE(reports(cb, hw::CbField::kDmiSource));
}

TEST(CbValidate, TypesOutOfRange) {
  hw::ControlBlock cb = valid_h2d();
  cb.dmi.type = static_cast<hw::DmaType>(4);
  EXPECT_TRUE(reports(cb, hw::CbField::kDmiType));
  // A value the 4-bit field would truncate into a valid type must not pass as that type.
  cb.dmi.type = static_cast<hw::DmaType>(0x11);
  EXPECT_TRUE(reports(cb, hw::CbField::kDmiType));
  cb.dmi.type = static_cast<hw::DmaType>(0x10);
  EXPECT_TRUE(reports(cb, hw::CbField::kDmiType));
  hw::ControlBlock o = valid_d2h();
  o.dmo.type = hw::DmaType::kMemoryFill;
  EXPECT_TRUE(reports(o, hw::CbField::kDmoType));
  o.dmo.type = hw::DmaType::kDeviceCopy;
  EXPECT_TRUE(reports(o, hw::CbField::kDmoType));
  hw::ControlBlock c;
  c.tag = 1;
  c.cmpt.type = static_cast<hw::ComputeType>(2);
  EXPECT_TRUE(reports(c, hw::CbField::kCmptType));
  c.cmpt.type = static_cast<hw::ComputeType>(0x11);
  EXPECT_TRUE(reports(c, hw::CbField::kCmptType));
}

TEST(CbValidate, Xlat) {
  hw::ControlBlock cb = valid_h2d();
  cb.xlat[3] = {hw::XlatMode::kReadOnly, 0, (1u << 27) + 1};
  EXPECT_TRUE(reports(cb, hw::CbField::kXlatLength));
  cb.xlat[3] = {hw::XlatMode::kReadOnly, 0, 1u << 28};  // does not fit 28 bits at all
  EXPECT_TRUE(reports(cb, hw::CbField::kXlatLength));
  cb.xlat[3] = {static_cast<hw::XlatMode>(3), 0, 1};
  EXPECT_TRUE(reports(cb, hw::CbField::kXlatMode));
  cb.xlat[3] = {static_cast<hw::XlatMode>(6), 0, 1};  // would truncate to read-write
  EXPECT_TRUE(reports(cb, hw::CbField::kXlatMode));
  // A base beyond 34 bits is caught (CbField has no base field; see the programming model).
  cb.xlat[3] = {hw::XlatMode::kReadOnly, 1ull << 34, 1};
  EXPECT_TRUE(hw::validate(cb).has_value());
}

TEST(CbValidate, SectionCount) {
  hw::ControlBlock cb = valid_h2d();
  cb.dmo = cb.dmi;
  EXPECT_TRUE(reports(cb, hw::CbField::kSections));
  hw::ControlBlock none;
  none.tag = 1;
  EXPECT_TRUE(reports(none, hw::CbField::kSections));
}

TEST(CbValidate, SkipSectionFieldsAreIgnored) {
  // A SKIP section encodes as zeros whatever its other members hold, as an invalid XLAT entry and
  // a SKIP compute section do; validate() judges the CB the bytes describe.
  hw::ControlBlock cb = valid_h2d();
  cb.dmo.length_flits = 1u << 24;
  cb.dmo.last_flit_bytes = 200;
  cb.dmo.device = {9, 1u << 27};
  cb.cmpt.duration_ns = 5;
  cb.xlat[0] = {hw::XlatMode::kInvalid, 1ull << 40, 1u << 30};
  EXPECT_FALSE(hw::validate(cb).has_value());
}
