// The RTL stream checker: each rule fires on a sequence that breaks it (directly, and inside a
// running RTL data path whose completion transactor is broken on purpose), and stays quiet on
// legal back-pressure. Also the request port's two readies, one per class of request.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include "ring_driver.hpp"
#include "rtl_data_path.hpp"
#include "spyre_dma/model/config_loader.hpp"
#include "stream_checker.hpp"

namespace spyre_dma::rtl::test {
namespace {

using ::testing::HasSubstr;

TEST(StreamChecker, LegalBackPressurePasses) {
  StreamChecker c(4);
  StreamChecker::Channel ch("rq");
  const std::uint32_t p[2] = {1, 2};
  c.observe(ch, 0, true, false, p, 2);
  c.observe(ch, 1, true, false, p, 2);
  c.observe(ch, 2, true, true, p, 2);
  const std::uint32_t q[2] = {3, 4};
  c.observe(ch, 3, true, true, q, 2);  // a new beat after the handshake may differ
  c.observe(ch, 4, false, false, q, 2);
  EXPECT_EQ(c.violations(), 0u);
}

TEST(StreamChecker, ValidDroppedBeforeReadyFires) {
  StreamChecker c(4);
  StreamChecker::Channel ch("dw");
  const std::uint32_t p[1] = {7};
  c.observe(ch, 10, true, false, p, 1);
  try {
    c.observe(ch, 11, false, false, p, 1);
    FAIL() << "no violation";
  } catch (const StreamProtocolError& e) {
    EXPECT_THAT(e.what(), HasSubstr("[valid held until ready] on dw at cycle 11"));
  }
}

TEST(StreamChecker, PayloadChangeWhileStalledFires) {
  StreamChecker c(4, false);
  StreamChecker::Channel ch("rc");
  const std::uint32_t p[2] = {1, 2}, q[2] = {1, 3};
  c.observe(ch, 0, true, false, p, 2);
  c.observe(ch, 1, true, true, q, 2);
  EXPECT_EQ(c.violations(), 1u);
  EXPECT_THAT(c.last_violation(), HasSubstr("[payload stable while stalled] on rc at cycle 1"));
}

TEST(StreamChecker, TagLifeFires) {
  StreamChecker c(4, false);
  c.read_issued(0, 2, 256);
  c.read_issued(1, 2, 64);  // still outstanding
  EXPECT_EQ(c.violations(), 1u);
  EXPECT_THAT(c.last_violation(), HasSubstr("reuses tag 2"));
  c.completion(2, 3, 64, false);  // never issued
  EXPECT_THAT(c.last_violation(), HasSubstr("tag 3 that is not outstanding"));
  c.completion(3, 2, 512, false);  // more than is left
  EXPECT_THAT(c.last_violation(), HasSubstr("512 bytes for tag 2"));
  EXPECT_EQ(c.violations(), 3u);
  c.read_issued(4, 1, 128);
  c.completion(5, 1, 128, false);
  c.read_issued(6, 1, 128);  // retired: may be reused
  EXPECT_EQ(c.violations(), 3u);
  EXPECT_EQ(c.outstanding_tags(), 1u);
}

// One 256 KiB H2D through the RTL data path with the device-memory write port stalling every
// other cycle (legal back-pressure), optionally with the completion transactor changing a stalled
// beat (illegal).
hw::ResponseBlock one_h2d(model::SimDevice& dev) {
  HostBuffer src(256 * 1024);
  for (std::size_t i = 0; i < src.bytes; ++i) src.data[i] = static_cast<std::uint8_t>(i * 31);
  const std::uint64_t iova = dev.map(src.data, src.bytes, DmaAccess::kDeviceReads);
  RingDriver ring(dev);
  hw::ControlBlock cb = cb_with_xlat(9);
  cb.dmi.type = hw::DmaType::kImmediate;
  set_length(cb.dmi, src.bytes);
  cb.dmi.host_iova_flits = iova / hw::kFlitBytes;
  ring.push(hw::Pipeline::kDmai, cb);
  ring.doorbell(hw::Pipeline::kDmai);
  const auto rbs = ring.drain(hw::Pipeline::kDmai);
  std::vector<std::uint8_t> back(src.bytes);
  dev.memory().read(0, back.data(), back.size());
  EXPECT_TRUE(std::equal(back.begin(), back.end(), src.data));
  return rbs.at(0);
}

struct HooksGuard {
  explicit HooksGuard(RtlTestHooks h) { rtl_test_hooks() = h; }
  ~HooksGuard() { rtl_test_hooks() = RtlTestHooks{}; }
};

model::SimConfig rtl_config() {
  model::SimConfig c = model::preset("spyre-gen5x16");
  c.data_path = model::DataPathKind::kRtl;
  return c;
}

TEST(RtlStreamChecks, BackPressureOnDeviceWritesIsLegal) {
  HooksGuard hooks(RtlTestHooks{true, false});
  model::SimDevice dev(rtl_config());
  const hw::ResponseBlock rb = one_h2d(dev);
  EXPECT_EQ(rb.status, hw::RbStatus::kGood);
  EXPECT_EQ(dev.statistics()["rtl"]["stream_violations"].get<std::uint64_t>(), 0u);
}

TEST(RtlStreamChecks, ChangedStalledCompletionIsCaught) {
  HooksGuard hooks(RtlTestHooks{true, true});
  model::SimDevice dev(rtl_config());
  try {
    one_h2d(dev);
    FAIL() << "the checker did not fire";
  } catch (const std::exception& e) {
    EXPECT_THAT(e.what(), HasSubstr("[payload stable while stalled] on rc"));
  }
}

// The request port takes read requests (rq_np_ready) apart from posted writes (rq_ready), as a
// hard IP keeps non-posted and posted transmit credits apart: with the IP taking no MWr for the
// first 20 us, a D2H rung first waits that out, and an H2D rung behind it still reads host memory
// and ends in a few us. With one ready for both, the read request waited behind the stalled MWr
// and the H2D ended after 20 us too.
TEST(RtlRequestPort, ReadRequestsGoWhileThePostedReadyIsLow) {
  constexpr Ps kHoldPs = 20'000'000;
  RtlTestHooks h;
  h.hold_posted_writes_until_ps = kHoldPs;
  HooksGuard hooks(h);
  model::SimDevice dev(rtl_config());
  constexpr std::size_t kBytes = 64 * 1024;
  HostBuffer host(2 * kBytes);
  for (std::size_t i = 0; i < kBytes; ++i) host.data[i] = static_cast<std::uint8_t>(i * 7 + 1);
  const std::uint64_t iova = dev.map(host.data, host.bytes, DmaAccess::kBoth);
  std::vector<std::uint8_t> device_bytes(kBytes);
  for (std::size_t i = 0; i < kBytes; ++i) device_bytes[i] = static_cast<std::uint8_t>(i * 13 + 5);
  dev.memory().write(kBytes, device_bytes.data(), kBytes);
  RingDriver ring(dev);
  hw::ControlBlock d2h = cb_with_xlat(1);
  d2h.dmo.type = hw::DmaType::kImmediate;
  set_length(d2h.dmo, kBytes);
  d2h.dmo.host_iova_flits = (iova + kBytes) / hw::kFlitBytes;
  d2h.dmo.device = hw::DeviceVa{0, static_cast<std::uint32_t>(kBytes / hw::kFlitBytes)};
  ring.push(hw::Pipeline::kDmao, d2h);
  hw::ControlBlock h2d = cb_with_xlat(2);
  h2d.dmi.type = hw::DmaType::kImmediate;
  set_length(h2d.dmi, kBytes);
  h2d.dmi.host_iova_flits = iova / hw::kFlitBytes;
  ring.push(hw::Pipeline::kDmai, h2d);
  const double t0 = dev.now_ns();
  ring.doorbell(hw::Pipeline::kDmao);
  ring.doorbell(hw::Pipeline::kDmai);
  const hw::ResponseBlock in = ring.drain(hw::Pipeline::kDmai).at(0);
  const hw::ResponseBlock out = ring.drain(hw::Pipeline::kDmao).at(0);
  EXPECT_EQ(in.status, hw::RbStatus::kGood);
  EXPECT_EQ(out.status, hw::RbStatus::kGood);
  EXPECT_LT(double(in.end_ns) - t0, 10'000.0) << "the H2D's read requests waited for the posted writes";
  EXPECT_GE(double(out.end_ns), double(kHoldPs) / 1000.0) << "the D2H did not wait for the posted ready";
  std::vector<std::uint8_t> back(kBytes);
  dev.memory().read(0, back.data(), kBytes);
  EXPECT_TRUE(std::equal(back.begin(), back.end(), host.data));
  EXPECT_TRUE(std::equal(device_bytes.begin(), device_bytes.end(), host.data + kBytes));
  EXPECT_EQ(dev.statistics()["rtl"]["stream_violations"].get<std::uint64_t>(), 0u);
}

TEST(RtlConfig, UnsupportedSettingsAreRejectedByName) {
  model::SimConfig c = rtl_config();
  c.fidelity = model::Fidelity::kBurst;
  EXPECT_THAT([&] { model::SimDevice d(c); }, ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("fidelity")));
  c = rtl_config();
  c.device.read_tags = 512;
  EXPECT_THAT([&] { model::SimDevice d(c); },
              ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("device.read_tags 512")));
}

TEST(RtlConfig, ControllerKeyLoadsAndDescribesTheBackend) {
  const model::SimConfig c = model::config_from_json(nlohmann::json{{"data_path", "rtl"}}, "test.json");
  EXPECT_EQ(c.data_path, model::DataPathKind::kRtl);
  EXPECT_THROW(model::config_from_json(nlohmann::json{{"data_path", "verilog"}}, "test.json"), model::ConfigError);
  model::SimDevice dev(c);
  EXPECT_EQ(dev.describe().backend, "rtl");
}

}  // namespace
}  // namespace spyre_dma::rtl::test
