// The CUDA executor: typed errors where there is no GPU (this runs everywhere the build has
// CUDA), and, where a GPU is present, the engine's copies through cudaMemcpyAsync.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "spyre_dma/cuda/cuda_copy_executor.hpp"
#include "spyre_dma/spyre_dma.hpp"

namespace spyre_dma::cuda {
namespace {

using namespace std::chrono_literals;

TEST(CudaExecutor, WithoutAUsableDeviceConstructionIsATypedError) {
  const std::string why = cuda_device_unavailable_reason(0);
  if (why.empty()) GTEST_SKIP() << "a CUDA device is present: this test needs a machine without one";
  try {
    (void)make_cuda_executor();
    FAIL() << "make_cuda_executor succeeded although: " << why;
  } catch (const DeviceFault& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)open_cuda_device(), DeviceFault);
}

TEST(CudaExecutor, NonexistentOrdinalIsATypedError) {
  if (!cuda_support_built()) GTEST_SKIP() << cuda_device_unavailable_reason(0);
  CudaExecutorConfig c;
  c.device = 4096;
  EXPECT_THROW((void)make_cuda_executor(c), DeviceFault);
  EXPECT_FALSE(cuda_device_unavailable_reason(4096).empty());
}

class CudaGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = cuda_device_unavailable_reason(0);
    if (!why.empty()) GTEST_SKIP() << "no usable CUDA device: " << why;
  }
};

TEST_F(CudaGpu, EngineRoundTripsThroughCopyEngines) {
  CudaExecutorConfig c;
  c.device_memory_bytes = 256ull << 20;
  auto device = open_cuda_device(c);
  auto engine = Engine::open(device);
  Stream s = engine->create_stream();
  constexpr std::size_t n = (17 << 20) + 200;
  DeviceBuffer dev = engine->allocate(n), other = engine->allocate(n);
  HostBuffer src = engine->allocate_host(n);
  for (std::size_t i = 0; i < n; ++i) static_cast<std::uint8_t*>(src.data())[i] = static_cast<std::uint8_t>(i * 7 + 3);
  Op h2d = s.copy_h2d(dev, 0, src.data(), n);
  s.copy_d2d(other, 0, dev, 0, n);
  std::vector<std::uint8_t> back(n);  // pageable: staged
  s.copy_d2h(back.data(), other, 0, n);
  ASSERT_TRUE(s.synchronize(30s).ok());
  EXPECT_EQ(0, std::memcmp(back.data(), src.data(), n));
  EXPECT_GT(h2d.device_end_ns(), h2d.device_start_ns());
  s.fill(dev, 0, n, 0x01020304u);
  s.copy_d2h(back.data(), dev, 0, n);
  ASSERT_TRUE(s.synchronize(30s).ok());
  for (std::size_t i = 0; i < n; i += 4097) ASSERT_EQ(back[i], static_cast<std::uint8_t>(0x01020304u >> (8 * (i % 4))));
}

}  // namespace
}  // namespace spyre_dma::cuda
