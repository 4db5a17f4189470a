// Ring (model/src/pcie/ring.hpp), the link model's double-ended queue: the same contents as a
// std::deque under the same random pushes, pops, inserts and erases, across wrap-arounds and
// growth; and the standard algorithms over its iterators.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <random>

#include "pcie/ring.hpp"

namespace pcie = spyre_dma::model::pcie;

namespace {

struct Item {
  std::uint64_t key = 0;
  std::uint32_t tag = 0;
};

void expect_same(const pcie::Ring<Item>& ring, const std::deque<Item>& ref, int step) {
  ASSERT_EQ(ring.size(), ref.size()) << "step " << step;
  ASSERT_EQ(ring.empty(), ref.empty()) << "step " << step;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    ASSERT_EQ(ring[i].key, ref[i].key) << "step " << step << " index " << i;
    ASSERT_EQ(ring[i].tag, ref[i].tag) << "step " << step << " index " << i;
  }
  if (!ref.empty()) {
    ASSERT_EQ(ring.front().key, ref.front().key) << "step " << step;
    ASSERT_EQ(ring.back().key, ref.back().key) << "step " << step;
  }
}

}  // namespace

TEST(PcieRing, MatchesADequeUnderRandomOperations) {
  for (std::uint32_t seed = 1; seed <= 4; ++seed) {
    std::mt19937_64 rng(seed);
    pcie::Ring<Item> ring;
    std::deque<Item> ref;
    // Sizes swing between a few and a few hundred, so the ring wraps, grows while wrapped and
    // shrinks again.
    for (int step = 0; step < 8000; ++step) {
      const Item v{rng(), static_cast<std::uint32_t>(step)};
      const std::uint64_t choice = rng() % 16;
      const bool grow = (step / 1000) % 2 == 0;
      if (choice < (grow ? 7u : 4u)) {
        ring.push_back(v);
        ref.push_back(v);
      } else if (choice < 9) {
        Item& slot = ring.emplace_back();
        EXPECT_EQ(slot.key, 0u);  // value-initialized
        slot = v;
        ref.push_back(v);
      } else if (choice < 11 && !ref.empty()) {
        ring.pop_front();
        ref.pop_front();
      } else if (choice < 12 && !ref.empty()) {
        ring.pop_back();
        ref.pop_back();
      } else if (choice < 14) {
        const std::size_t at = rng() % (ref.size() + 1);
        const auto it = ring.insert(ring.begin() + static_cast<std::ptrdiff_t>(at), v);
        ASSERT_EQ(it - ring.begin(), static_cast<std::ptrdiff_t>(at));
        ref.insert(ref.begin() + static_cast<std::ptrdiff_t>(at), v);
      } else if (!ref.empty()) {
        const std::size_t at = rng() % ref.size();
        ring.erase(ring.begin() + static_cast<std::ptrdiff_t>(at));
        ref.erase(ref.begin() + static_cast<std::ptrdiff_t>(at));
      }
      expect_same(ring, ref, step);
      if (HasFatalFailure()) return;
    }
    ring.clear();
    EXPECT_TRUE(ring.empty());
  }
}

TEST(PcieRing, InsertsAnElementOfItsOwn) {
  pcie::Ring<Item> ring;
  for (std::uint32_t k = 0; k < 16; ++k) ring.push_back(Item{k, k});  // full: the insert grows it
  ring.insert(ring.begin() + 3, ring[10]);
  ASSERT_EQ(ring.size(), 17u);
  EXPECT_EQ(ring[3].key, 10u);
  EXPECT_EQ(ring[11].key, 10u);
  EXPECT_EQ(ring[16].key, 15u);
}

TEST(PcieRing, WorksWithTheStandardAlgorithms) {
  pcie::Ring<Item> ring;
  for (std::uint32_t k = 0; k < 40; ++k) ring.push_back(Item{k, 0});
  for (int k = 0; k < 25; ++k) ring.pop_front();  // the contents now wrap when more are added
  for (std::uint32_t k = 40; k < 60; ++k) ring.push_back(Item{k, 0});
  ASSERT_EQ(ring.size(), 35u);
  const auto it =
      std::partition_point(ring.begin(), ring.end(), [](const Item& x) { return x.key < 47; });
  EXPECT_EQ(it->key, 47u);
  EXPECT_EQ(it - ring.begin(), 22);
  const pcie::Ring<Item>& view = ring;
  EXPECT_EQ(std::count_if(view.begin(), view.end(), [](const Item& x) { return x.key % 2 == 0; }), 17);
  std::uint64_t sum = 0;
  for (const auto& x : view) sum += x.key;
  EXPECT_EQ(sum, (25u + 59u) * 35u / 2u);
  EXPECT_EQ(std::prev(view.end())->key, 59u);
}
