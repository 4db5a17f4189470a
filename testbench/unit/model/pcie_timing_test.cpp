// Timing primitives of the PCIe link model (model/src/pcie/timing.*): picosecond time, the wire
// clock, and the serializer that books a direction of the link. The credit and tag pools are in
// pcie_pools_test.cpp, and TLP-by-TLP streams built from these in pcie_stream_sim_test.cpp.
#include <gtest/gtest.h>

#include "test_links.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <utility>
#include <vector>

#include "pcie/link_math.hpp"
#include "pcie/timing.hpp"

namespace pcie = spyre_dma::model::pcie;
using pcie::Ps;
using pcie::Serializer;
using pcie::WireClock;

namespace {

using spyre_dma::model::testing::link;

constexpr Ps kMax = std::numeric_limits<Ps>::max();

}  // namespace

// ---------------------------------------------------------------------------------------------
// ns_to_ps, WireClock
// ---------------------------------------------------------------------------------------------

TEST(PcieTime, NsToPs) {
  EXPECT_EQ(pcie::ns_to_ps(0.0), 0u);
  EXPECT_EQ(pcie::ns_to_ps(150.0), 150000u);
  EXPECT_EQ(pcie::ns_to_ps(0.0004), 0u);
  EXPECT_EQ(pcie::ns_to_ps(0.0006), 1u);
  EXPECT_EQ(pcie::ns_to_ps(1.2346), 1235u);
  EXPECT_THROW(pcie::ns_to_ps(-1.0), std::invalid_argument);
  EXPECT_THROW(pcie::ns_to_ps(std::nan("")), std::invalid_argument);
  EXPECT_THROW(pcie::ns_to_ps(std::numeric_limits<double>::infinity()), std::invalid_argument);
  EXPECT_THROW(pcie::ns_to_ps(1e17), std::overflow_error);
}

TEST(PcieWireClock, DurationsSumExactly) {
  const pcie::PsPerByte rate = pcie::tlp_ps_per_byte(link(5, 16, 512, 4096));
  WireClock clock(rate);
  std::mt19937_64 rng(7);
  Ps sum = 0;
  std::uint64_t bytes = 0;
  for (int i = 0; i < 100000; ++i) {
    const std::uint64_t b = 20 + rng() % 517;
    const Ps d = clock.duration_ps(b);
    sum += d;
    bytes += b;
    const double exact = static_cast<double>(b) * rate.value();
    ASSERT_LT(std::fabs(static_cast<double>(d) - exact), 1.0);  // within 1 ps of its share
  }
  EXPECT_EQ(clock.total_bytes(), bytes);
  EXPECT_EQ(clock.total_ps(), sum);
  EXPECT_EQ(sum, rate.ceil_ps(bytes));  // no drift at all
  EXPECT_THROW(WireClock(pcie::PsPerByte{0, 1}), std::invalid_argument);
}

TEST(PcieWireClock, RawGen3x8IsAnExactFraction) {
  WireClock clock(pcie::raw_ps_per_byte(link(3, 8, 256, 512)));  // 126.953125 ps per byte
  EXPECT_EQ(clock.duration_ps(1), 127u);
  EXPECT_EQ(clock.duration_ps(1), 127u);  // 253.90625 -> 254
  EXPECT_EQ(clock.duration_ps(62), 8125u - 254u);
  EXPECT_EQ(clock.total_ps(), 8125u);
}

// ---------------------------------------------------------------------------------------------
// Serializer
// ---------------------------------------------------------------------------------------------

TEST(PcieSerializer, BackToBackMerges) {
  Serializer s;
  EXPECT_EQ(s.reserve(0, 10), 0u);
  EXPECT_EQ(s.reserve(0, 10), 10u);
  EXPECT_EQ(s.reserve(5, 10), 20u);
  EXPECT_EQ(s.interval_count(), 1u);
  EXPECT_EQ(s.busy_until_ps(), 30u);
  EXPECT_EQ(s.busy_ps(), 30u);
  EXPECT_EQ(s.reservations(), 3u);
  EXPECT_EQ(s.reserve(40, 5), 40u);  // idle gap [30, 40)
  EXPECT_EQ(s.interval_count(), 2u);
}

TEST(PcieSerializer, FillsEarliestGapThatFits) {
  Serializer s;
  s.reserve(0, 30);
  EXPECT_EQ(s.reserve(100, 10), 100u);  // [0,30) [100,110)
  EXPECT_EQ(s.reserve(0, 50), 30u);     // [30,80) fits before 100
  EXPECT_EQ(s.interval_count(), 2u);    // [0,80) [100,110)
  EXPECT_EQ(s.reserve(0, 30), 110u);    // the gap [80,100) is too short
  EXPECT_EQ(s.reserve(0, 20), 80u);     // exactly fills it; everything merges
  EXPECT_EQ(s.interval_count(), 1u);
  EXPECT_EQ(s.busy_until_ps(), 140u);
}

TEST(PcieSerializer, SpreadFillsEveryGapInTurn) {
  Serializer s;
  s.reserve(10, 10);   // [10,20)
  s.reserve(25, 5);    // [25,30)
  s.reserve(40, 10);   // [40,50)
  // 10 + 5 + 10 of 27: the gaps [0,10), [20,25), [30,40), then 2 after the last booking.
  EXPECT_EQ(s.reserve_spread(0, 27), 52u);
  EXPECT_EQ(s.interval_count(), 1u);  // everything joined: [0,52)
  EXPECT_EQ(s.busy_until_ps(), 52u);
  EXPECT_EQ(s.busy_ps(), 25u + 27u);
  // From inside a booking: starts at its end.
  EXPECT_EQ(s.reserve_spread(30, 3), 55u);
  // Ending inside a gap leaves the rest of it free for the next booking.
  s.reserve(100, 10);  // [0,55) [100,110)
  EXPECT_EQ(s.reserve_spread(60, 20), 80u);  // [60,80)
  EXPECT_EQ(s.reserve(0, 20), 80u);          // [80,100) still free, and exactly fills it
  EXPECT_EQ(s.interval_count(), 2u);         // [0,55) [60,110)
  EXPECT_EQ(s.reserve_spread(0, 0), 0u);     // nothing to book: the earliest time
}

