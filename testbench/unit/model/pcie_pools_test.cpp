// The flow-control pools of the PCIe link model (model/src/pcie/timing.*): CreditPool, which
// holds a TLP back until the receiver has credits for it, and TagPool, which hands out the tags
// of outstanding reads.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

#include "pcie/timing.hpp"

namespace pcie = spyre_dma::model::pcie;
using pcie::CreditGrant;
using pcie::CreditPool;
using pcie::Ps;
using pcie::TagPool;

// ---------------------------------------------------------------------------------------------
// CreditPool
// ---------------------------------------------------------------------------------------------

TEST(PcieCredits, WaitsForReleases) {
  CreditPool pool(2, 0);  // 2 header credits, infinite data
  const CreditGrant g1 = pool.acquire(0, 1, 100);
  const CreditGrant g2 = pool.acquire(0, 1, 0);
  EXPECT_EQ(g1.at_ps, 0u);
  EXPECT_EQ(g2.at_ps, 0u);
  EXPECT_NE(g1.id, g2.id);
  EXPECT_FALSE(pool.try_acquire(0, 1, 0).has_value());  // both held, no release known yet
  EXPECT_THROW(pool.acquire(0, 1, 0), std::logic_error);
  pool.release(g1, 500);
  const CreditGrant g3 = pool.acquire(0, 1, 0);
  EXPECT_EQ(g3.at_ps, 500u);
  pool.release(g2, 300);
  EXPECT_EQ(pool.header_in_use_at(0), 2u);
  EXPECT_EQ(pool.header_in_use_at(299), 2u);
  EXPECT_EQ(pool.header_in_use_at(300), 1u);
  EXPECT_EQ(pool.header_in_use_at(500), 1u);  // g1 back, g3 out
  const CreditGrant g4 = pool.acquire(0, 1, 0);
  EXPECT_EQ(g4.at_ps, 300u);
  EXPECT_EQ(pool.unreleased_grants(), 2u);
  pool.release(g3, 900);
  pool.release(g4, 800);
  EXPECT_EQ(pool.header_in_use_at(900), 0u);
  EXPECT_EQ(pool.unreleased_grants(), 0u);
}

TEST(PcieCredits, DataCreditsAndBothKinds) {
  CreditPool pool(8, 64);
  const CreditGrant a = pool.acquire(0, 1, 32);
  const CreditGrant b = pool.acquire(0, 1, 32);
  EXPECT_FALSE(pool.try_acquire(0, 1, 1).has_value());  // data exhausted
  pool.release(a, 100);
  EXPECT_EQ(pool.acquire(10, 1, 16).at_ps, 100u);
  pool.release(b, 200);
  EXPECT_EQ(pool.acquire(10, 1, 16).at_ps, 100u);  // 32 + 16 + 16 <= 64 from 100 on
  EXPECT_EQ(pool.data_in_use_at(150), 64u);
  EXPECT_EQ(pool.data_in_use_at(200), 32u);
  EXPECT_EQ(pool.try_acquire(0, 0, 1)->at_ps, 200u);  // full on [100, 200)
}

TEST(PcieCredits, GrantCannotSlotBeforeALaterBooking) {
  // A grant holds until its release, unknown when it is made: it cannot use the free time before
  // a booking that is later in time, even if it asks earlier.
  CreditPool pool(1, 0);
  const CreditGrant late = pool.acquire(1000, 1, 0);
  EXPECT_EQ(late.at_ps, 1000u);
  pool.release(late, 2000);
  EXPECT_EQ(pool.acquire(0, 1, 0).at_ps, 2000u);
}

TEST(PcieCredits, InfiniteCapacity) {
  CreditPool pool(0, 0);
  for (Ps t = 0; t < 1000; ++t) {
    EXPECT_EQ(pool.acquire(t, 100, 4096).at_ps, t);
  }
  EXPECT_EQ(pool.event_count(), 0u);
  CreditPool headers_only(1, 0);
  const CreditGrant g = headers_only.acquire(5, 1, 1000000);  // data infinite: any amount
  EXPECT_EQ(g.at_ps, 5u);
  EXPECT_EQ(headers_only.data_in_use_at(10), 0u);
}

