// The CUDA backend's host side (CopyEngineDevice: registers, rings, CB translation, ordering,
// RBs, timeouts) driven by the unchanged engine, on the host memcpy executor.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

#include "spyre_dma/cuda/copy_engine_device.hpp"
#include "spyre_dma/cuda/host_copy_executor.hpp"
#include "spyre_dma/spyre_dma.hpp"

namespace spyre_dma::cuda {
namespace {

using namespace std::chrono_literals;

std::vector<std::uint8_t> pattern(std::size_t n, std::uint32_t seed) {
  std::vector<std::uint8_t> v(n);
  std::uint32_t x = seed * 2654435761u + 1;
  for (auto& b : v) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<std::uint8_t>(x >> 24);
  }
  return v;
}

struct Bench {
  explicit Bench(HostCopyExecutorConfig ec = {}, CopyEngineDeviceConfig dc = {}) {
    auto ex = std::make_unique<HostCopyExecutor>(ec);
    executor = ex.get();
    device = std::make_shared<CopyEngineDevice>(std::move(ex), dc);
    engine = Engine::open(device);
  }
  HostCopyExecutor* executor = nullptr;
  std::shared_ptr<CopyEngineDevice> device;
  std::unique_ptr<Engine> engine;
};

TEST(CopyEngineDevice, DescribesItselfAsSelfTimedCudaBackend) {
  Bench b;
  const DeviceDescription d = b.device->describe();
  EXPECT_EQ(d.backend, "cuda");
  EXPECT_EQ(d.progress, Progress::kSelfTimed);
  EXPECT_NE(d.name.find("host memcpy"), std::string::npos) << d.name;
  EXPECT_EQ(b.device->read64(hw::reg::kDeviceMemBytes_64), b.executor->device_memory_bytes());
  EXPECT_EQ(b.device->read32(hw::reg::kVersion), hw::kContractVersion);
  EXPECT_THROW((void)b.device->read32(hw::reg::kBar0Bytes), std::out_of_range);
  EXPECT_EQ(b.device->read32(0x0ABC), 0u);  // unassigned
}

TEST(CopyEngineDevice, RejectsBadConfiguration) {
  EXPECT_THROW(CopyEngineDevice(nullptr), std::invalid_argument);
  CopyEngineDeviceConfig c;
  c.depth[1] = 1000;
  EXPECT_THROW(CopyEngineDevice(std::make_unique<HostCopyExecutor>(), c), std::invalid_argument);
  c = {};
  c.window = 0;
  EXPECT_THROW(CopyEngineDevice(std::make_unique<HostCopyExecutor>(), c), std::invalid_argument);
  HostCopyExecutorConfig e;
  e.device_memory_bytes = 0;
  EXPECT_THROW(HostCopyExecutor{e}, std::invalid_argument);
}

// Registered and pageable host memory, whole and odd sizes, one CB and several (4 MiB pieces).
TEST(CopyEngineDevice, RoundTripsRegisteredAndPageable) {
  Bench b;
  Stream s = b.engine->create_stream();
  for (std::size_t n : {std::size_t{4096}, std::size_t{(1 << 20) + 37}, std::size_t{9 << 20}}) {
    DeviceBuffer dev = b.engine->allocate(n);
    const auto src = pattern(n, static_cast<std::uint32_t>(n));
    HostBuffer reg = b.engine->allocate_host(n);
    std::memcpy(reg.data(), src.data(), n);
    s.copy_h2d(dev, 0, reg.data(), n);
    std::vector<std::uint8_t> back(n, 0);
    Op d2h = s.copy_d2h(back.data(), dev, 0, n);  // pageable destination: staged
    const Status st = s.synchronize(10s);
    ASSERT_TRUE(st.ok()) << n << ": " << st.to_string();
    EXPECT_EQ(back, src) << n << " bytes";
    EXPECT_GT(d2h.device_start_ns(), 0u);
    EXPECT_GE(d2h.device_end_ns(), d2h.device_start_ns());

    const auto src2 = pattern(n, 7);
    s.copy_h2d(dev, 0, src2.data(), n);  // pageable source
    std::memset(reg.data(), 0, n);
    s.copy_d2h(reg.data(), dev, 0, n);
    ASSERT_TRUE(s.synchronize(10s).ok());
    EXPECT_EQ(0, std::memcmp(reg.data(), src2.data(), n)) << n << " bytes";
  }
  EXPECT_GT(b.executor->host_mappings(), 0u);  // rings, staging, registered buffers
}

TEST(CopyEngineDevice, FillsAndCopiesWithinDeviceMemory) {
  Bench b;
  Stream s = b.engine->create_stream();
  constexpr std::size_t n = (3 << 20) + 130;
  DeviceBuffer a = b.engine->allocate(n), c = b.engine->allocate(n);
  s.fill(a, 0, n, 0xA1B2C3D4u);
  s.copy_d2d(c, 0, a, 0, n);
  std::vector<std::uint8_t> back(n);
  s.copy_d2h(back.data(), c, 0, n);
  const Status st = s.synchronize(10s);
  ASSERT_TRUE(st.ok()) << st.to_string();
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(back[i], static_cast<std::uint8_t>(0xA1B2C3D4u >> (8 * (i % 4)))) << "byte " << i;
  }
}

