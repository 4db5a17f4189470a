// PCIe link arithmetic (model/src/pcie/link_math.*) against the pcie-bench PCIe model
// (Neugebauer et al., SIGCOMM 2018; pcie-bench/pcie-model) and the PCIe splitting rules.
#include <gtest/gtest.h>

#include "test_links.hpp"

#include "bw_calc_rows.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

#include "pcie/link_math.hpp"

namespace pcie = spyre_dma::model::pcie;
using spyre_dma::model::BwCalcRow;
using spyre_dma::model::kBwCalc;
using pcie::LinkParams;
using pcie::Segment;
using pcie::TlpType;

namespace {

using spyre_dma::model::testing::link;

double rel_err(double got, double want) { return std::fabs(got - want) / want; }

constexpr std::uint64_t kLarge = 1u << 20;  // "large transfers": 1 MiB, aligned

}  // namespace

// ---------------------------------------------------------------------------------------------
// Rates and sizes
// ---------------------------------------------------------------------------------------------

TEST(PcieRate, RawRatesAreExact) {
  // 8 GT/s x 128/130 x 8 lanes / 8 = 7.877 GB/s: 126.953125 ps per byte, exactly.
  EXPECT_EQ(pcie::raw_ps_per_byte(link(3, 8, 256, 512)), (pcie::PsPerByte{8125, 64}));
  EXPECT_EQ(pcie::raw_ps_per_byte(link(5, 16, 512, 4096)), (pcie::PsPerByte{8125, 512}));
  EXPECT_EQ(pcie::raw_ps_per_byte(link(1, 1, 128, 128)), (pcie::PsPerByte{4000, 1}));
  EXPECT_EQ(pcie::raw_ps_per_byte(link(2, 4, 128, 128)), (pcie::PsPerByte{500, 1}));
  // facts.md: raw 7.88 / 31.51 / 63.02 GB/s.
  EXPECT_NEAR(pcie::raw_bytes_per_ns(link(3, 8, 256, 512)), 7.88, 0.005);
  EXPECT_NEAR(pcie::raw_bytes_per_ns(link(4, 16, 256, 512)), 31.51, 0.005);
  EXPECT_NEAR(pcie::raw_bytes_per_ns(link(5, 16, 256, 512)), 63.02, 0.005);
  EXPECT_DOUBLE_EQ(pcie::raw_bytes_per_ns(link(5, 16, 256, 512)), 32.0 * 128 / 130 * 16 / 8);
}

TEST(PcieRate, DllpTablesAndOverhead) {
  EXPECT_EQ(pcie::ack_limit_symbols(3, 8, 256), 203u);
  EXPECT_EQ(pcie::fc_update_symbols(3, 8, 256), 203u);
  EXPECT_EQ(pcie::ack_limit_symbols(5, 16, 512), 182u);
  EXPECT_EQ(pcie::ack_limit_symbols(1, 8, 512), 86u);  // the spec's x8 dip, as tabulated
  EXPECT_EQ(pcie::ack_limit_symbols(1, 32, 2048), 148u);
  EXPECT_EQ(pcie::fc_update_symbols(1, 32, 2048), 248u);  // pcie-bench's two tables differ here
  EXPECT_EQ(pcie::ack_limit_symbols(2, 32, 4096), 237u);
  EXPECT_EQ(pcie::fc_update_symbols(2, 32, 4096), 327u);
  EXPECT_EQ(pcie::ack_limit_symbols(4, 1, 4096), 4239u);

  const LinkParams p = link(3, 8, 256, 512);
  const double o = 8.0 / 203 + 8.0 / 203 + 4.0 / 1538;
  EXPECT_DOUBLE_EQ(pcie::link_overhead_fraction(p), o);
  EXPECT_NEAR(pcie::tlp_bytes_per_ns(p), pcie::raw_bytes_per_ns(p) * (1 - o), 1e-12);
  // pcie-bench prints the Gen3 x8 MPS 256 TLP rate as 57.89 Gb/s.
  EXPECT_NEAR(pcie::tlp_bytes_per_ns(p) * 8, 57.885, 0.001);

  LinkParams off = p;
  off.dllp_overhead = false;
  EXPECT_EQ(pcie::link_overhead_fraction(off), 0.0);
  EXPECT_EQ(pcie::tlp_ps_per_byte(off), pcie::raw_ps_per_byte(off));
}

