// The contract's ring rules on both data paths of the model: a CB or RB ring whose base is not on
// a 4 KiB boundary is a queue fault raised before the ring is touched (no fetch that could cross a
// page, nothing consumed, no RB), and the queue runs again once the base is fixed and ERROR_STATUS
// is cleared. Found by the bar0 fuzzer: the data paths used to fetch from such a base, and the
// link's checker stopped the simulation on the 4 KiB-crossing read.
#include <gtest/gtest.h>

#include "ring_driver.hpp"
#include "spyre_dma/model/config_loader.hpp"

namespace spyre_dma::rtl::test {
namespace {

namespace reg = hw::reg;
using hw::Pipeline;

class RingRules : public ::testing::TestWithParam<model::DataPathKind> {
 protected:
  model::SimConfig config() const {
    model::SimConfig c = model::preset("spyre-gen5x16");
    c.data_path = GetParam();
    return c;
  }
};

// One 4 KiB H2D into device address 0.
hw::ControlBlock small_h2d(std::uint32_t tag, std::uint64_t iova) {
  hw::ControlBlock cb = cb_with_xlat(tag);
  cb.dmi.type = hw::DmaType::kImmediate;
  set_length(cb.dmi, 4096);
  cb.dmi.host_iova_flits = iova / hw::kFlitBytes;
  return cb;
}

void expect_fault_then_recovery(model::SimDevice& dev, RingDriver& ring, std::uint64_t base_register,
                                std::uint64_t iova) {
  const std::uint64_t base = reg::pipe(Pipeline::kDmai, base_register);
  const std::uint64_t es = reg::pipe(Pipeline::kDmai, reg::kErrorStatus);
  const std::uint64_t good = dev.read64(base);
  dev.write64(base, good + 0xF80);  // mapped, inside the ring's pages, 128 bytes short of a page end
  ring.push(Pipeline::kDmai, small_h2d(21, iova));
  ring.doorbell(Pipeline::kDmai);
  (void)dev.wait_for_interrupt(std::chrono::milliseconds(10));  // none comes: the model runs idle
  EXPECT_EQ(dev.read32(es), static_cast<std::uint32_t>(hw::ErrorKind::kQueueFault));
  EXPECT_EQ(dev.read32(reg::pipe(Pipeline::kDmai, reg::kCbCi)), 0u);  // nothing consumed
  EXPECT_EQ(dev.read32(reg::pipe(Pipeline::kDmai, reg::kRbPi)), 0u);

  dev.write64(base, good);
  dev.write32(es, 1);
  EXPECT_EQ(dev.read32(es), 0u);
  const std::vector<hw::ResponseBlock> rbs = ring.drain(Pipeline::kDmai);
  ASSERT_EQ(rbs.size(), 1u);
  EXPECT_EQ(rbs[0].tag, 21u);
  EXPECT_EQ(rbs[0].status, hw::RbStatus::kGood);
}

TEST_P(RingRules, CbRingOffItsPageIsAQueueFaultUntilFixedAndCleared) {
  model::SimDevice dev(config());
  HostBuffer src(4096);
  const std::uint64_t iova = dev.map(src.data, src.bytes, DmaAccess::kDeviceReads);
  RingDriver ring(dev);
  expect_fault_then_recovery(dev, ring, reg::kCbRingBase_64, iova);
}

TEST_P(RingRules, RbRingOffItsPageIsAQueueFaultBeforeAnyFetch) {
  model::SimDevice dev(config());
  HostBuffer src(4096);
  const std::uint64_t iova = dev.map(src.data, src.bytes, DmaAccess::kDeviceReads);
  RingDriver ring(dev);
  expect_fault_then_recovery(dev, ring, reg::kRbRingBase_64, iova);
}

INSTANTIATE_TEST_SUITE_P(Controllers, RingRules,
                         ::testing::Values(model::DataPathKind::kSystemC, model::DataPathKind::kRtl),
                         [](const ::testing::TestParamInfo<model::DataPathKind>& param_info) {
                           return param_info.param == model::DataPathKind::kRtl ? std::string("rtl")
                                                                        : std::string("systemc");
                         });

}  // namespace
}  // namespace spyre_dma::rtl::test
