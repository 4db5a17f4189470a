// Timing primitives of the PCIe link model (model/src/pcie/timing.*), and TLP-by-TLP streams
// built from them that reproduce the analytic bandwidth of link_math.
#include <gtest/gtest.h>

#include "test_links.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <set>
#include <stdexcept>
#include <vector>

#include "pcie/link_math.hpp"
#include "pcie/timing.hpp"

namespace pcie = spyre_dma::model::pcie;
using pcie::CreditGrant;
using pcie::CreditPool;
using pcie::LinkParams;
using pcie::Ps;
using pcie::Serializer;
using pcie::TagPool;
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

// ---------------------------------------------------------------------------------------------
// TLP-by-TLP streams: the primitives, charged as docs/model-pcie.md says, reproduce link_math.
// ---------------------------------------------------------------------------------------------

namespace {

// Device-to-host writes of `size` bytes, each at a fresh 4 KiB-aligned address, back to back.
struct WriteSim {
  double bytes_per_ns;
  Ps end_ps;
  std::uint64_t wire_bytes;
};

WriteSim simulate_writes(const LinkParams& p, std::uint64_t size, int transfers) {
  Serializer up;
  WireClock clock(pcie::tlp_ps_per_byte(p));
  const std::uint64_t stride = (size + 4095) / 4096 * 4096;
  for (int i = 0; i < transfers; ++i) {
    for (const pcie::Segment& s : pcie::write_segments(i * stride, size, p.mps)) {
      up.reserve(0, clock.duration_ps(pcie::tlp_wire_bytes(p, pcie::TlpType::kMWr, s.len)));
    }
  }
  return WriteSim{
      static_cast<double>(size) * transfers * 1000.0 / static_cast<double>(up.busy_until_ps()),
      up.busy_until_ps(), clock.total_bytes()};
}

struct ReadSim {
  double bytes_per_ns;
  Ps first_round_trip;
};

// Host-to-device reads (the device issues MRd upstream; CplDs return downstream), optionally
// interleaved with writes of the same size (pcie-bench's read/write). One-way latency `lat`,
// completer latency `host`, `ntags` tags.
ReadSim simulate_reads(const LinkParams& p, std::uint64_t size, int transfers, std::uint32_t ntags,
                       Ps lat, Ps host, bool with_writes) {
  Serializer up, down;
  WireClock up_clock(pcie::tlp_ps_per_byte(p)), down_clock(pcie::tlp_ps_per_byte(p));
  TagPool tags(ntags);
  const std::uint64_t stride = (size + 4095) / 4096 * 4096;
  Ps issue = 0, last = 0, first_rtt = 0;
  for (int i = 0; i < transfers; ++i) {
    const std::uint64_t addr = i * stride;
    if (with_writes) {
      for (const pcie::Segment& s : pcie::write_segments(addr, size, p.mps)) {
        const Ps d = up_clock.duration_ps(pcie::tlp_wire_bytes(p, pcie::TlpType::kMWr, s.len));
        issue = up.reserve(issue, d) + d;
      }
    }
    for (const pcie::Segment& r : pcie::read_requests(addr, size, p.mrrs)) {
      const pcie::TagGrant tag = tags.acquire(issue);
      const Ps d = up_clock.duration_ps(pcie::tlp_wire_bytes(p, pcie::TlpType::kMRd, 0));
      const Ps start = up.reserve(tag.at_ps, d);
      issue = start + d;
      Ps ready = issue + lat + host;
      for (const pcie::Segment& c :
           pcie::completions(r.addr, r.len, p.rcb, pcie::completion_limit(p))) {
        const Ps dc = down_clock.duration_ps(pcie::tlp_wire_bytes(p, pcie::TlpType::kCplD, c.len));
        ready = down.reserve(ready, dc) + dc;
      }
      const Ps done = ready + lat;
      if (first_rtt == 0) first_rtt = done - start;
      tags.release(tag.tag, done);
      last = std::max(last, done);
    }
  }
  return ReadSim{static_cast<double>(size) * transfers * 1000.0 / static_cast<double>(last),
                 first_rtt};
}

}  // namespace

