// TLP-by-TLP streams built from the PCIe timing primitives (model/src/pcie/timing.*), charged
// as docs/model-pcie.md says: they reproduce the analytic bandwidth of link_math, and the limits
// that tags and posted credits set.
#include <gtest/gtest.h>

#include "test_links.hpp"

#include <algorithm>
#include <cstdint>

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
