// First-light checks of the engine on refdev: one op of each kind round-trips.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "spyre_dma/refdev/ref_device.hpp"
#include "spyre_dma/spyre_dma.hpp"

namespace spyre_dma {
namespace {

TEST(Smoke, H2dThenD2hPageable) {
  auto dev = std::make_shared<refdev::RefDevice>();
  auto engine = Engine::open(dev);
  auto stream = engine->create_stream();
  auto buf = engine->allocate(1 << 20);
  std::vector<std::uint8_t> src(1 << 20), dst(1 << 20, 0);
  std::iota(src.begin(), src.end(), 1);
  auto a = stream.copy_h2d(buf, 0, src.data(), src.size());
  auto b = stream.copy_d2h(dst.data(), buf, 0, dst.size());
  ASSERT_TRUE(stream.synchronize(std::chrono::seconds(10)).ok());
  EXPECT_TRUE(a.done());
  EXPECT_TRUE(b.status().ok()) << b.status().to_string();
  EXPECT_EQ(src, dst);
}

TEST(Smoke, RegisteredMultiChunk) {
  auto dev = std::make_shared<refdev::RefDevice>();
  auto engine = Engine::open(dev);
  auto stream = engine->create_stream();
  const std::size_t n = (9 << 20) + 1000;
  auto buf = engine->allocate(n, AllocOptions{3 << 20});
  EXPECT_GT(buf.address().chunks().size(), 1u);
  auto host_in = engine->allocate_host(n);
  auto host_out = engine->allocate_host(n);
  auto* in = static_cast<std::uint8_t*>(host_in.data());
  for (std::size_t i = 0; i < n; ++i) in[i] = static_cast<std::uint8_t>(i * 7 + 3);
  std::memset(host_out.data(), 0, n);
  stream.copy_h2d(buf, 0, in, n);
  stream.fill(buf, 0, 256, 0xA5A5A5A5u);
  stream.copy_d2h(host_out.data(), buf, 0, n);
  ASSERT_TRUE(stream.synchronize(std::chrono::seconds(10)).ok());
  auto* out = static_cast<std::uint8_t*>(host_out.data());
  for (std::size_t i = 0; i < 256; ++i) ASSERT_EQ(out[i], 0xA5) << i;
  EXPECT_EQ(0, std::memcmp(in + 256, out + 256, n - 256));
  EXPECT_EQ(engine->stats().bytes_staged, 0u);
}

TEST(Smoke, EventsCallbacksCompute) {
  auto dev = std::make_shared<refdev::RefDevice>();
  auto engine = Engine::open(dev);
  auto s1 = engine->create_stream();
  auto s2 = engine->create_stream();
  auto ev = engine->create_event();
  auto buf = engine->allocate(4096);
  auto buf2 = engine->allocate(4096);
  s1.fill(buf, 0, 4096, 0x01020304u);
  s1.compute(std::chrono::microseconds(5));
  s1.record(ev);
  s2.wait(ev);
  s2.copy_d2d(buf2, 0, buf, 0, 4096);
  std::vector<std::uint8_t> out(4096);
  s2.copy_d2h(out.data(), buf2, 0, 4096);
  int calls = 0;
  s2.host_callback([&] { ++calls; });
  ASSERT_TRUE(s2.synchronize(std::chrono::seconds(10)).ok());
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(out[0], 0x04);
  EXPECT_EQ(out[3], 0x01);
  EXPECT_EQ(out[4095], 0x01);
  EXPECT_TRUE(ev.query());
}

}  // namespace
}  // namespace spyre_dma
