// Conformance: the rings (docs/programming-model.md, sections 11 and 13.4): fetch and retirement
// in index order, one RB per CB, the phase bit, RB ring back-pressure, queue faults.
#include "conformance.hpp"

namespace conformance {
namespace {

using spyre_dma::DmaAccess;

class Rings : public Conformance {
 protected:
  // One small H2D on DMAI, without waiting for its RB.
  void submit_h2d(std::uint32_t tag) {
    if (!src_) src_ = std::make_unique<HostBuffer>(dev(), 4096, DmaAccess::kDeviceReads, 0x3C);
    driver().submit(Pipeline::kDmai, h2d(tag, src_->iova(), tag * 32, 256));
  }
  // A ring register set to `value` after programming, then one CB: the queue fault it causes.
  void expect_queue_fault_from(std::uint64_t offset, std::uint64_t value, unsigned width) {
    expect_queue_fault_with(offset, [value](RingDriver&) { return value; }, width);
  }
  // The same, with the value taken from the programmed driver.
  template <class Value>
  void expect_queue_fault_with(std::uint64_t offset, Value value_of, unsigned width) {
    const std::uint64_t value = value_of(ring());
    width == 8 ? dev().write64(reg::pipe(Pipeline::kDmai, offset), value)
               : dev().write32(reg::pipe(Pipeline::kDmai, offset), static_cast<std::uint32_t>(value));
    submit_h2d(1);
    ASSERT_TRUE(driver().eventually([&] { return error_status(Pipeline::kDmai) != 0; }))
        << "no queue fault";
    EXPECT_EQ(error_status(Pipeline::kDmai), static_cast<std::uint32_t>(hw::ErrorKind::kQueueFault));
    EXPECT_EQ(index(Pipeline::kDmai, reg::kCbCi), 0u) << "a fault before the fetch consumes nothing";
    driver().settle();
    EXPECT_FALSE(driver().rb_ready(Pipeline::kDmai)) << "no RB for a CB whose tag is unknown";
  }
  std::unique_ptr<HostBuffer> src_;
};

TEST_P(Rings, ACbRingSizeThatIsNotAPowerOfTwoFaultsAtFetch) { expect_queue_fault_from(reg::kCbRingSize, 12, 4); }

TEST_P(Rings, ACbRingLargerThanTheDepthFaultsAtFetch) {
  expect_queue_fault_from(reg::kCbRingSize, std::uint64_t{depth(Pipeline::kDmai)} * 2, 4);
}

TEST_P(Rings, ACbRingBaseOffItsPageFaultsAtFetch) {
  expect_queue_fault_with(reg::kCbRingBase_64, [](RingDriver& r) { return r.cb_ring(Pipeline::kDmai).iova() + 128; }, 8);
}

TEST_P(Rings, AnRbRingSizeThatIsNotAPowerOfTwoFaultsAtFetch) { expect_queue_fault_from(reg::kRbRingSize, 6, 4); }

TEST_P(Rings, AnRbRingOfNoSlotsFaultsAtFetch) { expect_queue_fault_from(reg::kRbRingSize, 0, 4); }

TEST_P(Rings, AnRbRingBaseOffItsPageFaultsAtFetch) {
  expect_queue_fault_with(reg::kRbRingBase_64, [](RingDriver& r) { return r.rb_ring(Pipeline::kDmai).iova() + 64; }, 8);
}

TEST_P(Rings, AnUnmappedCbRingFaultsAtFetch) { expect_queue_fault_from(reg::kCbRingBase_64, 0x7000'0000'0000ull, 8); }

TEST_P(Rings, AnOverrunFaultsAtFetch) {
  RingOptions o;
  o.cb_size = {4, 4, 4};
  RingDriver& r = ring(o);
  dev().write32(reg::kControl, 0);  // nothing fetched while the producer writes too far
  for (std::uint32_t t = 1; t <= 5; ++t) submit_h2d(t);
  dev().write32(reg::kControl, hw::kControlEnable);
  ASSERT_TRUE(r.eventually([&] { return error_status(Pipeline::kDmai) != 0; }));
  EXPECT_EQ(error_status(Pipeline::kDmai), static_cast<std::uint32_t>(hw::ErrorKind::kQueueFault));
  EXPECT_EQ(index(Pipeline::kDmai, reg::kCbCi), 0u);
}

TEST_P(Rings, AQueueFaultClearsOnANonzeroWriteAndFetchingResumesAtCbCi) {
  RingDriver& r = ring();
  dev().write32(reg::pipe(Pipeline::kDmai, reg::kCbRingSize), 12);
  submit_h2d(7);
  ASSERT_TRUE(r.eventually([&] { return error_status(Pipeline::kDmai) != 0; }));
  dev().write32(reg::pipe(Pipeline::kDmai, reg::kErrorStatus), 0);
  r.settle();
  EXPECT_NE(error_status(Pipeline::kDmai), 0u) << "writing zero clears nothing";
  dev().write32(reg::pipe(Pipeline::kDmai, reg::kCbRingSize), 16);
  dev().write32(reg::pipe(Pipeline::kDmai, reg::kErrorStatus), 1);
  EXPECT_EQ(error_status(Pipeline::kDmai), 0u);
  const hw::ResponseBlock rb = r.next_rb(Pipeline::kDmai);
  EXPECT_EQ(rb.tag, 7u);
  EXPECT_EQ(rb.status, hw::RbStatus::kGood);
}

TEST_P(Rings, CbsRetireInIndexOrderWithOneRbEach) {
  RingDriver& r = ring();
  for (std::uint32_t t = 1; t <= 6; ++t) submit_h2d(t);
  for (std::uint32_t t = 1; t <= 6; ++t) EXPECT_EQ(r.next_rb(Pipeline::kDmai).tag, t);
  r.settle();
  EXPECT_FALSE(r.rb_ready(Pipeline::kDmai)) << "one RB per CB";
  EXPECT_EQ(index(Pipeline::kDmai, reg::kCbCi), 6u);
  EXPECT_EQ(index(Pipeline::kDmai, reg::kRbPi), 6u);
}

TEST_P(Rings, ThePhaseBitFlipsEveryLap) {
  RingOptions o;
  o.cb_size = {2, 2, 2};
  o.rb_size = {2, 2, 2};
  RingDriver& r = ring(o);
  for (std::uint32_t t = 1; t <= 5; ++t) {
    submit_h2d(t);
    const auto got = r.wait_rb(Pipeline::kDmai);
    ASSERT_TRUE(got && !got->error) << "CB " << t;
    EXPECT_EQ(got->rb.phase, hw::expected_phase(t - 1, 2)) << "RB index " << t - 1;
    EXPECT_EQ(got->rb.tag, t);
  }
}

TEST_P(Rings, AFullRbRingHoldsTheNextRbUntilRbCiMoves) {
  RingOptions o;
  o.rb_size = {2, 2, 2};
  RingDriver& r = ring(o);
  for (std::uint32_t t = 1; t <= 3; ++t) submit_h2d(t);
  ASSERT_TRUE(r.eventually([&] { return index(Pipeline::kDmai, reg::kRbPi) == 2; }));
  r.settle();
  EXPECT_EQ(index(Pipeline::kDmai, reg::kRbPi), 2u) << "never more RBs than slots the engine returned";
  EXPECT_EQ(r.next_rb(Pipeline::kDmai).tag, 1u);  // returns one slot
  EXPECT_EQ(r.next_rb(Pipeline::kDmai).tag, 2u);
  EXPECT_EQ(r.next_rb(Pipeline::kDmai).tag, 3u);
}

TEST_P(Rings, ADisabledQueueFetchesNothing) {
  RingDriver& r = ring();
  dev().write32(reg::pipe(Pipeline::kDmai, reg::kQueueControl), 0);
  submit_h2d(1);
  r.settle();
  EXPECT_EQ(index(Pipeline::kDmai, reg::kCbCi), 0u);
  dev().write32(reg::pipe(Pipeline::kDmai, reg::kQueueControl), hw::kQueueEnable);
  EXPECT_EQ(r.next_rb(Pipeline::kDmai).tag, 1u);
}

TEST_P(Rings, ADisabledDeviceFetchesNothing) {
  RingDriver& r = ring();
  dev().write32(reg::kControl, 0);
  submit_h2d(1);
  r.settle();
  EXPECT_EQ(index(Pipeline::kDmai, reg::kCbCi), 0u);
  dev().write32(reg::kControl, hw::kControlEnable);
  EXPECT_EQ(r.next_rb(Pipeline::kDmai).tag, 1u);
}

TEST_P(Rings, PipelinesRunIndependently) {
  RingDriver& r = ring();
  dev().write32(reg::pipe(Pipeline::kDmai, reg::kQueueControl), 0);
  submit_h2d(1);  // held: DMAI is disabled
  HostBuffer dst(dev(), 4096, DmaAccess::kDeviceWrites);
  r.submit(Pipeline::kDmao, d2h(2, dst.iova(), 0, 256));
  EXPECT_EQ(r.next_rb(Pipeline::kDmao).tag, 2u);
  EXPECT_FALSE(r.rb_ready(Pipeline::kDmai));
}

TEST_P(Rings, ResetReturnsEveryIndexAndRingRegisterToZero) {
  RingDriver& r = ring();
  submit_h2d(1);
  ASSERT_EQ(r.next_rb(Pipeline::kDmai).tag, 1u);
  dev().write32(reg::kControl, hw::kControlReset);
  for (Pipeline p : {Pipeline::kCompute, Pipeline::kDmai, Pipeline::kDmao}) {
    for (std::uint64_t off : {reg::kCbRingSize, reg::kCbPi, reg::kCbCi, reg::kRbRingSize, reg::kRbPi, reg::kRbCi,
                              reg::kIrqEnable, reg::kQueueControl, reg::kErrorStatus}) {
      EXPECT_EQ(index(p, off), 0u) << hw::to_string(p) << " +0x" << std::hex << off;
    }
    EXPECT_EQ(dev().read64(reg::pipe(p, reg::kCbRingBase_64)), 0u);
  }
}

TEST_P(Rings, ResetDropsACbHeldForRbSpace) {
  RingOptions o;
  o.rb_size = {1, 1, 1};
  RingDriver& r = ring(o);
  submit_h2d(1);
  submit_h2d(2);  // held: the one RB slot is taken
  ASSERT_TRUE(r.eventually([&] { return index(Pipeline::kDmai, reg::kRbPi) == 1; }));
  reset_and_reprogram();
  r.settle();
  EXPECT_EQ(index(Pipeline::kDmai, reg::kRbPi), 0u) << "no RB for a CB the reset aborted";
  EXPECT_FALSE(r.rb_ready(Pipeline::kDmai));
  submit_h2d(3);
  EXPECT_EQ(r.next_rb(Pipeline::kDmai).tag, 3u) << "the rings work again after the reset";
}

TEST_P(Rings, ResetClearsAQueueFault) {
  RingDriver& r = ring();
  dev().write32(reg::pipe(Pipeline::kDmai, reg::kCbRingSize), 12);
  submit_h2d(1);
  ASSERT_TRUE(r.eventually([&] { return error_status(Pipeline::kDmai) != 0; }));
  reset_and_reprogram();
  EXPECT_EQ(error_status(Pipeline::kDmai), 0u);
  submit_h2d(2);
  EXPECT_EQ(r.next_rb(Pipeline::kDmai).tag, 2u);
}

INSTANTIATE_TEST_SUITE_P(Backends, Rings, ::testing::ValuesIn(backends_under_test()), backend_label);

}  // namespace
}  // namespace conformance
