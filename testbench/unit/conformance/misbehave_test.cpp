// Conformance: the misbehaviour modes (spyre_dma/device_core/misbehave.hpp) an engine must detect
// (docs/programming-model.md, section 13.6). Each kind shows the same violation on every backend,
// fires once, and a reset undoes what it broke.
#include "conformance.hpp"

namespace conformance {
namespace {

using spyre_dma::DmaAccess;
using dc::MisbehaveKind;

class Misbehaviour : public Conformance {
 protected:
  void SetUp() override {
    Conformance::SetUp();
    RingOptions o;
    o.rb_size = {16, 16, 16};
    ring(o);
    src_ = std::make_unique<HostBuffer>(dev(), 4096, DmaAccess::kDeviceReads, 0x42);
  }
  void submit(std::uint32_t tag) { driver().submit(Pipeline::kDmai, h2d(tag, src_->iova(), tag * 8, 256)); }
  std::uint32_t rb_pi(Pipeline p = Pipeline::kDmai) { return index(p, reg::kRbPi); }
  std::unique_ptr<HostBuffer> src_;
};

TEST_P(Misbehaviour, UnknownTagAnswersUnderATagNoCbWasGiven) {
  misbehave(MisbehaveKind::kUnknownTag, 2);
  submit(1);
  submit(2);
  EXPECT_EQ(driver().next_rb(Pipeline::kDmai).tag, 1u);
  EXPECT_EQ(driver().next_rb(Pipeline::kDmai).tag, dc::shifted_tag(2));
}

TEST_P(Misbehaviour, DuplicateRbAnswersOneCbTwice) {
  misbehave(MisbehaveKind::kDuplicateRb, 1);
  submit(5);
  EXPECT_EQ(driver().next_rb(Pipeline::kDmai).tag, 5u);
  EXPECT_EQ(driver().next_rb(Pipeline::kDmai).tag, 5u);
  EXPECT_TRUE(driver().eventually([&] { return rb_pi() == 2; }));
}

TEST_P(Misbehaviour, StaleTagAnswersUnderThePreviousCbsTag) {
  misbehave(MisbehaveKind::kStaleTag, 2);
  submit(1);
  EXPECT_EQ(driver().next_rb(Pipeline::kDmai).tag, 1u);
  submit(2);
  EXPECT_EQ(driver().next_rb(Pipeline::kDmai).tag, 1u);
}

TEST_P(Misbehaviour, GarbageStatusWritesAStatusTheContractLacks) {
  misbehave(MisbehaveKind::kGarbageStatus, 1);
  submit(1);
  const auto got = driver().wait_rb(Pipeline::kDmai);
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(got->error.has_value()) << "an RB with STATUS 15 must not decode";
}

TEST_P(Misbehaviour, WrongQueueCopiesTheRbIntoAnotherPipelinesRing) {
  misbehave(MisbehaveKind::kWrongQueue, 1);
  submit(3);
  EXPECT_EQ(driver().next_rb(Pipeline::kDmai).tag, 3u);
  const hw::ResponseBlock stray = driver().next_rb(Pipeline::kCompute);
  EXPECT_EQ(stray.tag, 3u);
  EXPECT_EQ(stray.locator, Pipeline::kCompute);
}

TEST_P(Misbehaviour, RbPiBeyondRingJumpsPastTheRingAndStopsThePipeline) {
  misbehave(MisbehaveKind::kRbPiBeyondRing, 1);
  submit(1);
  EXPECT_TRUE(driver().eventually([&] { return rb_pi() == 2 * 16 + 1; })) << "RB_PI " << rb_pi();
  submit(2);
  driver().settle();
  EXPECT_EQ(index(Pipeline::kDmai, reg::kCbCi), 1u) << "nothing fetched after the break";
}

TEST_P(Misbehaviour, CbCiBackwardsMovesTheConsumerIndexBelowTheRetired) {
  submit(1);
  ASSERT_EQ(driver().next_rb(Pipeline::kDmai).tag, 1u);
  misbehave(MisbehaveKind::kCbCiBackwards, 1);
  submit(2);
  EXPECT_TRUE(driver().eventually([&] { return index(Pipeline::kDmai, reg::kCbCi) == 0; }))
      << "CB_CI " << index(Pipeline::kDmai, reg::kCbCi);
  EXPECT_EQ(rb_pi(), 1u) << "no RB for the CB it fired at";
}

TEST_P(Misbehaviour, StopAnsweringFreezesEverythingButControl) {
  misbehave(MisbehaveKind::kStopAnswering, 1);
  submit(1);
  driver().settle();
  EXPECT_FALSE(driver().rb_ready(Pipeline::kDmai));
  dev().write32(reg::pipe(Pipeline::kDmai, reg::kIrqVector), 9);
  EXPECT_EQ(dev().read32(reg::pipe(Pipeline::kDmai, reg::kIrqVector)), 1u) << "register writes are ignored";
  reset_and_reprogram();
  submit(2);
  EXPECT_EQ(driver().next_rb(Pipeline::kDmai).tag, 2u) << "reset brings the device back";
}

TEST_P(Misbehaviour, DropRbLeavesOneCbUnansweredAndGoesOn) {
  misbehave(MisbehaveKind::kDropRb, 1);
  submit(1);
  submit(2);
  EXPECT_EQ(driver().next_rb(Pipeline::kDmai).tag, 2u) << "the next CB is answered in the dropped one's slot";
  driver().settle();
  EXPECT_EQ(rb_pi(), 1u) << "one RB for two CBs";
  EXPECT_EQ(index(Pipeline::kDmai, reg::kCbCi), 2u) << "both CBs were fetched";
}

TEST_P(Misbehaviour, RogueDmaToAnUnmappedIovaIsRefusedByTheIommu) {
  misbehave(MisbehaveKind::kRogueDma, 1, 0x7000'0000'0000ull);
  submit(1);
  const hw::ResponseBlock rb = driver().next_rb(Pipeline::kDmai);
  expect_error(rb, hw::ErrorKind::kIommuFault, hw::CbField::kDmiHostIova, 0x7000'0000'0000ull);
}

TEST_P(Misbehaviour, RogueDmaBeyondItsXlatEntryIsRefusedByXlat) {
  misbehave(MisbehaveKind::kRogueDma, 1, 0, 64 * hw::kFlitBytes);
  hw::ControlBlock cb = h2d(1, src_->iova(), 0, 256);
  cb.xlat[0].length_flits = 64;  // the CB's own range fits; moved by 64 flits it does not
  driver().submit(Pipeline::kDmai, cb);
  expect_error(driver().next_rb(Pipeline::kDmai), hw::ErrorKind::kXlatFault, hw::CbField::kDmiDeviceVa, 64);
}

TEST_P(Misbehaviour, AMisbehaviourFiresOnceAtItsCb) {
  misbehave(MisbehaveKind::kUnknownTag, 2);
  for (std::uint32_t t = 1; t <= 4; ++t) submit(t);
  std::vector<std::uint32_t> tags;
  for (int i = 0; i < 4; ++i) tags.push_back(driver().next_rb(Pipeline::kDmai).tag);
  EXPECT_EQ(tags, (std::vector<std::uint32_t>{1, dc::shifted_tag(2), 3, 4}));
}

INSTANTIATE_TEST_SUITE_P(Backends, Misbehaviour, ::testing::ValuesIn(backends_under_test()), backend_label);

}  // namespace
}  // namespace conformance
