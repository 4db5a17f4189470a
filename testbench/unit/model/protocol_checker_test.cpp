// Every PCIe rule the link checks, shown to fire: on the checker directly, and through the
// SystemC link with a deliberately broken requester.
#include <gtest/gtest.h>

#include "link/protocol_checker.hpp"
#include "link_harness.hpp"

namespace spyre_dma::model {
namespace {

pcie::LinkParams gen5() { return pcie::link_params(LinkConfig{}); }  // MPS 512, MRRS 4096

TEST(ProtocolChecker, AcceptsLegalTlps) {
  ProtocolChecker c(gen5());
  c.request(pcie::TlpType::kMWr, 0x1000, 512);
  c.request(pcie::TlpType::kMRd, 0x2000, 4096);
  c.completion(0x2000, 512);
  c.tag_issued(7, 100);
  c.tag_retired(7, 900);
  c.tag_issued(7, 900);
  c.credits(10, 64, "posted data");
  EXPECT_EQ(c.violations(), 0u);
  EXPECT_EQ(c.tlps_checked(), 3u);
}

TEST(ProtocolChecker, FourKibCrossingFires) {
  ProtocolChecker c(gen5());
  EXPECT_THROW(c.request(pcie::TlpType::kMWr, 0x1F00, 512), ProtocolError);
  EXPECT_THROW(c.request(pcie::TlpType::kMRd, 0x0FFC, 8), ProtocolError);
}

TEST(ProtocolChecker, PayloadAboveMpsFires) {
  ProtocolChecker c(gen5());
  EXPECT_THROW(c.request(pcie::TlpType::kMWr, 0, 513), ProtocolError);
  EXPECT_THROW(c.completion(0, 1024), ProtocolError);
}

TEST(ProtocolChecker, ReadAboveMrrsFires) {
  LinkConfig l;
  l.mrrs = 512;
  ProtocolChecker c(pcie::link_params(l));
  EXPECT_THROW(c.request(pcie::TlpType::kMRd, 0, 1024), ProtocolError);
}

TEST(ProtocolChecker, TagReuseWhileOutstandingFires) {
  ProtocolChecker c(gen5());
  c.tag_issued(3, 100);
  EXPECT_THROW(c.tag_issued(3, 200), ProtocolError);
  ProtocolChecker d(gen5());
  d.tag_issued(3, 100);
  d.tag_retired(3, 500);
  EXPECT_THROW(d.tag_issued(3, 400), ProtocolError) << "issued again before its retirement in time";
  EXPECT_THROW(d.tag_retired(9, 10), ProtocolError) << "never issued";
}

TEST(ProtocolChecker, NegativeOrExcessCreditsFire) {
  ProtocolChecker c(gen5());
  EXPECT_THROW(c.credits(-1, 64, "posted header"), ProtocolError);
  EXPECT_THROW(c.credits(65, 64, "posted header"), ProtocolError);
}

TEST(ProtocolChecker, CountsInsteadOfThrowingWhenNotStrict) {
  ProtocolChecker c(gen5(), false);
  c.request(pcie::TlpType::kMWr, 0, 4096);
  EXPECT_EQ(c.violations(), 1u);
  EXPECT_NE(c.last_violation().find("exceeds MPS"), std::string::npos) << c.last_violation();
}

// SystemC hands an exception thrown in a process back from sc_start() as an sc_report that
// carries the original message.
void expect_violation(const SimConfig& config, bool reads, std::uint64_t size, std::uint64_t offset,
                      const char* what) {
  try {
    testing::run_stream(config, reads, size, 1, 1, false, offset);
    ADD_FAILURE() << "no protocol violation reported";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("PCIe protocol violation"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(ProtocolChecker, FiresThroughTheLinkOnAnOversizedWrite) {
  expect_violation(SimConfig{}, false, 1024, 0, "exceeds MPS");
}

TEST(ProtocolChecker, FiresThroughTheLinkOnAReadAcross4KiB) {
  expect_violation(SimConfig{}, true, 256, 4096 - 128, "crosses a 4 KiB boundary");
}

}  // namespace
}  // namespace spyre_dma::model
