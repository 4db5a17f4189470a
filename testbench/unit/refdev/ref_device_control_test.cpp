// RefDevice control: interrupts, pause/resume, hang, reset (idle and busy), destruction while busy.
#include <gtest/gtest.h>

#include <vector>

#include "ring_driver.hpp"
#include "spyre_dma/refdev/ref_device.hpp"

namespace {

using namespace device_test;
using spyre_dma::refdev::RefDevice;
using spyre_dma::refdev::RefDeviceConfig;
using spyre_dma::refdev::RefDeviceFaults;
namespace reg = hw::reg;

RefDeviceConfig timed_compute() {
  RefDeviceConfig c;
  c.honour_compute_time = true;
  return c;
}

constexpr std::uint32_t bit(Pipeline p) { return 1u << static_cast<unsigned>(p); }

TEST(RefDeviceIrq, RaisedPerPipelineWhenEnabled) {
  RefDevice dev;
  RingDriver drv(dev);
  EXPECT_EQ(dev.wait_for_interrupt(20ms), 0u);  // nothing pending: times out
  drv.submit(Pipeline::kDmai, fill(1, 0, 128, 1));
  ASSERT_EQ(drv.next_rb(Pipeline::kDmai).tag, 1u);
  EXPECT_EQ(dev.wait_for_interrupt(0ns), 0u);  // IRQ_ENABLE off, no CB bit: no interrupt

  dev.write32(reg::pipe(Pipeline::kDmai, reg::kIrqEnable), 1);
  drv.submit(Pipeline::kDmai, fill(2, 0, 128, 1));
  EXPECT_EQ(dev.wait_for_interrupt(5s), bit(Pipeline::kDmai));
  EXPECT_EQ(drv.next_rb(Pipeline::kDmai).tag, 2u);

  // The CB's own interrupt bit raises without IRQ_ENABLE.
  hw::ControlBlock c = compute(3, 0);
  c.interrupt = true;
  drv.submit(Pipeline::kCompute, c);
  EXPECT_EQ(dev.wait_for_interrupt(5s), bit(Pipeline::kCompute));
  EXPECT_EQ(drv.next_rb(Pipeline::kCompute).tag, 3u);
}

TEST(RefDeviceIrq, PendingBitsAccumulateUntilCollected) {
  RefDevice dev;
  RingDriver drv(dev, RingOptions{{16, 16, 16}, {16, 16, 16}, /*irq_enable=*/true});
  drv.submit(Pipeline::kDmai, fill(1, 0, 128, 1));
  drv.submit(Pipeline::kCompute, compute(2, 0));
  ASSERT_EQ(drv.next_rb(Pipeline::kDmai).tag, 1u);
  ASSERT_EQ(drv.next_rb(Pipeline::kCompute).tag, 2u);
  EXPECT_EQ(dev.wait_for_interrupt(5s), bit(Pipeline::kDmai) | bit(Pipeline::kCompute));
  EXPECT_EQ(dev.wait_for_interrupt(0ns), 0u);
  EXPECT_EQ(dev.counters().interrupts, 2u);
}

TEST(RefDeviceIrq, WaiterIsWokenByALaterRaise) {
  RefDevice dev;
  RingDriver drv(dev, RingOptions{{16, 16, 16}, {16, 16, 16}, /*irq_enable=*/true});
  std::uint32_t mask = 0;
  std::thread waiter([&] { mask = dev.wait_for_interrupt(5s); });
  std::this_thread::sleep_for(20ms);
  drv.submit(Pipeline::kDmao, compute(1, 0));  // wrong pipeline: an Error RB still interrupts
  waiter.join();
  EXPECT_EQ(mask, bit(Pipeline::kDmao));
  EXPECT_EQ(drv.next_rb(Pipeline::kDmao).status, hw::RbStatus::kError);
}

TEST(RefDeviceIrq, OneRaiseIsCollectedOnce) {
  RefDevice dev;
  RingDriver drv(dev, RingOptions{{16, 16, 16}, {16, 16, 16}, /*irq_enable=*/true});
  std::array<std::uint32_t, 2> masks{};
  std::array<std::chrono::steady_clock::duration, 2> took{};
  std::vector<std::thread> waiters;
  for (int i = 0; i < 2; ++i) {
    waiters.emplace_back([&, i] {
      const auto t0 = std::chrono::steady_clock::now();
      masks[i] = dev.wait_for_interrupt(300ms);
      took[i] = std::chrono::steady_clock::now() - t0;
    });
  }
  std::this_thread::sleep_for(20ms);
  drv.submit(Pipeline::kDmai, fill(1, 0, 128, 1));
  for (auto& t : waiters) t.join();
  EXPECT_EQ(masks[0] | masks[1], bit(Pipeline::kDmai));
  EXPECT_EQ(masks[0] & masks[1], 0u);
  const int loser = masks[0] == 0 ? 0 : 1;
  EXPECT_GE(took[loser], 300ms);  // the other waiter returned 0 only at its timeout
}

TEST(RefDevicePause, DoorbellsAreRecordedButNothingIsFetched) {
  RefDevice dev;
  RingDriver drv(dev);
  dev.pause();
  EXPECT_TRUE(dev.paused());
  for (std::uint32_t tag = 1; tag <= 5; ++tag) drv.submit(Pipeline::kDmai, fill(tag, 0, 128, tag));
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(dev.read32(reg::pipe(Pipeline::kDmai, reg::kCbPi)), 5u);
  EXPECT_EQ(dev.read32(reg::pipe(Pipeline::kDmai, reg::kCbCi)), 0u);
  EXPECT_FALSE(drv.rb_ready(Pipeline::kDmai));
  dev.resume();
  for (std::uint32_t tag = 1; tag <= 5; ++tag) EXPECT_EQ(drv.next_rb(Pipeline::kDmai).tag, tag);
}

TEST(RefDeviceDisable, QueueAndDeviceEnableGateFetching) {
  RefDevice dev;
  RingDriver drv(dev);
  const auto qc = reg::pipe(Pipeline::kDmai, reg::kQueueControl);
  dev.write32(qc, 0);
  drv.submit(Pipeline::kDmai, fill(1, 0, 128, 1));
  EXPECT_FALSE(drv.wait_rb(Pipeline::kDmai, 20ms));
  dev.write32(qc, hw::kQueueEnable);
  EXPECT_EQ(drv.next_rb(Pipeline::kDmai).tag, 1u);
  dev.write32(reg::kControl, 0);
  drv.submit(Pipeline::kDmai, fill(2, 0, 128, 1));
  EXPECT_FALSE(drv.wait_rb(Pipeline::kDmai, 20ms));
  dev.write32(reg::kControl, hw::kControlEnable);
  EXPECT_EQ(drv.next_rb(Pipeline::kDmai).tag, 2u);
}

TEST(RefDeviceHang, NoRbWhileHungThenRecovers) {
  RefDevice dev;
  RingDriver drv(dev);
  dev.set_faults(RefDeviceFaults{true, 0});
  EXPECT_TRUE(dev.faults().hang);
  drv.submit(Pipeline::kDmai, fill(1, 0, 128, 1));
  EXPECT_FALSE(drv.wait_rb(Pipeline::kDmai, 100ms));
  EXPECT_EQ(dev.read32(reg::pipe(Pipeline::kDmai, reg::kRbPi)), 0u);
  dev.set_faults(RefDeviceFaults{});
  EXPECT_EQ(drv.next_rb(Pipeline::kDmai).tag, 1u);
}

TEST(RefDeviceHang, DestructionWhileHungIsPrompt) {
  Watchdog dog(10000ms, "DestructionWhileHungIsPrompt");
  RefDevice dev;
  // Destroyed (rings unmapped) first, then the device, whose DMAI worker holds an RB.
  RingDriver drv(dev, RingOptions{{16, 16, 16}, {16, 1, 16}});
  drv.submit(Pipeline::kDmai, fill(1, 0, 128, 1));
  drv.submit(Pipeline::kDmai, fill(2, 0, 128, 1));
  ASSERT_TRUE(eventually([&] { return dev.read32(reg::pipe(Pipeline::kDmai, reg::kCbCi)) == 2; }));
  dev.set_faults(RefDeviceFaults{true, 0});
  EXPECT_EQ(drv.next_rb(Pipeline::kDmai).tag, 1u);  // returns the slot; the device stays silent
  EXPECT_FALSE(drv.wait_rb(Pipeline::kDmai, 30ms));
  EXPECT_EQ(dev.read32(reg::pipe(Pipeline::kDmai, reg::kRbPi)), 1u);
}

TEST(RefDeviceReset, IdleResetClearsRegistersKeepsMemory) {
  RefDevice dev;
  RingDriver drv(dev, RingOptions{{16, 16, 16}, {16, 16, 16}, /*irq_enable=*/true});
  drv.submit(Pipeline::kDmai, fill(1, 0, 4096, 0x11223344));
  ASSERT_EQ(drv.next_rb(Pipeline::kDmai).tag, 1u);
  dev.write32(reg::kControl, hw::kControlEnable | hw::kControlReset);
  EXPECT_EQ(dev.read32(reg::kControl), hw::kControlEnable);
  EXPECT_EQ(dev.read32(reg::kStatus), hw::kStatusReady);
  EXPECT_EQ(dev.wait_for_interrupt(0ns), 0u);  // the pending interrupt went with the reset
  for (unsigned p = 0; p < hw::kNumPipelines; ++p) {
    const Pipeline pl = static_cast<Pipeline>(p);
    for (std::uint64_t r : {reg::kCbRingBase_64, reg::kRbRingBase_64}) EXPECT_EQ(dev.read64(reg::pipe(pl, r)), 0u);
    for (std::uint64_t r : {reg::kCbRingSize, reg::kCbPi, reg::kCbCi, reg::kRbRingSize, reg::kRbPi, reg::kRbCi,
                            reg::kIrqEnable, reg::kIrqVector, reg::kErrorStatus, reg::kQueueControl}) {
      EXPECT_EQ(dev.read32(reg::pipe(pl, r)), 0u) << p << " " << std::hex << r;
    }
  }
  std::uint8_t b[4];
  dev.memory().read(0, b, 4);
  EXPECT_EQ(b[0], 0x44);
  EXPECT_EQ(b[3], 0x11);
  // Reprogrammed, the device works again from index zero.
  drv.program();
  drv.submit(Pipeline::kDmai, fill(2, 0, 128, 0));
  EXPECT_EQ(drv.next_rb(Pipeline::kDmai).tag, 2u);
}

TEST(RefDeviceReset, ResetWhileBusyAbandonsUnretiredCbs) {
  Watchdog dog(10000ms, "ResetWhileBusyAbandonsUnretiredCbs");
  RefDevice dev(timed_compute());
  RingDriver drv(dev, RingOptions{{16, 16, 16}, {16, 1, 16}});
  // COMPUTE: sleeping through a 60 s kernel. DMAI: stalled on a full 1-slot RB ring.
  // DMAO: a barrier CB waiting for that kernel.
  drv.submit(Pipeline::kCompute, compute(1, 60'000'000'000ull));
  for (std::uint32_t tag = 1; tag <= 3; ++tag) drv.submit(Pipeline::kDmai, fill(tag, 0, 128, tag));
  HostBuffer out(dev, 128, DmaAccess::kDeviceWrites);
  hw::ControlBlock b = d2h(9, out.iova(), 0, 128);
  b.barrier = true;
  drv.submit(Pipeline::kDmao, b);
  ASSERT_TRUE(eventually([&] {
    return dev.read32(reg::pipe(Pipeline::kCompute, reg::kCbCi)) == 1 &&
           dev.read32(reg::pipe(Pipeline::kDmai, reg::kCbCi)) == 2 &&
           dev.read32(reg::pipe(Pipeline::kDmao, reg::kCbCi)) == 1;
  }));
  const auto t0 = std::chrono::steady_clock::now();
  dev.write32(reg::kControl, hw::kControlEnable | hw::kControlReset);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  EXPECT_EQ(dev.read32(reg::kStatus), hw::kStatusReady);
  const auto c = dev.counters();
  EXPECT_EQ(c.cbs_executed[idx(Pipeline::kCompute)], 0u);
  EXPECT_EQ(c.cbs_executed[idx(Pipeline::kDmai)], 1u);  // only the RB that fitted
  EXPECT_EQ(c.cbs_executed[idx(Pipeline::kDmao)], 0u);
  // No RB appears later either.
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(dev.counters().total_cbs(), 1u);
  // And the device is usable again.
  drv.program();
  drv.submit(Pipeline::kCompute, compute(5, 1000));
  EXPECT_EQ(drv.next_rb(Pipeline::kCompute).tag, 5u);
  drv.submit(Pipeline::kDmai, fill(6, 0, 128, 0));
  EXPECT_EQ(drv.next_rb(Pipeline::kDmai).tag, 6u);
}

TEST(RefDeviceLifetime, DestructionWhileBusyIsPrompt) {
  Watchdog dog(10000ms, "DestructionWhileBusyIsPrompt");
  auto dev = std::make_unique<RefDevice>(timed_compute());
  {
    // The driver's rings unmap through the device, so they go first; the workers stay blocked:
    // COMPUTE in a 60 s kernel, DMAI waiting for room in a full RB ring, DMAO on a barrier.
    RingDriver drv(*dev, RingOptions{{16, 16, 16}, {16, 1, 16}});
    drv.submit(Pipeline::kCompute, compute(1, 60'000'000'000ull));
    for (std::uint32_t tag = 1; tag <= 3; ++tag) drv.submit(Pipeline::kDmai, fill(tag, 0, 128, tag));
    hw::ControlBlock b = compute(4, 0);
    b.barrier = true;
    drv.submit(Pipeline::kDmao, b);
    ASSERT_TRUE(eventually([&] {
      return dev->read32(reg::pipe(Pipeline::kDmai, reg::kCbCi)) == 2 &&
             dev->read32(reg::pipe(Pipeline::kDmao, reg::kCbCi)) == 1;
    }));
  }
  const auto t0 = std::chrono::steady_clock::now();
  dev.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
}

}  // namespace