TEST(PcieCredits, MisuseThrows) {
  CreditPool pool(2, 64);
  EXPECT_THROW(pool.acquire(0, 3, 0), std::invalid_argument);
  EXPECT_THROW(pool.acquire(0, 1, 65), std::invalid_argument);
  const CreditGrant g = pool.acquire(100, 1, 16);
  EXPECT_THROW(pool.release(g, 99), std::logic_error);  // before its grant
  CreditGrant forged = g;
  forged.id = 12345;
  EXPECT_THROW(pool.release(forged, 200), std::logic_error);  // never acquired
  CreditGrant moved = g;
  moved.at_ps = 0;
  EXPECT_THROW(pool.release(moved, 200), std::logic_error);  // does not match
  pool.release(g, 200);
  EXPECT_THROW(pool.release(g, 300), std::logic_error);  // double release
  EXPECT_EQ(pool.header_in_use_at(250), 0u);
  EXPECT_THROW(CreditPool(1, 1, 1), std::invalid_argument);
}

TEST(PcieCredits, PruneAndBoundedHistory) {
  CreditPool pool(1, 0, 4);
  Ps t = 0;
  for (int i = 0; i < 100; ++i) {  // holds [20 i, 20 i + 10): two events each, idle between
    const CreditGrant g = pool.acquire(t, 1, 0);
    EXPECT_EQ(g.at_ps, t);
    pool.release(g, g.at_ps + 10);
    t = g.at_ps + 20;
    EXPECT_LE(pool.event_count(), 4u);
  }
  EXPECT_GT(pool.floor_ps(), 1900u);  // the oldest history was folded
  EXPECT_LT(pool.floor_ps(), 1990u);
  EXPECT_EQ(pool.acquire(0, 1, 0).at_ps, 1990u);  // after the last hold: grants hold for ever
  pool.prune(5000);
  EXPECT_EQ(pool.floor_ps(), 5000u);
  EXPECT_EQ(pool.header_in_use_at(5000), 1u);  // the unreleased grant
  EXPECT_THROW(pool.header_in_use_at(10), std::invalid_argument);
}

TEST(PcieCredits, ReleaseIntoThePrunedPast) {
  CreditPool pool(1, 0);
  const CreditGrant g = pool.acquire(0, 1, 0);
  pool.prune(1000);
  pool.release(g, 500);  // before the floor: it counts as back by the floor
  EXPECT_EQ(pool.header_in_use_at(1000), 0u);
  EXPECT_EQ(pool.acquire(0, 1, 0).at_ps, 1000u);
}

