// A simulation that cannot go on (an error raised inside SystemC, or simulated time at the model's
// horizon) fails its device with a typed DeviceFault that says why: the engine fails the work in
// flight and all later work with kDeviceFault and the same words, nothing throws out of a wait,
// and the next device in the same process starts a fresh simulation that works.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "base/debug_hooks.hpp"
#include "spyre_dma/model/sim_device.hpp"
#include "spyre_dma/spyre_dma.hpp"

namespace spyre_dma::model {
namespace {

using namespace std::chrono_literals;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A fresh device and engine move `bytes` there and back, byte-exact.
void expect_a_working_simulation(std::size_t bytes) {
  auto dev = std::make_shared<SimDevice>(SimConfig{});
  auto engine = Engine::open(dev);
  Stream s = engine->create_stream();
  DeviceBuffer buf = engine->allocate(bytes);
  HostBuffer in = engine->allocate_host(bytes), out = engine->allocate_host(bytes);
  std::memset(in.data(), 0x3C, bytes);
  std::memset(out.data(), 0, bytes);
  s.copy_h2d(buf, 0, in.data(), bytes);
  s.copy_d2h(out.data(), buf, 0, bytes);
  const Status st = s.synchronize(60s);
  ASSERT_TRUE(st.ok()) << st.to_string();
  EXPECT_EQ(std::memcmp(in.data(), out.data(), bytes), 0);
}

// After the device failed: the engine refuses to go on, typed, with `why` in every message.
void expect_failed_for_good(Engine& engine, SimDevice& dev, Stream& s, const std::string& why) {
  Op late = s.compute(1us);
  const Status ls = late.wait(10s);
  EXPECT_EQ(ls.code(), ErrorCode::kDeviceFault) << ls.to_string();
  EXPECT_TRUE(contains(ls.message(), why)) << ls.to_string();
  const Status rs = engine.reset();
  EXPECT_EQ(rs.code(), ErrorCode::kDeviceFault) << rs.to_string();
  EXPECT_TRUE(contains(rs.message(), why)) << rs.to_string();
  try {
    (void)dev.now_ns();
    ADD_FAILURE() << "a failed simulation answered";
  } catch (const DeviceFault& e) {
    EXPECT_TRUE(contains(e.what(), why)) << e.what();
  }
}

TEST(SimFailure, AnErrorRaisedInsideSystemCFailsTheDeviceAndTheNextSimulationWorks) {
  {
    // A deliberate model bug: the write engine sends MWr of twice the MPS, which the (strict)
    // protocol checker raises as an error inside a SystemC process.
    debug_hooks().writes_over_mps = true;
    auto dev = std::make_shared<SimDevice>(SimConfig{});
    debug_hooks() = DebugHooks{};
    auto engine = Engine::open(dev);
    Stream s = engine->create_stream();
    const std::size_t n = 64 << 10;
    DeviceBuffer buf = engine->allocate(n);
    HostBuffer host = engine->allocate_host(n);
    Op h2d = s.copy_h2d(buf, 0, host.data(), n);
    Op d2h = s.copy_d2h(host.data(), buf, 0, n);
    const Status st = s.synchronize(60s);
    EXPECT_EQ(st.code(), ErrorCode::kDeviceFault) << st.to_string();
    EXPECT_TRUE(contains(st.message(), "SystemC")) << st.to_string();
    EXPECT_TRUE(contains(st.message(), "exceeds MPS")) << st.to_string();
    (void)h2d.wait(1s);  // ok or failed: the H2D may have finished before the error
    EXPECT_EQ(d2h.wait(1s).code(), ErrorCode::kDeviceFault);
    expect_failed_for_good(*engine, *dev, s, "exceeds MPS");
  }
  expect_a_working_simulation(1 << 20);
}

TEST(SimFailure, SimulatedTimeAtTheHorizonFailsTheDeviceAndTheNextSimulationWorks) {
  // Each compute op takes the longest duration the contract allows (2^48 - 1 ns): 32 of them end
  // before 2^63 ps, the 33rd would end past it.
  constexpr int kFit = 32, kOps = 40;
  {
    auto dev = std::make_shared<SimDevice>(SimConfig{});
    auto engine = Engine::open(dev);
    Stream s = engine->create_stream();
    std::vector<Op> ops;
    for (int i = 0; i < kOps; ++i) ops.push_back(s.compute(std::chrono::nanoseconds(hw::kMaxComputeNs)));
    const Status st = s.synchronize(60s);
    EXPECT_EQ(st.code(), ErrorCode::kDeviceFault) << st.to_string();
    EXPECT_TRUE(contains(st.message(), "2^63 ps")) << st.to_string();
    for (int i = 0; i < kOps; ++i) {
      const Status os = ops[static_cast<std::size_t>(i)].wait(1s);
      if (i < kFit) {
        // Simulated before the horizon: right, with times that never wrapped.
        EXPECT_TRUE(os.ok()) << i << ": " << os.to_string();
        const Op& op = ops[static_cast<std::size_t>(i)];
        EXPECT_GE(op.device_end_ns() - op.device_start_ns(), hw::kMaxComputeNs) << i;
        if (i > 0) {
          EXPECT_GE(op.device_start_ns(), ops[static_cast<std::size_t>(i) - 1].device_end_ns()) << i;
        }
      } else {
        EXPECT_EQ(os.code(), ErrorCode::kDeviceFault) << i << ": " << os.to_string();
      }
    }
    expect_failed_for_good(*engine, *dev, s, "2^63 ps");
  }
  expect_a_working_simulation(1 << 20);
}

}  // namespace
}  // namespace spyre_dma::model
