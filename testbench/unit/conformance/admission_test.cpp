// Conformance: CB admission (docs/programming-model.md, sections 3.7, 4 and 13): every rejection,
// with its RB fields, and that a rejected CB touches no memory.
#include "conformance.hpp"

namespace conformance {
namespace {

using spyre_dma::DmaAccess;
using hw::CbField;
using hw::ErrorKind;

class Admission : public Conformance {
 protected:
  void SetUp() override {
    Conformance::SetUp();
    ring();
    src_ = std::make_unique<HostBuffer>(dev(), 8192, DmaAccess::kDeviceReads, 0x5A);
    dst_ = std::make_unique<HostBuffer>(dev(), 8192, DmaAccess::kDeviceWrites, 0xEE);
  }
  hw::ControlBlock good_h2d(std::uint32_t tag = 1) { return h2d(tag, src_->iova(), 0, 1024); }
  // The raw bytes of a valid H2D with the 64-bit word at `offset` changed by `patch`.
  template <class Patch>
  hw::CbBytes patched(Patch patch, std::size_t offset) {
    hw::CbBytes raw = hw::encode(good_h2d(9));
    hw::store_le64(raw.data() + offset, patch(hw::load_le64(raw.data() + offset)));
    return raw;
  }
  std::unique_ptr<HostBuffer> src_, dst_;
};

TEST_P(Admission, AForeignFormatByteIsAMalformedCbAnsweredUnderItsRawTag) {
  const hw::ResponseBlock rb = run_cb(Pipeline::kDmai, patched([](std::uint64_t w) { return (w & ~0xFFull) | 0x17; }, 0));
  expect_error(rb, ErrorKind::kMalformedCb, CbField::kCtrlFormat, 0x17);
  EXPECT_EQ(rb.tag, 9u);
}

TEST_P(Admission, ATagOfZeroIsAnsweredUnderTagZero) {
  driver().submit(Pipeline::kDmai, patched([](std::uint64_t w) { return w & ~0xFF'FF'FF00ull; }, 0));
  const auto got = driver().wait_rb(Pipeline::kDmai);
  ASSERT_TRUE(got.has_value()) << "no RB";
  EXPECT_TRUE(got->error.has_value()) << "tag 0 is outside the tags an RB may carry";
  // The fields as written (the decoder stops at the tag): slot 0 of the RB ring.
  const std::uint8_t* slot = driver().rb_ring(Pipeline::kDmai).data();
  const std::uint64_t w0 = hw::load_le64(slot), w1 = hw::load_le64(slot + 8);
  EXPECT_EQ(w0 & 0xFF'FFFFu, 0u) << "tag";
  EXPECT_EQ((w0 >> 24) & 0xFu, static_cast<std::uint64_t>(hw::RbStatus::kError));
  EXPECT_EQ(w1 & 0xFFFFu, static_cast<std::uint64_t>(ErrorKind::kMalformedCb));
  EXPECT_EQ((w1 >> 16) & 0xFFFFu, static_cast<std::uint64_t>(CbField::kCtrlTag));
}

TEST_P(Admission, ReservedCtrlBitsAreMalformed) {
  expect_error(run_cb(Pipeline::kDmai, patched([](std::uint64_t w) { return w | (1ull << 40); }, 0)),
               ErrorKind::kMalformedCb, CbField::kCtrlReserved);
}

TEST_P(Admission, ANonzeroReservedWordIsMalformedWithItsValue) {
  expect_error(run_cb(Pipeline::kDmai, patched([](std::uint64_t) { return 0xC0FFEEull; }, hw::kReservedOffset)),
               ErrorKind::kMalformedCb, CbField::kReservedWord, 0xC0FFEEull);
}

TEST_P(Admission, ACbWithNoWorkIsMalformed) {
  hw::ControlBlock cb;
  cb.tag = 3;
  expect_error(run_cb(Pipeline::kDmai, cb), ErrorKind::kMalformedCb, CbField::kSections);
}

TEST_P(Admission, ACbWithTwoSectionsOfWorkIsMalformed) {
  hw::ControlBlock cb = good_h2d(3);
  cb.cmpt = hw::ComputeSection{hw::ComputeType::kTimed, 10};
  expect_error(run_cb(Pipeline::kDmai, cb), ErrorKind::kMalformedCb, CbField::kSections);
}

TEST_P(Admission, DeviceWritesOnTheDmaoQueueAreOnTheWrongPipeline) {
  expect_error(run_cb(Pipeline::kDmao, good_h2d()), ErrorKind::kMalformedCb, CbField::kPipeline,
               static_cast<std::uint64_t>(Pipeline::kDmai));
}

TEST_P(Admission, ComputeOnTheDmaiQueueIsOnTheWrongPipeline) {
  expect_error(run_cb(Pipeline::kDmai, compute(4, 10)), ErrorKind::kMalformedCb, CbField::kPipeline,
               static_cast<std::uint64_t>(Pipeline::kCompute));
}

// A TIMED duration above the longest a CB may carry (hw::kMaxComputeNs) is malformed on every
// backend alike: the decoder refuses it before any device adds it to its clock.
TEST_P(Admission, AComputeDurationAboveTheLongestIsMalformedWithItsValue) {
  expect_error(run_cb(Pipeline::kCompute, compute(4, hw::kMaxComputeNs + 1)), ErrorKind::kMalformedCb,
               CbField::kCmptDuration, hw::kMaxComputeNs + 1);
}

TEST_P(Admission, AnH2dAboveMaxCbBytesIsRejectedWithItsLength) {
  const std::uint64_t bytes = std::uint64_t{max_cb_bytes()} + hw::kFlitBytes;
  expect_error(run_cb(Pipeline::kDmai, h2d(1, src_->iova(), 0, bytes)), ErrorKind::kMalformedCb, CbField::kDmiLength,
               hw::flits_for(bytes));
}

TEST_P(Admission, AFillAboveMaxCbBytesIsRejectedWithItsLength) {
  const std::uint64_t bytes = std::uint64_t{max_cb_bytes()} + hw::kFlitBytes;
  expect_error(run_cb(Pipeline::kDmai, fill(1, 0, bytes, 0xAB)), ErrorKind::kMalformedCb, CbField::kDmiLength,
               hw::flits_for(bytes));
}

TEST_P(Admission, ADeviceCopyAboveMaxCbBytesIsRejectedWithItsLength) {
  const std::uint64_t bytes = std::uint64_t{max_cb_bytes()} + hw::kFlitBytes;
  expect_error(run_cb(Pipeline::kDmai, device_copy(1, 0, 0, bytes)), ErrorKind::kMalformedCb, CbField::kDmiLength,
               hw::flits_for(bytes));
}

TEST_P(Admission, AD2hAboveMaxCbBytesIsRejectedWithItsLength) {
  const std::uint64_t bytes = std::uint64_t{max_cb_bytes()} + hw::kFlitBytes;
  expect_error(run_cb(Pipeline::kDmao, d2h(1, dst_->iova(), 0, bytes)), ErrorKind::kMalformedCb, CbField::kDmoLength,
               hw::flits_for(bytes));
}

TEST_P(Admission, AnInvalidXlatEntryIsAnXlatFaultNamingTheVa) {
  hw::ControlBlock cb = good_h2d();
  cb.dmi.device = hw::DeviceVa{2, 5};  // segment 2 has no entry
  expect_error(run_cb(Pipeline::kDmai, cb), ErrorKind::kXlatFault, CbField::kDmiDeviceVa, (2ull << 27) | 5);
}

TEST_P(Admission, ARangeBeyondItsXlatEntryIsAnXlatFault) {
  hw::ControlBlock cb = good_h2d();
  cb.xlat[0].length_flits = 4;  // the H2D needs 8 flits
  expect_error(run_cb(Pipeline::kDmai, cb), ErrorKind::kXlatFault, CbField::kDmiDeviceVa, 0);
}

TEST_P(Admission, AWriteThroughAReadOnlyEntryIsAnXlatFault) {
  hw::ControlBlock cb = good_h2d();
  cb.xlat[0].mode = hw::XlatMode::kReadOnly;
  expect_error(run_cb(Pipeline::kDmai, cb), ErrorKind::kXlatFault, CbField::kDmiDeviceVa);
}

TEST_P(Admission, AReadThroughAReadOnlyEntryIsAllowed) {
  hw::ControlBlock cb = d2h(2, dst_->iova(), 0, 512);
  cb.xlat[0].mode = hw::XlatMode::kReadOnly;
  const hw::ResponseBlock rb = run_cb(Pipeline::kDmao, cb);
  EXPECT_EQ(rb.status, hw::RbStatus::kGood);
  EXPECT_EQ(rb.bytes, 512u);
}

TEST_P(Admission, ARangeBeyondDeviceMemoryIsADeviceMemoryFaultNamingThePhysicalAddress) {
  const std::uint64_t base_flits = memory_bytes() / hw::kFlitBytes;
  const hw::ControlBlock cb = h2d(1, src_->iova(), 0, 1024, base_flits);
  expect_error(run_cb(Pipeline::kDmai, cb), ErrorKind::kDeviceMemoryFault, CbField::kDmiDeviceVa, memory_bytes());
}

TEST_P(Admission, ADeviceCopySourceOutsideItsEntryIsAnXlatFaultOnTheSource) {
  hw::ControlBlock cb = device_copy(1, 0, 64, 1024);
  cb.dmi.source = hw::DeviceVa{3, 0};
  expect_error(run_cb(Pipeline::kDmai, cb), ErrorKind::kXlatFault, CbField::kDmiSource, 3ull << 27);
}

TEST_P(Admission, AnUnmappedHostIovaIsAnIommuFaultNamingIt) {
  const std::uint64_t iova = 0x7000'0000'0000ull;
  expect_error(run_cb(Pipeline::kDmai, h2d(1, iova, 0, 1024)), ErrorKind::kIommuFault, CbField::kDmiHostIova, iova);
}

TEST_P(Admission, AD2hIntoAReadOnlyMappingIsAnIommuFaultAndWritesNothing) {
  expect_error(run_cb(Pipeline::kDmao, d2h(1, src_->iova(), 0, 1024)), ErrorKind::kIommuFault, CbField::kDmoHostIova,
               src_->iova());
  for (std::size_t i = 0; i < 1024; ++i) ASSERT_EQ(src_->data()[i], 0x5A) << i;
}

TEST_P(Admission, AnH2dFromAWriteOnlyMappingIsAnIommuFault) {
  expect_error(run_cb(Pipeline::kDmai, h2d(1, dst_->iova(), 0, 1024)), ErrorKind::kIommuFault, CbField::kDmiHostIova,
               dst_->iova());
}

TEST_P(Admission, ARangePastItsMappingIsAnIommuFault) {
  expect_error(run_cb(Pipeline::kDmai, h2d(1, src_->iova() + 4096, 0, 8192)), ErrorKind::kIommuFault,
               CbField::kDmiHostIova);
}

TEST_P(Admission, ARejectedCbTouchesNoDeviceMemory) {
  const std::vector<std::uint8_t> before = backdoor(0, 4096);
  hw::ControlBlock cb = fill(1, 0, 4096, 0xA5A5A5A5);
  cb.xlat[0].length_flits = 8;  // the fill needs 32 flits
  expect_error(run_cb(Pipeline::kDmai, cb), ErrorKind::kXlatFault, CbField::kDmiDeviceVa);
  EXPECT_EQ(backdoor(0, 4096), before);
}

TEST_P(Admission, AMalformedCbStillHonoursItsPlaceInTheRing) {
  driver().submit(Pipeline::kDmai, good_h2d(1));
  hw::ControlBlock bad;
  bad.tag = 2;
  driver().submit(Pipeline::kDmai, bad);
  driver().submit(Pipeline::kDmai, good_h2d(3));
  EXPECT_EQ(driver().next_rb(Pipeline::kDmai).status, hw::RbStatus::kGood);
  const hw::ResponseBlock rb = driver().next_rb(Pipeline::kDmai);
  EXPECT_EQ(rb.tag, 2u);
  EXPECT_EQ(rb.error, ErrorKind::kMalformedCb);
  EXPECT_EQ(driver().next_rb(Pipeline::kDmai).tag, 3u);
}

INSTANTIATE_TEST_SUITE_P(Backends, Admission, ::testing::ValuesIn(backends_under_test()), backend_label);

}  // namespace
}  // namespace conformance
