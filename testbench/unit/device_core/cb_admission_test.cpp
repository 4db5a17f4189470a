// CB admission of the device core: the order of the checks and the RB fields each one reports,
// with a real IOMMU and device memory layouts.
#include <gtest/gtest.h>

#include <array>

#include "spyre_dma/device_core/cb_admission.hpp"

namespace {

namespace dc = spyre_dma::device_core;
namespace hw = spyre_dma::hw;
using hw::CbField;
using hw::ErrorKind;

hw::ControlBlock h2d(std::uint64_t iova, std::uint64_t bytes) {
  hw::ControlBlock cb;
  cb.tag = 1;
  cb.dmi.type = hw::DmaType::kImmediate;
  cb.dmi.host_iova_flits = iova / hw::kFlitBytes;
  cb.dmi.length_flits = static_cast<std::uint32_t>(hw::flits_for(bytes));
  cb.xlat[0] = hw::XlatEntry{hw::XlatMode::kReadWrite, 0, static_cast<std::uint32_t>(hw::kSegmentFlits)};
  return cb;
}

hw::CbDecodeResult decoded(const hw::ControlBlock& cb) { return hw::decode_cb(hw::encode(cb).data()); }

class Admission : public ::testing::Test {
 protected:
  // Page aligned, as the engine's buffers are: CBs carry IOVAs in 128-byte flits.
  alignas(4096) std::array<std::uint8_t, 8192> host{};
  dc::Iommu iommu;
  std::uint64_t iova = iommu.map(host.data(), host.size(), spyre_dma::DmaAccess::kDeviceReads);
  dc::FlatMemory memory{1u << 20};
};

TEST_F(Admission, AGoodCopyIsAdmittedWithItsRangesAndAPinnedWindow) {
  EXPECT_FALSE(dc::admit(decoded(h2d(iova, 4096)), hw::Pipeline::kDmai, 1u << 20).has_value());
  dc::CheckedCb c = dc::check_work(h2d(iova, 4096), memory, &iommu);
  ASSERT_FALSE(c.rejected.has_value());
  EXPECT_EQ(c.work.kind, dc::CbWork::Kind::kHostToDevice);
  EXPECT_EQ(c.work.bytes, 4096u);
  EXPECT_EQ(c.work.window.host(), host.data());
}

TEST_F(Admission, ThePipelineComesBeforeTheLength) {
  const auto r = dc::admit(decoded(h2d(iova, 2u << 20)), hw::Pipeline::kDmao, 1u << 20);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->field, CbField::kPipeline);
}

TEST_F(Admission, MaxCbBytesBoundsEveryDmiType) {
  hw::ControlBlock fill = h2d(iova, 2u << 20);
  fill.dmi.type = hw::DmaType::kMemoryFill;
  fill.dmi.host_iova_flits = 0;
  const auto r = dc::admit(decoded(fill), hw::Pipeline::kDmai, 1u << 20);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->field, CbField::kDmiLength);
  EXPECT_EQ(r->detail, hw::flits_for(2u << 20));
}

TEST_F(Admission, XlatThenBoundsThenTheIommu) {
  hw::ControlBlock cb = h2d(0x7000'0000'0000ull, 4096);
  cb.xlat[0].length_flits = 1;
  EXPECT_EQ(dc::check_work(cb, memory, &iommu).rejected->error, ErrorKind::kXlatFault);
  cb.xlat[0] = hw::XlatEntry{hw::XlatMode::kReadWrite, (1u << 20) / hw::kFlitBytes, 64};
  const auto bounds = dc::check_work(cb, memory, &iommu).rejected;
  EXPECT_EQ(bounds->error, ErrorKind::kDeviceMemoryFault);
  EXPECT_EQ(bounds->detail, 1u << 20);
  cb.xlat[0].base_flits = 0;
  const auto refused = dc::check_work(cb, memory, &iommu).rejected;
  EXPECT_EQ(refused->error, ErrorKind::kIommuFault);
  EXPECT_EQ(refused->field, CbField::kDmiHostIova);
  EXPECT_EQ(refused->detail, 0x7000'0000'0000ull);
}

TEST_F(Admission, WithoutAnIommuTheHostSideIsLeftToTheDataPath) {
  const dc::CheckedCb c = dc::check_work(h2d(0x7000'0000'0000ull, 4096), memory, nullptr);
  EXPECT_FALSE(c.rejected.has_value());
  EXPECT_EQ(c.work.iova, 0x7000'0000'0000ull);
}

TEST_F(Admission, TheRawCtrlBitsSurviveAMalformedCb) {
  hw::CbBytes raw = hw::encode(h2d(iova, 128));
  raw[0] = 0x17;  // a foreign format byte
  hw::store_le64(raw.data(), (hw::load_le64(raw.data()) & ~0xFF'FFFF'00ull) | (3ull << 32) | (0x1234ull << 8));
  const dc::CbControl c = dc::control_bits(raw.data());
  EXPECT_EQ(c.tag, 0x1234u);
  EXPECT_TRUE(c.barrier);
  EXPECT_TRUE(c.interrupt);
}

}  // namespace
