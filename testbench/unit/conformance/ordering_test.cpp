// Conformance: the barrier rule (docs/programming-model.md, section 7): a CB with BARRIER starts
// only after every CB handed over by an earlier doorbell, on every pipeline, has retired; CBs of
// later doorbells do not hold it.
#include "conformance.hpp"

namespace conformance {
namespace {

using spyre_dma::DmaAccess;

class Ordering : public Conformance {
 protected:
  void SetUp() override {
    Conformance::SetUp();
    ring();
    src_ = std::make_unique<HostBuffer>(dev(), kBig, DmaAccess::kDeviceReads, 0x21);
    dst_ = std::make_unique<HostBuffer>(dev(), 4096, DmaAccess::kDeviceWrites);
  }
  hw::ControlBlock big_h2d(std::uint32_t tag) { return h2d(tag, src_->iova(), 0, kBig); }
  hw::ControlBlock small_d2h(std::uint32_t tag, bool barrier) {
    hw::ControlBlock cb = d2h(tag, dst_->iova(), 0, 256);
    cb.barrier = barrier;
    return cb;
  }
  static constexpr std::size_t kBig = 4u << 20;
  std::unique_ptr<HostBuffer> src_, dst_;
};

TEST_P(Ordering, ABarrierStartsAfterEarlierDoorbellsOnOtherPipelinesRetired) {
  driver().submit(Pipeline::kDmai, big_h2d(1));
  driver().submit(Pipeline::kDmao, small_d2h(2, true));
  const hw::ResponseBlock in = driver().next_rb(Pipeline::kDmai);
  const hw::ResponseBlock out = driver().next_rb(Pipeline::kDmao);
  ASSERT_EQ(in.status, hw::RbStatus::kGood);
  ASSERT_EQ(out.status, hw::RbStatus::kGood);
  EXPECT_GE(out.start_ns, in.end_ns) << "the barrier CB started before the H2D it follows retired";
}

TEST_P(Ordering, ABarrierWaitsForAnEarlierCbThatWasNotFetchedYet) {
  dev().write32(reg::pipe(Pipeline::kDmai, reg::kQueueControl), 0);
  driver().submit(Pipeline::kDmai, h2d(1, src_->iova(), 0, 4096));
  driver().submit(Pipeline::kDmao, small_d2h(2, true));
  driver().settle();
  EXPECT_FALSE(driver().rb_ready(Pipeline::kDmao)) << "the barrier CB ran before the earlier doorbell's CB";
  dev().write32(reg::pipe(Pipeline::kDmai, reg::kQueueControl), hw::kQueueEnable);
  const hw::ResponseBlock in = driver().next_rb(Pipeline::kDmai);
  const hw::ResponseBlock out = driver().next_rb(Pipeline::kDmao);
  EXPECT_EQ(out.tag, 2u);
  EXPECT_GE(out.start_ns, in.end_ns);
}

TEST_P(Ordering, ABarrierIgnoresLaterDoorbells) {
  dev().write32(reg::pipe(Pipeline::kDmai, reg::kQueueControl), 0);
  driver().submit(Pipeline::kDmao, small_d2h(1, true));
  driver().submit(Pipeline::kDmai, h2d(2, src_->iova(), 0, 4096));  // later, and held
  const hw::ResponseBlock out = driver().next_rb(Pipeline::kDmao);
  EXPECT_EQ(out.tag, 1u);
  EXPECT_EQ(out.status, hw::RbStatus::kGood);
  EXPECT_FALSE(driver().rb_ready(Pipeline::kDmai));
}

TEST_P(Ordering, AMalformedCbHonoursItsBarrierBit) {
  dev().write32(reg::pipe(Pipeline::kDmai, reg::kQueueControl), 0);
  driver().submit(Pipeline::kDmai, h2d(1, src_->iova(), 0, 4096));
  hw::ControlBlock bad;  // no work: malformed, but its CTRL asks for a barrier
  bad.tag = 2;
  bad.barrier = true;
  driver().submit(Pipeline::kDmao, bad);
  driver().settle();
  EXPECT_FALSE(driver().rb_ready(Pipeline::kDmao));
  dev().write32(reg::pipe(Pipeline::kDmai, reg::kQueueControl), hw::kQueueEnable);
  EXPECT_EQ(driver().next_rb(Pipeline::kDmai).tag, 1u);
  const hw::ResponseBlock out = driver().next_rb(Pipeline::kDmao);
  EXPECT_EQ(out.tag, 2u);
  EXPECT_EQ(out.error, hw::ErrorKind::kMalformedCb);
}

TEST_P(Ordering, WithoutABarrierPipelinesDoNotWaitForEachOther) {
  dev().write32(reg::pipe(Pipeline::kDmai, reg::kQueueControl), 0);
  driver().submit(Pipeline::kDmai, h2d(1, src_->iova(), 0, 4096));
  driver().submit(Pipeline::kDmao, small_d2h(2, false));
  EXPECT_EQ(driver().next_rb(Pipeline::kDmao).tag, 2u);
}

TEST_P(Ordering, ABarrierWaitsForEveryPipeline) {
  dev().write32(reg::pipe(Pipeline::kDmai, reg::kQueueControl), 0);
  dev().write32(reg::pipe(Pipeline::kCompute, reg::kQueueControl), 0);
  driver().submit(Pipeline::kDmai, h2d(1, src_->iova(), 0, 4096));
  driver().submit(Pipeline::kCompute, compute(2, 100));
  driver().submit(Pipeline::kDmao, small_d2h(3, true));
  dev().write32(reg::pipe(Pipeline::kDmai, reg::kQueueControl), hw::kQueueEnable);
  ASSERT_EQ(driver().next_rb(Pipeline::kDmai).tag, 1u);
  driver().settle();
  EXPECT_FALSE(driver().rb_ready(Pipeline::kDmao)) << "the COMPUTE CB of an earlier doorbell has not retired";
  dev().write32(reg::pipe(Pipeline::kCompute, reg::kQueueControl), hw::kQueueEnable);
  const hw::ResponseBlock c = driver().next_rb(Pipeline::kCompute);
  const hw::ResponseBlock out = driver().next_rb(Pipeline::kDmao);
  EXPECT_EQ(out.tag, 3u);
  EXPECT_GE(out.start_ns, c.end_ns);
}

TEST_P(Ordering, ABarrierFollowsEveryCbOfItsOwnPipelineBeforeIt) {
  driver().submit(Pipeline::kDmai, big_h2d(1));
  hw::ControlBlock second = h2d(2, src_->iova(), 0, 4096);
  second.barrier = true;
  driver().submit(Pipeline::kDmai, second);
  const hw::ResponseBlock a = driver().next_rb(Pipeline::kDmai);
  const hw::ResponseBlock b = driver().next_rb(Pipeline::kDmai);
  EXPECT_EQ(b.tag, 2u);
  EXPECT_GE(b.start_ns, a.end_ns);
}

INSTANTIATE_TEST_SUITE_P(Backends, Ordering, ::testing::ValuesIn(backends_under_test()), backend_label);

}  // namespace
}  // namespace conformance
