// The ring rules of the device core: which register a fetch faults on, in order, and how an RB
// is made visible.
#include <gtest/gtest.h>

#include <cstring>

#include "spyre_dma/device_core/rings.hpp"

namespace {

namespace dc = spyre_dma::device_core;
namespace hw = spyre_dma::hw;
using dc::Reg;

dc::RingState good() {
  dc::RingState s;
  s.cb_base = 0x10'0000'0000ull;
  s.cb_size = 16;
  s.rb_base = 0x10'0001'0000ull;
  s.rb_size = 16;
  s.cb_pi = 3;
  s.cb_ci = 1;
  return s;
}

TEST(RingRules, AUsableRingFetches) { EXPECT_FALSE(dc::fetch_fault(good(), 64).has_value()); }

TEST(RingRules, FaultsNameTheRegisterInTheContractsOrder) {
  dc::RingState s = good();
  s.cb_size = 12;
  s.cb_base += 64;
  EXPECT_EQ(dc::fetch_fault(s, 64), Reg::kCbRingSize) << "size before base";
  s = good();
  s.cb_size = 128;
  EXPECT_EQ(dc::fetch_fault(s, 64), Reg::kCbRingSize) << "above the depth";
  s = good();
  s.cb_base += 64;
  EXPECT_EQ(dc::fetch_fault(s, 64), Reg::kCbRingBase);
  s = good();
  s.rb_size = 0;
  EXPECT_EQ(dc::fetch_fault(s, 64), Reg::kRbRingSize);
  s = good();
  s.rb_base += 4096 + 64;
  EXPECT_EQ(dc::fetch_fault(s, 64), Reg::kRbRingBase);
  s = good();
  s.cb_pi = s.cb_ci + 17;
  EXPECT_EQ(dc::fetch_fault(s, 64), Reg::kCbPi) << "an overrun";
}

TEST(RingRules, IndicesAreFreeRunning) {
  dc::RingState s = good();
  s.cb_ci = 0xFFFF'FFFEu;
  s.cb_pi = 14;  // 16 ahead, across the wrap
  EXPECT_FALSE(dc::fetch_fault(s, 64).has_value());
  EXPECT_EQ(dc::cb_slot_iova(s.cb_base, 0xFFFF'FFFFu, 16), s.cb_base + 15 * hw::kCbBytes);
  EXPECT_TRUE(dc::rb_room(0xFFFF'FFFFu, 0xFFFF'FFF0u, 16));
  EXPECT_FALSE(dc::rb_room(15, 0xFFFF'FFFFu, 16));
}

TEST(RingRules, AnRbCarriesThePhaseOfItsLap) {
  hw::ResponseBlock rb;
  rb.tag = 5;
  EXPECT_TRUE(hw::rb_phase(dc::rb_at_index(rb, 3, 4).data()));
  EXPECT_FALSE(hw::rb_phase(dc::rb_at_index(rb, 4, 4).data()));
  EXPECT_TRUE(hw::rb_phase(dc::rb_at_index(rb, 8, 4).data()));
}

TEST(RingRules, PublishingWritesTheWholeRb) {
  hw::ResponseBlock rb;
  rb.tag = 77;
  rb.bytes = 4096;
  const hw::RbBytes bytes = dc::rb_at_index(rb, 0, 4);
  alignas(8) std::uint8_t slot[hw::kRbBytes] = {};
  dc::publish_rb(slot, bytes);
  EXPECT_EQ(std::memcmp(slot, bytes.data(), hw::kRbBytes), 0);
}

}  // namespace