TEST(PcieRate, TlpRateRatioIsExact) {
  // TLP ps/byte = raw x A F S / (A F S - 8 F S - 8 A S - 4 A F), A = F = 203, S = 1538.
  const LinkParams p = link(3, 8, 256, 512);
  const pcie::PsPerByte r = pcie::tlp_ps_per_byte(p);
  const long double whole = 203.0L * 203 * 1538;
  const long double lost = 8.0L * 203 * 1538 * 2 + 4.0L * 203 * 203;
  const long double want = 126.953125L * whole / (whole - lost);
  EXPECT_NEAR(static_cast<long double>(r.num) / r.den, want, 1e-12L);
  EXPECT_EQ(r.ceil_ps(0), 0u);
  EXPECT_EQ(pcie::raw_ps_per_byte(p).ceil_ps(64), 8125u);  // 64 x 126.953125
  EXPECT_EQ(pcie::raw_ps_per_byte(p).ceil_ps(1), 127u);
}

TEST(PcieTlp, WireBytes) {
  LinkParams p = link(5, 16, 512, 4096);
  EXPECT_EQ(pcie::tlp_overhead_bytes(p, TlpType::kMWr), 24u);
  EXPECT_EQ(pcie::tlp_overhead_bytes(p, TlpType::kMRd), 24u);
  EXPECT_EQ(pcie::tlp_overhead_bytes(p, TlpType::kCplD), 20u);
  EXPECT_EQ(pcie::tlp_overhead_bytes(p, TlpType::kCpl), 20u);
  EXPECT_EQ(pcie::tlp_wire_bytes(p, TlpType::kMWr, 512), 536u);
  EXPECT_EQ(pcie::tlp_wire_bytes(p, TlpType::kCplD, 64), 84u);
  EXPECT_EQ(pcie::tlp_wire_bytes(p, TlpType::kMRd, 0), 24u);
  p.addr64 = false;
  EXPECT_EQ(pcie::tlp_wire_bytes(p, TlpType::kMWr, 1), 21u);
  EXPECT_EQ(pcie::tlp_wire_bytes(p, TlpType::kMRd, 0), 20u);
  EXPECT_EQ(pcie::tlp_wire_bytes(p, TlpType::kCplD, 4), 24u);
  p.ecrc = true;
  EXPECT_EQ(pcie::tlp_wire_bytes(p, TlpType::kMRd, 0), 24u);
  EXPECT_EQ(pcie::tlp_wire_bytes(p, TlpType::kCpl, 0), 24u);

  EXPECT_THROW(pcie::tlp_wire_bytes(p, TlpType::kMRd, 4), std::invalid_argument);
  EXPECT_THROW(pcie::tlp_wire_bytes(p, TlpType::kCpl, 4), std::invalid_argument);
  EXPECT_THROW(pcie::tlp_wire_bytes(p, TlpType::kMWr, 513), std::invalid_argument);

  EXPECT_EQ(pcie::dword_span_bytes(0, 1), 4u);
  EXPECT_EQ(pcie::dword_span_bytes(3, 2), 8u);
  EXPECT_EQ(pcie::dword_span_bytes(4, 8), 8u);
  EXPECT_EQ(pcie::dword_span_bytes(7, 0), 0u);
  EXPECT_EQ(pcie::data_credits(0), 0u);
  EXPECT_EQ(pcie::data_credits(1), 1u);
  EXPECT_EQ(pcie::data_credits(16), 1u);
  EXPECT_EQ(pcie::data_credits(512), 32u);
  EXPECT_EQ(pcie::data_credits(513), 33u);
}