TEST(PcieSerializer, SpreadMatchesReserveWhereItFits) {
  // With room in one gap, spreading books exactly what first fit would.
  Serializer a, b;
  for (Ps t : {Ps{0}, Ps{100}, Ps{230}}) {
    EXPECT_EQ(a.reserve(t, 50) + 50, b.reserve_spread(t, 50));
  }
  EXPECT_EQ(a.interval_count(), b.interval_count());
  EXPECT_EQ(a.busy_until_ps(), b.busy_until_ps());
}

TEST(PcieSerializer, LateCallEarlyTime) {
  // A temporally decoupled initiator far ahead books first; one behind still gets its time.
  Serializer s;
  EXPECT_EQ(s.reserve(1000000, 500), 1000000u);
  EXPECT_EQ(s.reserve(2000, 500), 2000u);
  EXPECT_EQ(s.reserve(999800, 500), 1000500u);  // would overlap: goes after
  EXPECT_EQ(s.reserve(999400, 100), 999400u);   // fits in front
  EXPECT_EQ(s.peek(0, 1), 0u);
}

TEST(PcieSerializer, ZeroDurationAndPeek) {
  Serializer s;
  s.reserve(10, 10);
  EXPECT_EQ(s.reserve(15, 0), 20u);  // not inside a booking
  EXPECT_EQ(s.reserve(10, 0), 10u);  // at its start is fine
  EXPECT_EQ(s.reserve(5, 0), 5u);
  EXPECT_EQ(s.interval_count(), 1u);
  EXPECT_EQ(s.peek(0, 10), 0u);
  EXPECT_EQ(s.peek(0, 11), 20u);
  EXPECT_EQ(s.interval_count(), 1u);
  EXPECT_EQ(s.reserve(0, 11), 20u);
}

TEST(PcieSerializer, PruneRaisesTheFloor) {
  Serializer s;
  s.reserve(0, 10);
  s.reserve(100, 10);
  s.prune(50);
  EXPECT_EQ(s.floor_ps(), 50u);
  EXPECT_EQ(s.interval_count(), 1u);
  EXPECT_EQ(s.reserve(0, 10), 50u);  // nothing before the floor
  s.prune(105);                      // inside a booking: it stays busy until 110
  EXPECT_EQ(s.reserve(0, 1), 110u);
  s.prune(10);  // below the floor: nothing
  EXPECT_EQ(s.floor_ps(), 105u);
  EXPECT_EQ(s.busy_ps(), 31u);
}

TEST(PcieSerializer, BoundedHistoryDropsOldestGap) {
  Serializer s(2);
  s.reserve(0, 1);
  s.reserve(10, 1);
  s.reserve(20, 1);  // three intervals: the oldest goes, the floor is its end
  EXPECT_EQ(s.interval_count(), 2u);
  EXPECT_EQ(s.floor_ps(), 1u);
  EXPECT_EQ(s.reserve(0, 1), 1u);  // the gap [1,10) is still there
  EXPECT_EQ(s.floor_ps(), 2u);
  EXPECT_THROW(Serializer(0), std::invalid_argument);
}

TEST(PcieSerializer, OverflowThrowsAndLeavesStateAlone) {
  Serializer s;
  s.reserve(0, 10);
  EXPECT_THROW(s.reserve(kMax - 5, 10), std::overflow_error);
  EXPECT_THROW(s.peek(kMax, 1), std::overflow_error);
  EXPECT_EQ(s.interval_count(), 1u);
  EXPECT_EQ(s.reservations(), 1u);
  EXPECT_EQ(s.reserve(kMax - 10, 10), kMax - 10);
}

TEST(PcieSerializer, MatchesBruteForceFirstFit) {
  std::mt19937_64 rng(42);
  Serializer s(1u << 20);                 // no pruning in this test
  std::vector<std::pair<Ps, Ps>> booked;  // disjoint, sorted by start (so by end too)
  auto overlaps = [&](Ps t, Ps d) {
    auto it = std::partition_point(booked.begin(), booked.end(),
                                   [t](const auto& b) { return b.second <= t; });
    return it != booked.end() && it->first < t + d;
  };
  for (int i = 0; i < 3000; ++i) {
    const Ps earliest = rng() % 200000;
    const Ps d = 1 + rng() % 300;
    // Brute force: the smallest t in {earliest} U {ends >= earliest} with no overlap.
    Ps want = kMax;
    if (!overlaps(earliest, d)) want = earliest;
    for (const auto& b : booked) {
      if (b.second >= earliest && b.second < want && !overlaps(b.second, d)) want = b.second;
    }
    const Ps got = s.reserve(earliest, d);
    ASSERT_EQ(got, want) << "reservation " << i;
    booked.insert(std::upper_bound(booked.begin(), booked.end(), std::make_pair(got, got + d)),
                  std::make_pair(got, got + d));
  }
  EXPECT_GT(s.interval_count(), 100u);  // the test did exercise gaps
}
