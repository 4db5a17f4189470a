// The SystemC link, TLP by TLP, against pcie-bench: streams of one payload size reproduce the
// analytical model's bandwidth (bw_calc.dat) within 2%, and tag-limited reads obey Little's law.
#include <gtest/gtest.h>

#include "bw_calc_rows.hpp"
#include "link_harness.hpp"
#include "pcie/link_math.hpp"

namespace spyre_dma::model {
namespace {

// pcie-bench's model assumes the wire is the only limit: no flow-control credit limit.
SimConfig gen3x8_like_pcie_bench() {
  SimConfig c;
  c.link.generation = 3;
  c.link.lanes = 8;
  c.link.mps = 256;
  c.link.mrrs = 512;
  c.link.rcb = 64;
  c.link.host_rx = Credits{0, 0, 0, 0, 0, 0};
  c.host.memory_gbps = 1000.0;  // nor host memory
  return c;
}

TEST(LinkValidation, StreamsMatchPcieBenchModelWithinTwoPercent) {
  const SimConfig c = gen3x8_like_pcie_bench();
  for (const BwCalcRow& row : kBwCalc) {
    if (row.size < 8) continue;  // sub-DW payloads: pcie-bench counts bytes, a TLP carries DWs
    SCOPED_TRACE(::testing::Message() << "payload " << row.size);
    const std::uint64_t count = std::max<std::uint64_t>(2000, (4u << 20) / row.size);
    const testing::StreamResult w = testing::run_stream(c, false, row.size, count);
    EXPECT_NEAR(w.gbps() * 8 / row.write_gbit, 1.0, 0.02) << "write " << w.gbps() * 8 << " Gbit/s";
    const testing::StreamResult r = testing::run_stream(c, true, row.size, count);
    EXPECT_NEAR(r.gbps() * 8 / row.read_gbit, 1.0, 0.02) << "read " << r.gbps() * 8 << " Gbit/s";
    EXPECT_EQ(w.violations + r.violations, 0u);
  }
}

TEST(LinkValidation, FewTagsObeyLittlesLaw) {
  SimConfig c;  // Gen5 x16
  c.link.mrrs = 512;
  c.link.host_rx = Credits{0, 0, 0, 0, 0, 0};
  const std::uint32_t tags = 16;
  // The unloaded round trip of one request, measured: a single read.
  const testing::StreamResult one = testing::run_stream(c, true, 512, 1, tags);
  const pcie::Ps rtt = one.last_done - one.first_issue;
  const testing::StreamResult many = testing::run_stream(c, true, 512, 20000, tags);
  const double predicted = pcie::tag_limited_bytes_per_ns(tags, 512, rtt);
  EXPECT_LT(predicted, pcie::tlp_bytes_per_ns(pcie::link_params(c.link)) * 0.8) << "must be tag-limited";
  EXPECT_NEAR(many.gbps() / predicted, 1.0, 0.02) << "simulated " << many.gbps() << " GB/s, Little's law "
                                                  << predicted << " GB/s (RTT " << rtt << " ps)";
}

}  // namespace
}  // namespace spyre_dma::model
