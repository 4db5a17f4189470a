// Remote operations on streams: two engines (refdev), each with an Endpoint, in one process. Puts
// and gets move host and device memory byte for byte, ordered with their streams' other
// operations and with events; every error completes its op once and leaves the engine usable.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <numeric>
#include <vector>

#include "spyre_dma/rdma/endpoint.hpp"
#include "spyre_dma/refdev/ref_device.hpp"
#include "spyre_dma/spyre_dma.hpp"

namespace spyre_dma::rdma {
namespace {

using namespace std::chrono_literals;
constexpr auto kWait = 30s;

std::unique_ptr<Engine> open_engine() { return Engine::open(std::make_shared<refdev::RefDevice>()); }

void pattern(void* p, std::size_t n, unsigned seed) {
  auto* b = static_cast<std::uint8_t*>(p);
  for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<std::uint8_t>((i * 131 + seed * 7 + (i >> 9)) & 0xff);
}

// Node A works on its streams; node B exposes 1 MiB of registered host memory.
struct TwoEngines {
  std::unique_ptr<Engine> a = open_engine(), b = open_engine();
  Endpoint ea{*a}, eb{*b};
  static constexpr std::uint64_t kRange = 1 << 20;
  HostBuffer b_memory = b->allocate_host(kRange);
  RemoteHandle b_range = eb.expose(b_memory);
};

TEST(Endpoint, HostAndDeviceMemoryToTheRemoteRangeAndBack) {
  TwoEngines t;
  Stream s = t.a->create_stream();
  constexpr std::uint64_t n = 256 << 10;
  HostBuffer local = t.a->allocate_host(n), back = t.a->allocate_host(n);
  DeviceBuffer dev = t.a->allocate(n), dev2 = t.a->allocate(n);
  pattern(local.data(), n, 1);
  // Host -> remote, then device -> remote (the device filled by an H2D before it, in order).
  Op p1 = t.ea.put(s, t.b_range, 0, local.data(), n);
  s.copy_h2d(dev, 0, local.data(), n);
  Op p2 = t.ea.put(s, t.b_range, n, dev, 0, n);
  // Remote -> device, then the device back to host: the D2H waits for the get.
  Op g = t.ea.get(s, dev2, 0, t.b_range, n, n);
  s.copy_d2h(back.data(), dev2, 0, n);
  ASSERT_TRUE(s.synchronize(kWait).ok());
  EXPECT_TRUE(p1.status().ok() && p2.status().ok() && g.status().ok());
  EXPECT_EQ(p1.kind(), OpKind::kHostTask);
  const auto* remote = static_cast<const std::uint8_t*>(t.b_memory.data());
  EXPECT_EQ(std::memcmp(remote, local.data(), n), 0) << "host put";
  EXPECT_EQ(std::memcmp(remote + n, local.data(), n), 0) << "device put";
  EXPECT_EQ(std::memcmp(back.data(), local.data(), n), 0) << "get into device memory";
  // Remote -> host.
  std::vector<std::uint8_t> plain(n);
  ASSERT_TRUE(t.ea.get(s, plain.data(), t.b_range, 0, n).wait(kWait).ok());
  EXPECT_EQ(std::memcmp(plain.data(), local.data(), n), 0) << "host get";
}

// A put on one stream, an event, and a get on another stream that waits for it: the get sees the
// put's data.
TEST(Endpoint, EventsOrderRemoteOperationsAcrossStreams) {
  TwoEngines t;
  Stream s1 = t.a->create_stream(), s2 = t.a->create_stream();
  Event e = t.a->create_event();
  constexpr std::uint64_t n = 64 << 10;
  std::vector<std::uint8_t> out(n), in(n, 0);
  for (unsigned round = 1; round <= 4; ++round) {
    pattern(out.data(), n, round);
    t.ea.put(s1, t.b_range, 4096, out.data(), n);
    s1.record(e);
    s2.wait(e);
    t.ea.get(s2, in.data(), t.b_range, 4096, n);
    ASSERT_TRUE(s2.synchronize(kWait).ok());
    EXPECT_EQ(in, out) << "round " << round;
  }
}

TEST(Endpoint, ARequestOutsideTheRangeIsRefusedBeforeAnythingIsSubmitted) {
  TwoEngines t;
  Stream s = t.a->create_stream();
  std::vector<std::uint8_t> data(4096);
  DeviceBuffer dev = t.a->allocate(8192);
  EXPECT_THROW(t.ea.put(s, t.b_range, TwoEngines::kRange - 100, data.data(), 4096), InvalidArgument);
  EXPECT_THROW(t.ea.get(s, data.data(), t.b_range, 0, 0), InvalidArgument);
  EXPECT_THROW(t.ea.put(s, t.b_range, 0, nullptr, 64), InvalidArgument);
  EXPECT_THROW(t.ea.put(s, t.b_range, 0, dev, 64, 128), InvalidArgument);   // device offset not a multiple of 128
  EXPECT_THROW(t.ea.get(s, dev, 4096, t.b_range, 0, 8192), InvalidArgument);  // past the device buffer
  EXPECT_THROW(t.ea.put(s, RemoteHandle{}, 0, data.data(), 64), InvalidArgument);
  // Device memory is exposed only where the NIC reaches it peer-to-peer: not over UCX.
  EXPECT_THROW(t.ea.expose(dev), InvalidArgument);
  EXPECT_TRUE(s.query()) << "nothing was submitted";
  EXPECT_TRUE(std::all_of(static_cast<std::uint8_t*>(t.b_memory.data()),
                          static_cast<std::uint8_t*>(t.b_memory.data()) + TwoEngines::kRange,
                          [](std::uint8_t x) { return x == 0; }));
}

// A forged key and a peer that is gone each fail their op once, with their code; the stream and
// the engine go on.
TEST(Endpoint, FailuresCompleteTheirOpOnceAndLeaveTheEngineUsable) {
  TwoEngines t;
  Stream s = t.a->create_stream();
  std::vector<std::uint8_t> data(4096, 9);
  RemoteHandle forged = t.b_range;
  forged.key[forged.key.size() / 2] ^= 1;
  std::atomic<int> calls{0};
  Op bad = t.ea.put(s, forged, 0, data.data(), data.size(), [&](const Status&) { ++calls; });
  EXPECT_EQ(bad.wait(kWait).code(), ErrorCode::kRemoteAccess);
  EXPECT_EQ(s.synchronize(kWait).code(), ErrorCode::kRemoteAccess);

  // A third engine's range, then that engine's endpoint goes away.
  auto c = open_engine();
  RemoteHandle gone;
  HostBuffer c_memory = c->allocate_host(1 << 16);
  {
    Endpoint ec(*c);
    gone = ec.expose(c_memory);
  }
  Op lost = t.ea.put(s, gone, 0, data.data(), data.size(), [&](const Status&) { ++calls; });
  EXPECT_EQ(lost.wait(kWait).code(), ErrorCode::kPeerUnreachable) << lost.status().to_string();
  EXPECT_EQ(s.synchronize(kWait).code(), ErrorCode::kPeerUnreachable);
  EXPECT_EQ(calls.load(), 2);

  // The same stream, and the live peer, still work.
  ASSERT_TRUE(t.ea.put(s, t.b_range, 0, data.data(), data.size()).wait(kWait).ok());
  EXPECT_EQ(static_cast<std::uint8_t*>(t.b_memory.data())[4095], 9);
  DeviceBuffer dev = t.a->allocate(4096);
  s.fill(dev, 0, 4096, 0x01020304);
  ASSERT_TRUE(s.synchronize(kWait).ok());
}

// An endpoint may go while its operations are still queued: they hold its node, and complete.
TEST(Endpoint, QueuedOperationsOutliveTheirEndpoint) {
  TwoEngines t;
  Stream s = t.a->create_stream();
  TaskCompletion gate;
  std::atomic<bool> held{false};
  s.host_task([&](TaskCompletion done) {
    gate = done;
    held = true;
  });
  std::vector<std::uint8_t> data(8192, 0x5a);
  Op put;
  {
    Endpoint ephemeral(*t.a);
    put = ephemeral.put(s, t.b_range, 0, data.data(), data.size());
  }
  while (!held) s.query();
  EXPECT_FALSE(put.done());
  gate(Status());
  ASSERT_TRUE(put.wait(kWait).ok()) << put.status().to_string();
  EXPECT_EQ(static_cast<std::uint8_t*>(t.b_memory.data())[8191], 0x5a);
}

}  // namespace
}  // namespace spyre_dma::rdma