// The pool against its definition, written the plain way: usage as a sorted list of changes, and
// a grant at the earliest time from which every later step leaves room. Random grants and
// releases in and out of time order, both kinds limited, pruning and the bounded history folding
// the past; every answer and every usage figure must agree.
TEST(PcieCredits, AgreesWithThePlainDefinition) {
  struct Reference {
    std::uint32_t cap_h, cap_d;
    std::map<Ps, std::pair<std::int64_t, std::int64_t>> changes;
    std::int64_t base_h = 0, base_d = 0;
    Ps floor = 0;
    std::optional<Ps> find(Ps earliest, std::uint32_t h, std::uint32_t d) const {
      const Ps start = std::max(earliest, floor);
      auto over = [&](std::int64_t uh, std::int64_t ud) {
        return uh + h > std::int64_t{cap_h} || ud + d > std::int64_t{cap_d};
      };
      std::int64_t uh = base_h, ud = base_d;
      std::optional<Ps> answer = over(uh, ud) ? std::optional<Ps>(changes.empty() ? 0 : changes.begin()->first)
                                              : std::optional<Ps>(start);
      if (over(uh, ud) && changes.empty()) return std::nullopt;
      for (auto it = changes.begin(); it != changes.end(); ++it) {
        uh += it->second.first;
        ud += it->second.second;
        if (over(uh, ud)) {
          const auto next = std::next(it);
          if (next == changes.end()) return std::nullopt;
          answer = next->first;
        }
      }
      return std::max(start, *answer);
    }
    void add(Ps t, std::int64_t h, std::int64_t d) {
      auto& c = changes[t];
      c.first += h;
      c.second += d;
      if (c.first == 0 && c.second == 0) changes.erase(t);
    }
    void fold(Ps t) {
      while (!changes.empty() && changes.begin()->first <= t) {
        base_h += changes.begin()->second.first;
        base_d += changes.begin()->second.second;
        changes.erase(changes.begin());
      }
      floor = std::max(floor, t);
    }
    std::int64_t header_at(Ps t) const {
      std::int64_t u = base_h;
      for (const auto& [at, c] : changes) if (at <= t) u += c.first;
      return u;
    }
  };
  // Seeds 1-20 grant and release in random order; 21-30 as a link's writes do, in time order
  // (grants near the end, each released a round trip later, oldest first), where the peak bound
  // answers most requests and credits still run short at times.
  for (std::uint32_t seed = 1; seed <= 30; ++seed) {
    const bool in_order = seed > 20;
    Ps last_grant = 0;
    std::mt19937_64 rng(seed);
    const std::uint32_t cap_h = 2 + static_cast<std::uint32_t>(rng() % 12);
    const std::uint32_t cap_d = 8 + static_cast<std::uint32_t>(rng() % 200);
    const std::size_t history = 16 + rng() % 64;
    CreditPool pool(cap_h, cap_d, history);
    Reference ref{cap_h, cap_d, {}, 0, 0, 0};
    std::vector<CreditGrant> held;
    Ps now = 0;
    for (int step = 0; step < 3000; ++step) {
      const auto choice = rng() % 10;
      if (choice < 5) {
        const Ps earliest = in_order ? std::max(now, last_grant) + rng() % 20 : now + rng() % 400;
        const auto h = static_cast<std::uint32_t>(1 + rng() % 2);
        const auto d = static_cast<std::uint32_t>(rng() % (cap_d / 2 + 1));
        const std::optional<Ps> want = ref.find(earliest, h, d);
        const std::optional<CreditGrant> got = pool.try_acquire(earliest, h, d);
        ASSERT_EQ(got.has_value(), want.has_value()) << "seed " << seed << " step " << step;
        if (!got) continue;
        ASSERT_EQ(got->at_ps, *want) << "seed " << seed << " step " << step;
        ref.add(got->at_ps, h, d);
        held.push_back(*got);
        last_grant = std::max(last_grant, got->at_ps);
      } else if (choice < 9 && !held.empty()) {
        const std::size_t i = in_order ? 0 : rng() % held.size();
        const CreditGrant g = held[i];
        held.erase(held.begin() + static_cast<std::ptrdiff_t>(i));
        const Ps at = g.at_ps + (in_order ? 300 + rng() % 100 : rng() % 3000);
        pool.release(g, at);
        if (at <= ref.floor) {
          ref.base_h -= g.header;
          ref.base_d -= g.data;
        } else {
          ref.add(at, -std::int64_t{g.header}, -std::int64_t{g.data});
        }
      } else {
        now += rng() % 500;
        pool.prune(now);
        if (now > ref.floor) ref.fold(now);
      }
      while (ref.changes.size() > history) ref.fold(ref.changes.begin()->first);
      ASSERT_EQ(pool.event_count(), ref.changes.size()) << "seed " << seed << " step " << step;
      ASSERT_EQ(pool.floor_ps(), ref.floor) << "seed " << seed << " step " << step;
      const Ps probe = ref.floor + rng() % 4000;
      ASSERT_EQ(pool.header_in_use_at(probe), static_cast<std::uint64_t>(ref.header_at(probe)))
          << "seed " << seed << " step " << step;
    }
    ASSERT_EQ(pool.unreleased_grants(), held.size());
  }
}

