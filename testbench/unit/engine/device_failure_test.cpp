// A device whose calls throw (a simulation that stopped, a transport that lost its peer): the
// engine never lets the exception out of a wait or a submission, fails what was in flight once
// each and all later work with kDeviceFault naming the device's error, refuses reset(), and
// closes promptly. Engine::open on such a device throws the typed DeviceFault.
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine_fixture.hpp"

namespace spyre_dma::test {
namespace {

// Forwards to another device until told to fail; then the calls named fail with a plain
// std::runtime_error, as a transport or a simulator would.
class ThrowingDevice final : public Device {
 public:
  enum Calls : unsigned { kReads = 1, kWrites = 2, kInterrupts = 4 };
  explicit ThrowingDevice(std::shared_ptr<Device> inner) : inner_(std::move(inner)) {}
  void fail(unsigned calls) { failing_ = calls; }

  DeviceDescription describe() const override { return inner_->describe(); }
  std::uint32_t read32(std::uint64_t offset) override {
    check(kReads);
    return inner_->read32(offset);
  }
  std::uint64_t read64(std::uint64_t offset) override {
    check(kReads);
    return inner_->read64(offset);
  }
  void write32(std::uint64_t offset, std::uint32_t value) override {
    check(kWrites);
    inner_->write32(offset, value);
  }
  void write64(std::uint64_t offset, std::uint64_t value) override {
    check(kWrites);
    inner_->write64(offset, value);
  }
  std::uint64_t map(void* host, std::size_t bytes, DmaAccess access) override { return inner_->map(host, bytes, access); }
  void unmap(std::uint64_t iova) override { inner_->unmap(iova); }
  std::uint32_t wait_for_interrupt(std::chrono::nanoseconds timeout) override {
    check(kInterrupts);
    return inner_->wait_for_interrupt(timeout);
  }
  void host_copied(std::uint64_t bytes) override { inner_->host_copied(bytes); }

 private:
  void check(unsigned call) const {
    if (failing_.load() & call) throw std::runtime_error("link to the device lost (test)");
  }
  std::shared_ptr<Device> inner_;
  std::atomic<unsigned> failing_{0};
};

struct FailRig {
  std::shared_ptr<SpyDevice> spy;
  std::shared_ptr<ThrowingDevice> dev;
  std::unique_ptr<Engine> engine;
};

FailRig make_fail_rig() {
  FailRig r;
  r.spy = make_device({});
  r.dev = std::make_shared<ThrowingDevice>(r.spy);
  EngineOptions options;
  options.cb_timeout = 10s;
  r.engine = Engine::open(r.dev, options);
  return r;
}

bool names_the_error(const Status& s) { return s.message().find("link to the device lost (test)") != std::string::npos; }

TEST(DeviceFailure, WorkInFlightFailsOnceWithTheDevicesWordsAndNothingThrows) {
  FailRig rig = make_fail_rig();
  Engine& e = *rig.engine;
  Stream s = e.create_stream();
  constexpr std::size_t kOps = 8;
  CompletionLog log(kOps);
  if (rig.spy->is_refdev()) rig.spy->ref().pause();  // keeps them in flight
  for (std::size_t i = 0; i < kOps; ++i) s.compute(std::chrono::microseconds(50), log.callback(i));
  rig.dev->fail(ThrowingDevice::kReads | ThrowingDevice::kWrites | ThrowingDevice::kInterrupts);
  const Status st = s.synchronize(kWait);
  EXPECT_EQ(st.code(), ErrorCode::kDeviceFault) << st.to_string();
  EXPECT_TRUE(names_the_error(st)) << st.to_string();
  ASSERT_TRUE(eventually([&] { return log.order().size() == kOps; }));
  EXPECT_TRUE(log.exactly_once());
  for (const auto& [i, code] : log.codes()) EXPECT_EQ(code, ErrorCode::kDeviceFault) << i;

  // Later work fails at once, with the same words; the device cannot be reset.
  Op late = s.compute(std::chrono::microseconds(1));
  const Status ls = late.wait(kWait);
  EXPECT_EQ(ls.code(), ErrorCode::kDeviceFault) << ls.to_string();
  EXPECT_TRUE(names_the_error(ls)) << ls.to_string();
  const Status rs = e.reset(2s);
  EXPECT_EQ(rs.code(), ErrorCode::kDeviceFault) << rs.to_string();
  EXPECT_TRUE(names_the_error(rs)) << rs.to_string();
  EXPECT_GE(e.stats().device_faults, 1u);

  const auto closing = std::chrono::steady_clock::now();
  rig.engine.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - closing, 2s);  // nothing waits for a dead device
}

TEST(DeviceFailure, ADoorbellThatThrowsFailsItsOpNotTheCall) {
  FailRig rig = make_fail_rig();
  Engine& e = *rig.engine;
  Stream s = e.create_stream();
  DeviceBuffer buf = e.allocate(64 * KiB);
  rig.dev->fail(ThrowingDevice::kWrites);
  Op fill;
  ASSERT_NO_THROW(fill = s.fill(buf, 0, 64 * KiB, 0xABCDEF01u));
  const Status st = fill.wait(kWait);
  EXPECT_EQ(st.code(), ErrorCode::kDeviceFault) << st.to_string();
  EXPECT_TRUE(names_the_error(st)) << st.to_string();
  EXPECT_EQ(s.synchronize(kWait).code(), ErrorCode::kDeviceFault);
}

TEST(DeviceFailure, OpenOnAFailingDeviceThrowsTheTypedError) {
  auto dev = std::make_shared<ThrowingDevice>(make_device({}));
  dev->fail(ThrowingDevice::kReads);
  try {
    auto engine = Engine::open(dev);
    ADD_FAILURE() << "opened an engine on a device whose reads fail";
  } catch (const DeviceFault& e) {
    EXPECT_NE(std::string(e.what()).find("link to the device lost (test)"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace spyre_dma::test
