// RefDevice ordering and ring rules: barriers across pipelines, RB ring full stalls, index
// wrap-around over several laps, queue faults.
#include <gtest/gtest.h>

#include <vector>

#include "ring_driver.hpp"
#include "spyre_dma/refdev/ref_device.hpp"

namespace {

using namespace device_test;
using spyre_dma::refdev::RefDevice;
using spyre_dma::refdev::RefDeviceConfig;
namespace reg = hw::reg;

RefDeviceConfig timed_compute() {
  RefDeviceConfig c;
  c.honour_compute_time = true;
  return c;
}

// A DMAO barrier CB rung after a long DMAI CB must see the DMAI data.
TEST(RefDeviceBarrier, D2hWithBarrierSeesEarlierH2d) {
  RefDevice dev;
  RingDriver drv(dev);
  constexpr std::size_t n = 32u << 20;
  HostBuffer src(dev, n, DmaAccess::kDeviceReads);
  HostBuffer dst(dev, n, DmaAccess::kDeviceWrites);
  pattern_bytes(src.data(), n, 21);
  dev.pause();  // both CBs are waiting when the workers start
  drv.submit(Pipeline::kDmai, h2d(1, src.iova(), 0, n));
  hw::ControlBlock out = d2h(2, dst.iova(), 0, n);
  out.barrier = true;
  drv.submit(Pipeline::kDmao, out);
  dev.resume();
  const auto in_rb = drv.next_rb(Pipeline::kDmai, 20000ms);
  const auto out_rb = drv.next_rb(Pipeline::kDmao, 20000ms);
  ASSERT_EQ(in_rb.status, hw::RbStatus::kGood);
  ASSERT_EQ(out_rb.status, hw::RbStatus::kGood);
  EXPECT_GE(out_rb.start_ns, in_rb.end_ns);
  EXPECT_EQ(0, std::memcmp(src.data(), dst.data(), n));
}

TEST(RefDeviceBarrier, WaitsForEarlierDoorbellsOnEveryPipeline) {
  RefDevice dev(timed_compute());
  RingDriver drv(dev);
  dev.pause();
  drv.submit(Pipeline::kCompute, compute(1, 50'000'000));  // 50 ms
  drv.submit(Pipeline::kDmai, fill(2, 0, 128, 1));         // no barrier: runs at once
  hw::ControlBlock b = fill(3, 0, 128, 2);
  b.barrier = true;
  drv.submit(Pipeline::kDmai, b);
  dev.resume();
  const auto c = drv.next_rb(Pipeline::kCompute);
  const auto r2 = drv.next_rb(Pipeline::kDmai);
  const auto r3 = drv.next_rb(Pipeline::kDmai);
  ASSERT_EQ(c.status, hw::RbStatus::kGood);
  ASSERT_EQ(r2.tag, 2u);
  ASSERT_EQ(r3.tag, 3u);
  EXPECT_LT(r2.end_ns, c.end_ns);    // the plain CB did not wait
  EXPECT_GE(r3.start_ns, c.end_ns);  // the barrier CB did
}

TEST(RefDeviceBarrier, DoesNotWaitForLaterDoorbells) {
  RefDevice dev(timed_compute());
  RingDriver drv(dev);
  dev.pause();
  hw::ControlBlock b = fill(1, 0, 128, 1);
  b.barrier = true;
  drv.submit(Pipeline::kDmai, b);                          // rung first
  drv.submit(Pipeline::kCompute, compute(2, 200'000'000));  // rung later: 200 ms
  dev.resume();
  const auto r = drv.next_rb(Pipeline::kDmai);
  const auto c = drv.next_rb(Pipeline::kCompute);
  ASSERT_EQ(r.status, hw::RbStatus::kGood);
  ASSERT_EQ(c.status, hw::RbStatus::kGood);
  EXPECT_LT(r.end_ns, c.end_ns);
}

// Barriers in both directions between two pipelines at once cannot deadlock.
TEST(RefDeviceBarrier, CrossingBarriersMakeProgress) {
  RefDevice dev;
  RingDriver drv(dev, RingOptions{{16, 16, 16}, {16, 16, 16}});
  Watchdog dog(20000ms, "CrossingBarriersMakeProgress");
  for (int round = 0; round < 200; ++round) {
    for (std::uint32_t k = 0; k < 4; ++k) {
      hw::ControlBlock a = fill(k + 1, 0, 128, k);
      a.barrier = (k % 2) == 0;
      drv.submit(Pipeline::kDmai, a);
      hw::ControlBlock c = compute(k + 1, 0);
      c.barrier = true;
      drv.submit(Pipeline::kCompute, c);
    }
    for (std::uint32_t k = 0; k < 4; ++k) {
      ASSERT_EQ(drv.next_rb(Pipeline::kDmai).tag, k + 1);
      ASSERT_EQ(drv.next_rb(Pipeline::kCompute).tag, k + 1);
    }
  }
}

TEST(RefDeviceRings, RbRingFullStallsUntilRbCiAdvances) {
  RefDevice dev;
  RingDriver drv(dev, RingOptions{{16, 16, 16}, {16, 4, 16}});
  for (std::uint32_t tag = 1; tag <= 10; ++tag) drv.write_cb(Pipeline::kDmai, fill(tag, 0, 128, tag));
  drv.ring(Pipeline::kDmai);
  const auto rb_pi = reg::pipe(Pipeline::kDmai, reg::kRbPi);
  const auto cb_ci = reg::pipe(Pipeline::kDmai, reg::kCbCi);
  ASSERT_TRUE(eventually([&] { return dev.read32(rb_pi) == 4 && dev.read32(cb_ci) == 5; }));
  std::this_thread::sleep_for(30ms);
  EXPECT_EQ(dev.read32(rb_pi), 4u);  // no overrun of the full ring
  EXPECT_EQ(dev.read32(cb_ci), 5u);  // one CB fetched, holding its RB
  // The four slots still hold tags 1..4 in phase 1.
  for (std::uint32_t i = 0; i < 4; ++i) {
    const auto r = hw::decode_rb(drv.rb_ring(Pipeline::kDmai).data() + i * hw::kRbBytes);
    ASSERT_FALSE(r.error);
    EXPECT_EQ(r.rb.tag, i + 1);
    EXPECT_TRUE(r.rb.phase);
  }
  for (std::uint32_t tag = 1; tag <= 10; ++tag) {
    const auto r = drv.next_rb(Pipeline::kDmai);
    ASSERT_EQ(r.tag, tag);
    EXPECT_EQ(r.phase, hw::expected_phase(tag - 1, 4));
  }
  // RB_PI moves after the RB has landed: seeing the last RB does not mean the register moved yet.
  EXPECT_TRUE(eventually([&] { return dev.read32(rb_pi) == 10u; })) << dev.read32(rb_pi);
}

TEST(RefDeviceRings, IndicesWrapOverManyLaps) {
  RefDevice dev;
  RingDriver drv(dev, RingOptions{{4, 4, 4}, {4, 4, 4}});
  HostBuffer buf(dev, 4096, DmaAccess::kBoth);
  std::uint32_t tag = 0;
  for (int lap = 0; lap < 12; ++lap) {
    const std::uint32_t batch = 1 + lap % 4;  // batches of 1..4 CBs: slots and phases rotate
    for (std::uint32_t k = 0; k < batch; ++k) {
      drv.write_cb(Pipeline::kDmao, d2h(tag + k + 1, buf.iova(), 0, 256));
      drv.write_cb(Pipeline::kCompute, compute(tag + k + 1, 0));
    }
    drv.ring(Pipeline::kDmao);
    drv.ring(Pipeline::kCompute);
    for (std::uint32_t k = 0; k < batch; ++k) {
      ASSERT_EQ(drv.next_rb(Pipeline::kDmao).tag, tag + k + 1);
      ASSERT_EQ(drv.next_rb(Pipeline::kCompute).tag, tag + k + 1);
    }
    tag += batch;
  }
  EXPECT_EQ(dev.read32(reg::pipe(Pipeline::kDmao, reg::kCbCi)), tag);
  EXPECT_EQ(dev.read32(reg::pipe(Pipeline::kDmao, reg::kRbPi)), tag);
  EXPECT_EQ(tag, 30u);  // 7.5 laps of a 4-slot ring
}

TEST(RefDeviceRings, OverrunIsAQueueFault) {
  RefDevice dev;
  RingDriver drv(dev, RingOptions{{4, 4, 4}, {4, 4, 4}});
  dev.pause();
  for (int i = 0; i < 5; ++i) drv.write_cb(Pipeline::kDmai, fill(1, 0, 128, 0));  // one too many
  drv.ring(Pipeline::kDmai);
  dev.resume();
  const auto es = reg::pipe(Pipeline::kDmai, reg::kErrorStatus);
  ASSERT_TRUE(eventually([&] { return dev.read32(es) != 0; }));
  EXPECT_EQ(dev.read32(es), static_cast<std::uint32_t>(hw::ErrorKind::kQueueFault));
  EXPECT_EQ(dev.queue_fault_register(Pipeline::kDmai), reg::kCbPi);
  EXPECT_EQ(dev.read32(reg::pipe(Pipeline::kDmai, reg::kCbCi)), 0u);
  EXPECT_EQ(dev.counters().queue_faults[idx(Pipeline::kDmai)], 1u);
  EXPECT_FALSE(drv.wait_rb(Pipeline::kDmai, 30ms));
}

TEST(RefDeviceRings, UnmappedCbRingFaultsUntilFixedAndCleared) {
  RefDevice dev;
  RingDriver drv(dev);
  const auto base = reg::pipe(Pipeline::kDmai, reg::kCbRingBase_64);
  const auto es = reg::pipe(Pipeline::kDmai, reg::kErrorStatus);
  dev.write64(base, 0x7700'0000'0000ull);  // aligned but unmapped
  drv.submit(Pipeline::kDmai, fill(5, 0, 128, 0));
  ASSERT_TRUE(eventually([&] { return dev.read32(es) != 0; }));
  EXPECT_EQ(dev.read32(es), static_cast<std::uint32_t>(hw::ErrorKind::kQueueFault));
  EXPECT_EQ(dev.queue_fault_register(Pipeline::kDmai), reg::kCbRingBase_64);
  EXPECT_EQ(dev.read32(reg::pipe(Pipeline::kDmai, reg::kCbCi)), 0u);  // nothing consumed
  dev.write64(base, drv.cb_ring(Pipeline::kDmai).iova());
  EXPECT_FALSE(drv.wait_rb(Pipeline::kDmai, 20ms));  // still stopped until cleared
  dev.write32(es, 1);
  EXPECT_EQ(dev.read32(es), 0u);
  EXPECT_EQ(drv.next_rb(Pipeline::kDmai).tag, 5u);
}

TEST(RefDeviceRings, UnmappedRbRingHoldsTheRbUntilFixedAndCleared) {
  RefDevice dev;
  RingDriver drv(dev);
  const auto base = reg::pipe(Pipeline::kCompute, reg::kRbRingBase_64);
  const auto es = reg::pipe(Pipeline::kCompute, reg::kErrorStatus);
  dev.write64(base, 0x7700'0000'0000ull);  // aligned but unmapped: found only when the RB is due
  drv.submit(Pipeline::kCompute, compute(3, 0));
  drv.submit(Pipeline::kCompute, compute(4, 0));
  ASSERT_TRUE(eventually([&] { return dev.read32(es) != 0; }));
  EXPECT_EQ(dev.read32(es), static_cast<std::uint32_t>(hw::ErrorKind::kQueueFault));
  EXPECT_EQ(dev.queue_fault_register(Pipeline::kCompute), reg::kRbRingBase_64);
  EXPECT_EQ(dev.read32(reg::pipe(Pipeline::kCompute, reg::kCbCi)), 1u);  // the second waits
  EXPECT_EQ(dev.read32(reg::pipe(Pipeline::kCompute, reg::kRbPi)), 0u);
  dev.write64(base, drv.rb_ring(Pipeline::kCompute).iova());
  dev.write32(es, 1);
  EXPECT_EQ(drv.next_rb(Pipeline::kCompute).tag, 3u);
  EXPECT_EQ(drv.next_rb(Pipeline::kCompute).tag, 4u);
}

TEST(RefDeviceRings, InvalidRingSizesFault) {
  RefDevice dev;
  RingDriver drv(dev);
  const auto es = reg::pipe(Pipeline::kDmao, reg::kErrorStatus);
  dev.write32(reg::pipe(Pipeline::kDmao, reg::kCbRingSize), 3);
  drv.submit(Pipeline::kDmao, compute(1, 0));
  ASSERT_TRUE(eventually([&] { return dev.read32(es) != 0; }));
  EXPECT_EQ(dev.queue_fault_register(Pipeline::kDmao), reg::kCbRingSize);
  dev.write32(reg::pipe(Pipeline::kDmao, reg::kCbRingSize), 2048);  // above the depth of 1024
  dev.write32(es, static_cast<std::uint32_t>(hw::ErrorKind::kQueueFault));  // writing back clears too
  ASSERT_TRUE(eventually([&] { return dev.read32(es) != 0 && dev.counters().queue_faults[2] == 2; }));
  EXPECT_EQ(dev.queue_fault_register(Pipeline::kDmao), reg::kCbRingSize);
}

}  // namespace