TEST(PcieStreamSim, WritesReproduceAnalyticBandwidth) {
  for (const LinkParams& p :
       {link(3, 8, 256, 512), link(4, 16, 512, 4096), link(5, 16, 512, 4096)}) {
    for (std::uint64_t size : {1ull, 64ull, 257ull, 1500ull, 4096ull, 65536ull}) {
      SCOPED_TRACE(testing::Message() << "Gen" << p.generation << " size " << size);
      const int n = 2000;
      const WriteSim sim = simulate_writes(p, size, n);
      // The link is busy exactly ceil(wire bytes x TLP time per byte), not a ps more...
      EXPECT_EQ(sim.wire_bytes, n * pcie::write_wire(p, 0, size).upstream);
      EXPECT_EQ(sim.end_ps, pcie::tlp_ps_per_byte(p).ceil_ps(sim.wire_bytes));
      // ...so the bandwidth is the analytic one but for that last fraction of a ps.
      const double analytic = pcie::write_stream(p, size).payload_bytes_per_ns;
      EXPECT_NEAR(sim.bytes_per_ns / analytic, 1.0, 1.0 / static_cast<double>(sim.end_ps));
    }
  }
}

TEST(PcieStreamSim, ReadsAndReadWritesReproduceAnalyticBandwidth) {
  const LinkParams p = link(3, 8, 256, 512);
  for (std::uint64_t size : {64ull, 256ull, 1500ull, 2048ull, 16384ull}) {
    SCOPED_TRACE(testing::Message() << "size " << size);
    // Enough tags, no latency: whichever direction saturates first sets the rate.
    const ReadSim rd = simulate_reads(p, size, 20000, 1024, 0, 0, false);
    EXPECT_NEAR(rd.bytes_per_ns / pcie::read_stream(p, size).payload_bytes_per_ns, 1.0, 2e-4);
    const ReadSim rw = simulate_reads(p, size, 20000, 1024, 0, 0, true);
    EXPECT_NEAR(rw.bytes_per_ns / pcie::read_write_stream(p, size).payload_bytes_per_ns, 1.0, 2e-4);
  }
}

TEST(PcieStreamSim, TagsLimitReadsByLittlesLaw) {
  const LinkParams p = link(5, 16, 512, 512);
  const ReadSim rd =
      simulate_reads(p, 512, 20000, 8, pcie::ns_to_ps(250), pcie::ns_to_ps(300), false);
  const double limit = pcie::tag_limited_bytes_per_ns(8, 512, rd.first_round_trip);
  EXPECT_LT(limit, pcie::read_stream(p, 512).payload_bytes_per_ns);  // tags, not the link
  EXPECT_NEAR(rd.bytes_per_ns / limit, 1.0, 0.01);
}

TEST(PcieStreamSim, PostedCreditsLimitWrites) {
  // 512-B MWr take 32 data credits; 128 data credits let 4 be in flight. Each holds its credits
  // from its start until it has arrived plus the update latency.
  const LinkParams p = link(5, 16, 512, 4096);
  Serializer up;
  WireClock clock(pcie::tlp_ps_per_byte(p));
  CreditPool posted(64, 128);
  const Ps lat = pcie::ns_to_ps(150), update = pcie::ns_to_ps(200);
  Ps issue = 0, tlp_ps = 0;
  const int tlps = 20000;
  for (int i = 0; i < tlps; ++i) {
    const CreditGrant g =
        posted.acquire(issue, 1, static_cast<std::uint32_t>(pcie::data_credits(512)));
    const Ps d = clock.duration_ps(pcie::tlp_wire_bytes(p, pcie::TlpType::kMWr, 512));
    const Ps start = up.reserve(g.at_ps, d);
    issue = start + d;
    posted.release(g, start + d + lat + update);
    tlp_ps = d;
    posted.prune(start > 10 * (lat + update) ? start - 10 * (lat + update) : 0);
  }
  const double sim = 512.0 * tlps * 1000.0 / static_cast<double>(up.busy_until_ps());
  const double limit = 4 * 512.0 * 1000.0 / static_cast<double>(tlp_ps + lat + update);
  EXPECT_NEAR(sim / limit, 1.0, 0.01);
  EXPECT_LT(sim, pcie::write_stream(p, 512).payload_bytes_per_ns);
  EXPECT_LE(posted.event_count(), CreditPool::kDefaultMaxEvents);
}