// Each stream has its own range; H2D and D2H of one stream go to different pipelines (lanes), so
// the data is right only when the strict mode's barriers hold the D2H until its H2D retired.
TEST(CopyEngineDevice, SeveralStreamsKeepTheirOrderAcrossLanes) {
  Bench b;
  constexpr int kStreams = 4;
  constexpr std::size_t n = 5 << 20;
  std::vector<Stream> streams;
  for (int i = 0; i < kStreams; ++i) streams.push_back(b.engine->create_stream());
  DeviceBuffer dev = b.engine->allocate(n * kStreams);
  HostBuffer src = b.engine->allocate_host(n * kStreams), dst = b.engine->allocate_host(n * kStreams);
  for (int round = 0; round < 3; ++round) {
    const auto data = pattern(n * kStreams, static_cast<std::uint32_t>(round + 11));
    std::memcpy(src.data(), data.data(), data.size());
    std::memset(dst.data(), 0, data.size());
    for (int i = 0; i < kStreams; ++i) {
      auto* s8 = static_cast<std::uint8_t*>(src.data()) + i * n;
      auto* d8 = static_cast<std::uint8_t*>(dst.data()) + i * n;
      streams[i].copy_h2d(dev, i * n, s8, n);
      streams[i].copy_d2h(d8, dev, i * n, n);
    }
    ASSERT_TRUE(b.engine->synchronize(20s).ok());
    EXPECT_EQ(0, std::memcmp(dst.data(), data.data(), data.size())) << "round " << round;
  }
}

TEST(CopyEngineDevice, ComputeCbsTakeTheirTime) {
  Bench b;
  Stream s = b.engine->create_stream();
  Op op = s.compute(std::chrono::milliseconds(20));
  ASSERT_TRUE(s.synchronize(5s).ok());
  EXPECT_GE(op.device_end_ns() - op.device_start_ns(), 20'000'000u);
}

// An executor failure (what a failed cudaMemcpyAsync reports) is an Error RB: the engine fails
// the op with kDeviceError carrying the kind and the executor's detail.
TEST(CopyEngineDevice, ExecutorFailureFailsTheOpWithTheRbError) {
  HostCopyExecutorConfig ec;
  ec.fail_every_n = 1;
  Bench b(ec);
  Stream s = b.engine->create_stream();
  DeviceBuffer dev = b.engine->allocate(4096);
  HostBuffer host = b.engine->allocate_host(4096);
  Op op = s.copy_h2d(dev, 0, host.data(), 4096);
  const Status st = op.wait(5s);
  ASSERT_EQ(st.code(), ErrorCode::kDeviceError) << st.to_string();
  ASSERT_TRUE(st.device().has_value());
  EXPECT_EQ(st.device()->kind, hw::ErrorKind::kPcieError);
  EXPECT_EQ(st.device()->pipeline, hw::Pipeline::kDmai);
}

// A copy engine that never finishes: the device answers with kCompletionTimeout after its
// timeout, the engine fails the op, and a reset (which drains the lane) makes it usable again.
TEST(CopyEngineDevice, StalledCopyTimesOutAndResetRecovers) {
  CopyEngineDeviceConfig dc;
  dc.completion_timeout = 200ms;
  Bench b({}, dc);
  Stream s = b.engine->create_stream();
  DeviceBuffer dev = b.engine->allocate(1 << 20);
  HostBuffer host = b.engine->allocate_host(1 << 20);
  b.executor->stall(static_cast<unsigned>(hw::Pipeline::kDmai), true);
  const auto t0 = std::chrono::steady_clock::now();
  Op op = s.copy_h2d(dev, 0, host.data(), 1 << 20);
  const Status st = op.wait(10s);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  ASSERT_EQ(st.code(), ErrorCode::kDeviceError) << st.to_string();
  ASSERT_TRUE(st.device().has_value());
  EXPECT_EQ(st.device()->kind, hw::ErrorKind::kCompletionTimeout);
  b.executor->stall(static_cast<unsigned>(hw::Pipeline::kDmai), false);
  ASSERT_TRUE(b.engine->reset(10s).ok());
  EXPECT_EQ(b.device->read32(hw::reg::kStatus) & hw::kStatusFatal, 0u);
  Stream s2 = b.engine->create_stream();
  std::memset(host.data(), 0x3C, 1 << 20);
  s2.copy_h2d(dev, 0, host.data(), 1 << 20);
  std::vector<std::uint8_t> back(1 << 20);
  s2.copy_d2h(back.data(), dev, 0, 1 << 20);
  ASSERT_TRUE(s2.synchronize(10s).ok());
  EXPECT_EQ(back[12345], 0x3C);
}

}  // namespace
}  // namespace spyre_dma::cuda