TEST(PcieParams, ValidateRejectsBadLinks) {
  const LinkParams ok = link(5, 16, 512, 4096);
  EXPECT_NO_THROW(pcie::validate(ok));
  auto with = [&](auto edit) {
    LinkParams p = ok;
    edit(p);
    return p;
  };
  EXPECT_THROW(pcie::validate(with([](LinkParams& p) { p.generation = 0; })),
               std::invalid_argument);
  EXPECT_THROW(pcie::validate(with([](LinkParams& p) { p.generation = 6; })),
               std::invalid_argument);
  EXPECT_THROW(pcie::validate(with([](LinkParams& p) { p.lanes = 3; })), std::invalid_argument);
  EXPECT_THROW(pcie::validate(with([](LinkParams& p) { p.lanes = 64; })), std::invalid_argument);
  EXPECT_THROW(pcie::validate(with([](LinkParams& p) { p.mps = 100; })), std::invalid_argument);
  EXPECT_THROW(pcie::validate(with([](LinkParams& p) { p.mps = 8192; })), std::invalid_argument);
  EXPECT_THROW(pcie::validate(with([](LinkParams& p) { p.mrrs = 64; })), std::invalid_argument);
  EXPECT_THROW(pcie::validate(with([](LinkParams& p) { p.rcb = 32; })), std::invalid_argument);
  EXPECT_THROW(pcie::validate(with([](LinkParams& p) { p.rcb = 96; })), std::invalid_argument);
  EXPECT_THROW(pcie::validate(with([](LinkParams& p) {
                 p.mps = 128;
                 p.rcb = 256;
               })),
               std::invalid_argument);
  EXPECT_THROW(pcie::raw_bytes_per_ns(with([](LinkParams& p) { p.lanes = 12; })),
               std::invalid_argument);

  spyre_dma::model::LinkConfig config;  // the spyre-gen5x16 defaults
  const LinkParams from = pcie::link_params(config);
  EXPECT_EQ(from.generation, 5u);
  EXPECT_EQ(from.lanes, 16u);
  EXPECT_EQ(from.mps, 512u);
  EXPECT_EQ(from.mrrs, 4096u);
  EXPECT_EQ(from.rcb, 64u);
  EXPECT_FALSE(from.rcb_chunks);
  config.mps = 300;
  EXPECT_THROW(pcie::link_params(config), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// facts.md: the pcie-bench figures for large transfers, 64-bit addresses, no ECRC (GB/s)
// ---------------------------------------------------------------------------------------------

struct FactsRow {
  std::uint32_t gen, lanes, mps, mrrs;
  double raw, write, read;
};

TEST(PcieFacts, LargeTransferTableWithinHalfAPercent) {
  const FactsRow rows[] = {
      {3, 8, 256, 512, 7.88, 6.62, 6.71},     {3, 8, 512, 4096, 7.88, 6.84, 6.89},
      {4, 16, 256, 512, 31.51, 25.99, 26.37}, {4, 16, 512, 4096, 31.51, 27.37, 27.58},
      {5, 16, 256, 512, 63.02, 51.98, 52.73}, {5, 16, 512, 4096, 63.02, 54.75, 55.16},
  };
  for (const FactsRow& r : rows) {
    SCOPED_TRACE(testing::Message()
                 << "Gen" << r.gen << " x" << r.lanes << " MPS " << r.mps << " MRRS " << r.mrrs);
    const LinkParams p = link(r.gen, r.lanes, r.mps, r.mrrs);
    const double write = pcie::write_stream(p, kLarge).payload_bytes_per_ns;
    const double read = pcie::read_stream(p, kLarge).payload_bytes_per_ns;
    EXPECT_LT(rel_err(pcie::raw_bytes_per_ns(p), r.raw), 0.005);
    EXPECT_LT(rel_err(write, r.write), 0.005) << write;
    EXPECT_LT(rel_err(read, r.read), 0.005) << read;
    // In fact they agree to the two decimals published.
    EXPECT_NEAR(write, r.write, 0.005 + 1e-9);
    EXPECT_NEAR(read, r.read, 0.005 + 1e-9);
    // Large reads are limited by the completions (downstream), not by the requests.
    const pcie::StreamRate rs = pcie::read_stream(p, kLarge);
    EXPECT_DOUBLE_EQ(rs.downstream_utilization, 1.0);
    EXPECT_LT(rs.upstream_utilization, 0.1);
  }
}

// ---------------------------------------------------------------------------------------------
TEST(PcieBwCalc, ReproducesPcieBenchModelOutput) {
  const LinkParams p = link(3, 8, 256, 512);
  for (const BwCalcRow& r : kBwCalc) {
    SCOPED_TRACE(testing::Message() << "payload " << r.size);
    const pcie::StreamRate w = pcie::write_stream(p, r.size);
    const pcie::StreamRate rd = pcie::read_stream(p, r.size);
    const pcie::StreamRate rw = pcie::read_write_stream(p, r.size);
    const double wg = w.payload_bytes_per_ns * 8, rg = rd.payload_bytes_per_ns * 8,
                 rwg = rw.payload_bytes_per_ns * 8;
    // Required: within 2%.
    EXPECT_LT(rel_err(wg, r.write_gbit), 0.02);
    EXPECT_LT(rel_err(rg, r.read_gbit), 0.02);
    EXPECT_LT(rel_err(rwg, r.rw_gbit), 0.02);
    // Achieved: equal to the printed precision (2 decimals of Gbit/s, 0.1 transaction/s).
    EXPECT_NEAR(wg, r.write_gbit, 0.005 + 1e-9);
    EXPECT_NEAR(rg, r.read_gbit, 0.005 + 1e-9);
    EXPECT_NEAR(rwg, r.rw_gbit, 0.005 + 1e-9);
    EXPECT_NEAR(w.transactions_per_s, r.write_tps, 0.05 + 1e-9 * r.write_tps);
    EXPECT_NEAR(rd.transactions_per_s, r.read_tps, 0.05 + 1e-9 * r.read_tps);
    EXPECT_NEAR(rw.transactions_per_s, r.rw_tps, 0.05 + 1e-9 * r.rw_tps);
  }
}

TEST(PcieBwCalc, MrrsChangesOnlyReadWrite) {
  // The same table under MRRS 4096 (the NFP6000's real setting): reads are completion-bound, so
  // unchanged; read/write carries fewer MRd headers upstream from 257 B up.
  LinkParams p = link(3, 8, 256, 4096);
  EXPECT_NEAR(pcie::read_stream(p, 2048).payload_bytes_per_ns * 8, 53.69, 0.005);
  EXPECT_GT(pcie::read_write_stream(p, 2048).payload_bytes_per_ns * 8, 50.75 + 0.1);
  EXPECT_NEAR(pcie::read_write_stream(p, 256).payload_bytes_per_ns * 8, 48.75, 0.005);
}

TEST(PcieStream, RcbChunksCountsRcbSizedCompletions) {
  // pcie-bench's rcb_chunks: ceil(size / RCB) completions (aligned transfer).
  LinkParams p = link(3, 8, 256, 512);
  p.rcb_chunks = true;
  for (std::uint64_t size : {1ull, 64ull, 65ull, 1000ull, 4096ull, 100000ull}) {
    const pcie::WireBytes w = pcie::read_wire(p, 0, size);
    const std::uint64_t cpls = (size + 63) / 64;
    EXPECT_EQ(w.downstream_tlps, cpls);
    EXPECT_EQ(w.downstream, cpls * 20 + size);
    EXPECT_EQ(w.upstream, ((size + 511) / 512) * 24);
    const double tlp = pcie::tlp_bytes_per_ns(p);
    const double want = std::min(tlp / w.upstream, tlp / w.downstream) * size;
    EXPECT_DOUBLE_EQ(pcie::read_stream(p, size).payload_bytes_per_ns, want);
  }
}

TEST(PcieStream, UnalignedAndTagLimits) {
  const LinkParams p = link(5, 16, 512, 4096);
  // 4 KiB at 4 KiB - 64: 2 MWr (64 + the rest in 512-B pieces: 1 + 7 + 1 = 9 in all).
  const pcie::WireBytes w = pcie::write_wire(p, 4096 - 64, 4096);
  EXPECT_EQ(w.upstream_tlps, 9u);
  EXPECT_EQ(w.upstream, 9u * 24 + 4096);
  EXPECT_LT(pcie::write_stream(p, 4096, 4096 - 64).payload_bytes_per_ns,
            pcie::write_stream(p, 4096, 0).payload_bytes_per_ns);
  // Little's law: 256 tags x 4 KiB per 1 us round trip is 1048.576 GB/s, far above the link.
  EXPECT_DOUBLE_EQ(pcie::tag_limited_bytes_per_ns(256, 4096, 1000000), 1048.576);
  EXPECT_DOUBLE_EQ(pcie::tag_limited_bytes_per_ns(8, 512, 1000000), 4.096);
  EXPECT_THROW(pcie::tag_limited_bytes_per_ns(8, 512, 0), std::invalid_argument);
  EXPECT_THROW(pcie::stream_rate(p, pcie::WireBytes{}, 1), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// Splitting: examples
// ---------------------------------------------------------------------------------------------

TEST(PcieSplit, WriteExamples) {
  using V = std::vector<Segment>;
  EXPECT_EQ(pcie::write_segments(0, 0, 256), V{});
  EXPECT_EQ(pcie::write_segments(0, 512, 256), (V{{0, 256}, {256, 256}}));
  EXPECT_EQ(pcie::write_segments(0xFC0, 256, 256), (V{{0xFC0, 64}, {0x1000, 192}}));
  EXPECT_EQ(pcie::write_segments(0x10, 600, 256), (V{{0x10, 240}, {0x100, 256}, {0x200, 104}}));
  EXPECT_EQ(pcie::write_segments(0xFFF, 2, 4096), (V{{0xFFF, 1}, {0x1000, 1}}));
  EXPECT_EQ(pcie::read_requests(0x800, 8192, 4096),
            (V{{0x800, 2048}, {0x1000, 4096}, {0x2000, 2048}}));
  EXPECT_EQ(pcie::count_requests(0x800, 8192, 4096), 3u);
  EXPECT_EQ(pcie::count_requests(0, 1u << 20, 512), 2048u);
  EXPECT_EQ(pcie::request_step(0x1F0, 1000, 512), 16u);
}

TEST(PcieSplit, CompletionExamples) {
  using V = std::vector<Segment>;
  // Aligned request: MPS-sized.
  EXPECT_EQ(pcie::completions(0x1000, 1024, 64, 256),
            (V{{0x1000, 256}, {0x1100, 256}, {0x1200, 256}, {0x1300, 256}}));
  // Unaligned: up to the RCB boundary first, then MPS-sized from there.
  EXPECT_EQ(pcie::completions(0x1010, 256, 64, 256), (V{{0x1010, 48}, {0x1040, 208}}));
  EXPECT_EQ(pcie::completions(0x1030, 600, 64, 256),
            (V{{0x1030, 16}, {0x1040, 256}, {0x1140, 256}, {0x1240, 72}}));
  // Inside one RCB block: one completion.
  EXPECT_EQ(pcie::completions(0x1004, 8, 64, 256), (V{{0x1004, 8}}));
  // rcb_chunks: mps = rcb.
  EXPECT_EQ(pcie::completions(0x20, 160, 64, 64), (V{{0x20, 32}, {0x40, 64}, {0x80, 64}}));
  EXPECT_EQ(pcie::count_completions(0x1010, 256, 64, 256), 2u);
  // A whole read: completions restart at each request.
  EXPECT_EQ(pcie::read_completions(0x40, 1024, 512, 64, 256),
            (V{{0x40, 256}, {0x140, 192}, {0x200, 256}, {0x300, 256}, {0x400, 64}}));
  EXPECT_EQ(pcie::count_read_completions(0x40, 1024, 512, 64, 256), 5u);
  // MRRS < MPS: completions never exceed their request.
  EXPECT_EQ(pcie::count_read_completions(0, 4096, 128, 64, 512), 32u);
}

TEST(PcieSplit, MisuseThrows) {
  EXPECT_THROW(pcie::completions(0xF00, 512, 64, 256), std::invalid_argument);  // crosses 4 KiB
  EXPECT_THROW(pcie::completions(0, 8192, 64, 256), std::invalid_argument);
  EXPECT_THROW(pcie::completions(0, 64, 128, 64), std::invalid_argument);  // rcb > mps
  EXPECT_THROW(pcie::completions(0, 64, 48, 64), std::invalid_argument);
  EXPECT_THROW(pcie::write_segments(0, 64, 100), std::invalid_argument);
  EXPECT_THROW(pcie::write_segments(0, 64, 8192), std::invalid_argument);
  EXPECT_THROW(pcie::read_requests(0, 64, 0), std::invalid_argument);
  EXPECT_THROW(pcie::write_segments(~0ull - 10, 20, 256), std::overflow_error);
  EXPECT_THROW(pcie::count_requests(~0ull, 2, 256), std::overflow_error);
  EXPECT_NO_THROW(pcie::write_segments(~0ull - 20, 20, 256));
}

// ---------------------------------------------------------------------------------------------
// Splitting: properties over random ranges (fixed seed)
// ---------------------------------------------------------------------------------------------

namespace {

void expect_tiles(const std::vector<Segment>& segs, std::uint64_t addr, std::uint64_t len) {
  std::uint64_t at = addr;
  for (const Segment& s : segs) {
    ASSERT_EQ(s.addr, at);
    ASSERT_GT(s.len, 0u);
    at += s.len;
  }
  ASSERT_EQ(at, addr + len);
}

bool crosses_page(const Segment& s) { return s.addr / 4096 != (s.end() - 1) / 4096; }

}  // namespace

TEST(PcieSplit, RandomizedProperties) {
  std::mt19937_64 rng(20180820);  // fixed seed
  const std::uint32_t sizes[] = {128, 256, 512, 1024, 2048, 4096};
  const std::uint32_t rcbs[] = {64, 128, 256, 512};
  for (int iter = 0; iter < 4000; ++iter) {
    // Addresses: random, near a 4 KiB boundary, or aligned; high addresses too.
    const unsigned shift = static_cast<unsigned>(rng() % 40);
    std::uint64_t addr = rng() >> shift;
    switch (iter % 4) {
      case 0: addr = (addr & ~0xFFFull) + 4096 - (rng() % 300); break;
      case 1: addr &= ~0x3Full; break;
      default: break;
    }
    const std::uint64_t len = (iter % 5 == 0) ? rng() % 70000 : rng() % 9000;
    if (len > ~0ull - addr) continue;
    const std::uint32_t mps = sizes[rng() % 6];
    const std::uint32_t mrrs = sizes[rng() % 6];
    std::uint32_t rcb = rcbs[rng() % 4];
    if (rcb > mps) rcb = 64;
    SCOPED_TRACE(testing::Message() << "addr " << addr << " len " << len << " mps " << mps
                                    << " mrrs " << mrrs << " rcb " << rcb);

    const std::vector<Segment> wr = pcie::write_segments(addr, len, mps);
    ASSERT_NO_FATAL_FAILURE(expect_tiles(wr, addr, len));
    ASSERT_EQ(wr.size(), pcie::count_requests(addr, len, mps));
    for (std::size_t i = 0; i < wr.size(); ++i) {
      ASSERT_LE(wr[i].len, mps);
      ASSERT_FALSE(crosses_page(wr[i]));
      if (i > 0) {  // all but the first start MPS-aligned
        ASSERT_EQ(wr[i].addr % mps, 0u);
      }
    }
    // No more than one TLP over the fewest possible (ceil(len / MPS) per 4 KiB piece).
    if (len != 0) {
      const std::uint64_t first_page = std::min<std::uint64_t>(len, 4096 - addr % 4096);
      std::uint64_t fewest = (first_page + mps - 1) / mps;
      const std::uint64_t rest = len - first_page;
      fewest += (rest / 4096) * (4096 / mps) + ((rest % 4096) + mps - 1) / mps;
      ASSERT_LE(wr.size(), fewest + 1);
    }

    const std::vector<Segment> rq = pcie::read_requests(addr, len, mrrs);
    ASSERT_NO_FATAL_FAILURE(expect_tiles(rq, addr, len));
    std::vector<Segment> all_cpl;
    for (const Segment& r : rq) {
      ASSERT_LE(r.len, mrrs);
      ASSERT_FALSE(crosses_page(r));
      const std::vector<Segment> cpl = pcie::completions(r.addr, r.len, rcb, mps);
      ASSERT_NO_FATAL_FAILURE(expect_tiles(cpl, r.addr, r.len));
      ASSERT_EQ(cpl.size(), pcie::count_completions(r.addr, r.len, rcb, mps));
      for (std::size_t i = 0; i < cpl.size(); ++i) {
        ASSERT_LE(cpl[i].len, mps);
        ASSERT_FALSE(crosses_page(cpl[i]));
        if (i > 0) {  // start on RCB
          ASSERT_EQ(cpl[i].addr % rcb, 0u);
        }
        if (i + 1 < cpl.size()) {  // all but the last end on RCB
          ASSERT_EQ(cpl[i].end() % rcb, 0u);
        }
        if (i > 0 && i + 1 < cpl.size()) {  // middle ones are full
          ASSERT_EQ(cpl[i].len, mps);
        }
      }
      if (r.addr % rcb == 0) {  // pcie-bench count
        ASSERT_EQ(cpl.size(), (r.len + mps - 1) / mps);
      }
      all_cpl.insert(all_cpl.end(), cpl.begin(), cpl.end());
    }
    ASSERT_EQ(pcie::read_completions(addr, len, mrrs, rcb, mps), all_cpl);
    ASSERT_EQ(pcie::count_read_completions(addr, len, mrrs, rcb, mps), all_cpl.size());

    // Wire bytes follow the splits exactly.
    LinkParams p = link(5, 16, mps, mrrs);
    p.rcb = rcb;
    const pcie::WireBytes ww = pcie::write_wire(p, addr, len);
    ASSERT_EQ(ww.upstream, wr.size() * 24 + len);
    const pcie::WireBytes rw = pcie::read_wire(p, addr, len);
    ASSERT_EQ(rw.upstream, rq.size() * 24);
    ASSERT_EQ(rw.downstream, all_cpl.size() * 20 + len);
  }
}
