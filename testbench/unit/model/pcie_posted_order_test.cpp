// PostedOrder (model/src/pcie/posted_order.hpp), the ordering rule behind posted writes: its answer
// against the plain definition (the latest departure of every write queued at or before the
// time asked, the pruned ones included) under random writes in and out of time order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "pcie/posted_order.hpp"

namespace pcie = spyre_dma::model::pcie;

TEST(PcieOrder, AgreesWithThePlainDefinition) {
  for (std::uint32_t seed = 1; seed <= 8; ++seed) {
    std::mt19937_64 rng(seed);
    pcie::PostedOrder order;
    std::vector<std::pair<pcie::Ps, pcie::Ps>> writes;  // (queued, left), every one ever added
    pcie::Ps now = 0;
    for (int step = 0; step < 4000; ++step) {
      const unsigned what = rng() % 10;
      if (what < 6) {
        // Mostly near the back in time, now and then well behind it (an RB after the next CB).
        const pcie::Ps queued = now + (rng() % 8 == 0 ? rng() % 200 : 150 + rng() % 100);
        const pcie::Ps left = queued + rng() % 500;
        order.add(queued, left);
        writes.emplace_back(queued, left);
      } else if (what < 9) {
        const pcie::Ps t = now + rng() % 400;
        pcie::Ps expected = 0;
        for (const auto& [q, l] : writes) {
          if (q <= t) expected = std::max(expected, l);
        }
        ASSERT_EQ(order.clear_at(t), expected) << "seed " << seed << " step " << step << " t " << t;
      } else {
        now += rng() % 100;  // nothing is queued before now from here on
        order.prune(now);
      }
    }
  }
}

TEST(PcieOrder, AWriteQueuedAfterTheTimeAskedDoesNotHoldIt) {
  pcie::PostedOrder order;
  order.add(100, 900);
  order.add(200, 250);
  EXPECT_EQ(order.clear_at(99), 0u);
  EXPECT_EQ(order.clear_at(100), 900u);
  EXPECT_EQ(order.clear_at(150), 900u);
  order.add(50, 1000);  // booked late, queued first: it holds everything queued from 50 on
  EXPECT_EQ(order.clear_at(60), 1000u);
  EXPECT_EQ(order.clear_at(300), 1000u);
  order.prune(120);  // the writes queued at 50 and 100 fold into the floor
  EXPECT_EQ(order.size(), 1u);
  EXPECT_EQ(order.clear_at(130), 1000u);
}