// ---------------------------------------------------------------------------------------------
// TagPool
// ---------------------------------------------------------------------------------------------

TEST(PcieTags, UniqueWhileOutstanding) {
  TagPool tags(4);
  std::set<std::uint32_t> seen;
  for (int i = 0; i < 4; ++i) {
    const pcie::TagGrant g = tags.acquire(10);
    EXPECT_EQ(g.at_ps, 10u);
    EXPECT_LT(g.tag, 4u);
    EXPECT_TRUE(seen.insert(g.tag).second);
    EXPECT_TRUE(tags.is_outstanding(g.tag));
  }
  EXPECT_EQ(tags.outstanding(), 4u);
  EXPECT_FALSE(tags.try_acquire(0).has_value());
  EXPECT_THROW(tags.acquire(0), std::logic_error);
  tags.release(2, 500);
  const pcie::TagGrant g = tags.acquire(100);
  EXPECT_EQ(g.tag, 2u);
  EXPECT_EQ(g.at_ps, 500u);
}

TEST(PcieTags, BestFitAndLowestTagFirst) {
  TagPool tags(3);
  EXPECT_EQ(tags.acquire(0).tag, 0u);  // all free at 0: lowest first
  EXPECT_EQ(tags.acquire(0).tag, 1u);
  EXPECT_EQ(tags.acquire(0).tag, 2u);
  tags.release(0, 100);
  tags.release(1, 200);
  tags.release(2, 300);
  EXPECT_EQ(tags.free_at_ps(1), 200u);
  const pcie::TagGrant a = tags.acquire(250);  // free by 250: 0 and 1; 1 was freed last
  EXPECT_EQ(a.tag, 1u);
  EXPECT_EQ(a.at_ps, 250u);
  const pcie::TagGrant b = tags.acquire(50);  // none free by 50: the first freed, at 100
  EXPECT_EQ(b.tag, 0u);
  EXPECT_EQ(b.at_ps, 100u);
  const pcie::TagGrant c = tags.acquire(0);
  EXPECT_EQ(c.tag, 2u);
  EXPECT_EQ(c.at_ps, 300u);
}

TEST(PcieTags, MisuseThrows) {
  EXPECT_THROW(TagPool(0), std::invalid_argument);
  TagPool tags(2);
  EXPECT_THROW(tags.release(0, 10), std::logic_error);       // not outstanding
  EXPECT_THROW(tags.release(2, 10), std::invalid_argument);  // no such tag
  const pcie::TagGrant g = tags.acquire(100);
  EXPECT_THROW(tags.release(g.tag, 99), std::logic_error);  // before its grant
  EXPECT_THROW(tags.free_at_ps(g.tag), std::logic_error);
  EXPECT_THROW(tags.is_outstanding(7), std::invalid_argument);
  tags.release(g.tag, 100);
  EXPECT_THROW(tags.release(g.tag, 200), std::logic_error);  // double release
  EXPECT_EQ(tags.outstanding(), 0u);
}

TEST(PcieTags, RandomizedUniqueness) {
  std::mt19937_64 rng(99);
  TagPool tags(16);
  std::vector<std::pair<std::uint32_t, Ps>> out;  // outstanding: tag, grant time
  for (int i = 0; i < 20000; ++i) {
    if (out.size() < 16 && (out.empty() || rng() % 2 == 0)) {
      const Ps earliest = rng() % 100000;
      const pcie::TagGrant g = tags.acquire(earliest);
      ASSERT_GE(g.at_ps, earliest);
      for (const auto& o : out) ASSERT_NE(o.first, g.tag);
      out.emplace_back(g.tag, g.at_ps);
    } else {
      const std::size_t k = rng() % out.size();
      tags.release(out[k].first, out[k].second + rng() % 1000);
      out.erase(out.begin() + static_cast<std::ptrdiff_t>(k));
    }
    ASSERT_EQ(tags.outstanding(), out.size());
  }
}
