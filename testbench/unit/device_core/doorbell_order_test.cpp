// The barrier rule of the device core: which retirements a barrier CB waits for, on every backend.
#include <gtest/gtest.h>

#include "spyre_dma/device_core/doorbell_order.hpp"
#include "spyre_dma/device_core/register_file.hpp"

namespace {

namespace dc = spyre_dma::device_core;
using spyre_dma::hw::Pipeline;

// A doorbell register of each pipeline, as a backend's RegisterFile holds it.
struct Doorbells {
  dc::DoorbellOrder order{{256, 1024, 1024}};
  std::array<dc::PlainWord, 3> cb_pi{};
  void ring(Pipeline p, std::uint32_t pi, std::uint32_t retired = 0) {
    order.ring(p, pi, retired, cb_pi[static_cast<unsigned>(p)]);
  }
};

TEST(DoorbellOrder, ABarrierWaitsForTheLastEarlierDoorbellOfEachOtherPipeline) {
  Doorbells d;
  d.ring(Pipeline::kDmai, 2);
  d.ring(Pipeline::kDmai, 5);
  d.ring(Pipeline::kCompute, 1);
  d.ring(Pipeline::kDmao, 1);  // the barrier CB, index 0
  const auto t = d.order.barrier_targets(Pipeline::kDmao, 0);
  EXPECT_EQ(t[0], 1u);
  EXPECT_EQ(t[1], 5u);
  EXPECT_FALSE(t[2].has_value()) << "its own pipeline is ordered by the ring";
}

TEST(DoorbellOrder, LaterDoorbellsAreNoTarget) {
  Doorbells d;
  d.ring(Pipeline::kDmao, 1);  // the barrier CB
  d.ring(Pipeline::kDmai, 3);
  const auto t = d.order.barrier_targets(Pipeline::kDmao, 0);
  EXPECT_FALSE(t[1].has_value());
}

TEST(DoorbellOrder, ACbCarriesTheSequenceNumberOfTheDoorbellThatHandedItOver) {
  Doorbells d;
  d.ring(Pipeline::kDmao, 2);  // CBs 0, 1
  d.ring(Pipeline::kDmai, 4);
  d.ring(Pipeline::kDmao, 3);  // CB 2
  EXPECT_FALSE(d.order.barrier_targets(Pipeline::kDmao, 1)[1].has_value());
  EXPECT_EQ(d.order.barrier_targets(Pipeline::kDmao, 2)[1], 4u);
}

TEST(DoorbellOrder, ADoorbellThatMovesNothingHandsNothingOver) {
  Doorbells d;
  d.ring(Pipeline::kDmai, 3);
  d.ring(Pipeline::kDmai, 3);  // rung again, no new CB
  d.ring(Pipeline::kDmao, 1);
  EXPECT_EQ(d.order.barrier_targets(Pipeline::kDmao, 0)[1], 3u);
}

TEST(DoorbellOrder, RetiredDoorbellsLongPastAreForgotten) {
  Doorbells d;
  const std::uint32_t n = 3 * dc::DoorbellOrder::kKeptRetired;
  for (std::uint32_t i = 1; i <= n; ++i) d.ring(Pipeline::kDmai, i, i - 1);
  d.ring(Pipeline::kDmao, 1);
  EXPECT_EQ(d.order.barrier_targets(Pipeline::kDmao, 0)[1], n) << "the newest earlier doorbell stays";
}

TEST(DoorbellOrder, ClearForgetsEverything) {
  Doorbells d;
  d.ring(Pipeline::kDmai, 3);
  d.order.clear();
  d.cb_pi = {};
  d.ring(Pipeline::kDmao, 1);
  EXPECT_FALSE(d.order.barrier_targets(Pipeline::kDmao, 0)[1].has_value());
}

}  // namespace
