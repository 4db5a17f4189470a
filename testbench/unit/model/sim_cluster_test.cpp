// A simulated cluster (SimCluster): nodes with a NIC each on one network. Puts and gets between
// nodes byte for byte into host and device memory, the NIC's refusals (keys, ranges, revoked
// regions) and a port that is down, the engine's Endpoint over a node's NIC, the switch's credits
// under incast, determinism, and the 400 Gb/s pair against published perftest figures.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <vector>

#include "spyre_dma/model/config_loader.hpp"
#include "spyre_dma/model/page_buffer.hpp"
#include "spyre_dma/model/sim_cluster.hpp"
#include "spyre_dma/rdma/endpoint.hpp"
#include "spyre_dma/spyre_dma.hpp"

namespace spyre_dma::model {
namespace {

using rdma::RemoteHandle;

SimConfig cluster_config(std::uint32_t nodes, const char* fabric = "switch") {
  SimConfig c = preset("spyre-gen5x16");
  c.network.nodes = nodes;
  c.network.fabric = fabric;
  return c;
}

// One transfer's outcome, filled on the simulation's thread.
struct Outcome {
  std::atomic<bool> done{false};
  Status status;
  std::uint64_t at_ps = 0;
};

rdma::Transport::Done record(SimCluster& c, const std::shared_ptr<Outcome>& o) {
  (void)c;
  return [o](Status s) {
    o->status = std::move(s);
    o->done = true;
  };
}

Status put(SimCluster& c, SimNic& nic, const RemoteHandle& h, std::uint64_t off, const void* src, std::uint64_t n) {
  auto o = std::make_shared<Outcome>();
  nic.start_put(h, off, src, n, record(c, o));
  EXPECT_TRUE(c.run_until([&] { return o->done.load(); }));
  return o->status;
}

Status get(SimCluster& c, SimNic& nic, void* dst, const RemoteHandle& h, std::uint64_t off, std::uint64_t n) {
  auto o = std::make_shared<Outcome>();
  nic.start_get(dst, h, off, n, record(c, o));
  EXPECT_TRUE(c.run_until([&] { return o->done.load(); }));
  return o->status;
}

std::vector<std::uint8_t> pattern(std::size_t n, unsigned seed) {
  std::vector<std::uint8_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>(i * 131 + seed * 7 + (i >> 9));
  return v;
}

constexpr std::size_t kGuard = 4096;

TEST(SimCluster, PutAndGetBetweenNodesByteForByte) {
  SimCluster c(cluster_config(2));
  const std::size_t range = (1u << 20) + 3;
  std::vector<std::uint8_t> remote(range + 2 * kGuard, 0xEE);
  const RemoteHandle h = c.nic(1)->expose(remote.data() + kGuard, range);
  for (std::size_t n : {std::size_t{1}, std::size_t{100}, std::size_t{4096}, std::size_t{4097}, range}) {
    const std::size_t off = range - n;  // up to the range's last byte
    const std::vector<std::uint8_t> src = pattern(n, static_cast<unsigned>(n));
    ASSERT_TRUE(put(c, *c.nic(0), h, off, src.data(), n).ok()) << n;
    EXPECT_EQ(0, std::memcmp(remote.data() + kGuard + off, src.data(), n)) << n;
    std::vector<std::uint8_t> back(n, 0);
    ASSERT_TRUE(get(c, *c.nic(0), back.data(), h, off, n).ok()) << n;
    EXPECT_EQ(back, src) << n;
  }
  for (std::size_t i = 0; i < kGuard; ++i) {
    ASSERT_EQ(remote[i], 0xEE) << "guard byte " << i << " before the range";
    ASSERT_EQ(remote[kGuard + range + i], 0xEE) << "guard byte " << i << " after the range";
  }
}

TEST(SimCluster, PeersReachDeviceMemoryPeerToPeer) {
  SimConfig config = cluster_config(2);
  config.topology.devices = 2;
  config.topology.devices_per_switch = 2;  // the NIC shares the devices' switch
  SimCluster c(config);
  const std::uint64_t base = 1ull << 30, n = 256 * 1024 + 17;
  const RemoteHandle h = c.nic(1)->expose_device(1, base, n);
  const std::vector<std::uint8_t> src = pattern(n, 3);
  ASSERT_TRUE(put(c, *c.nic(0), h, 0, src.data(), n).ok());
  std::vector<std::uint8_t> in_device(n);
  c.device(1, 1)->backdoor_read(base, in_device.data(), n);
  EXPECT_EQ(in_device, src);
  std::vector<std::uint8_t> back(n);
  ASSERT_TRUE(get(c, *c.nic(0), back.data(), h, 0, n).ok());
  EXPECT_EQ(back, src);
  // The data crossed node 1's switch to the device, not its root complex.
  const nlohmann::json stats = c.statistics();
  EXPECT_EQ(stats[1]["host_memory_busy_ns"].get<double>(), 0.0);
  EXPECT_THROW(c.nic(1)->expose_device(2, base, n), InvalidArgument);
  EXPECT_THROW(c.nic(1)->expose_device(0, config.device.memory_bytes - 4, 8), InvalidArgument);
}

// Under parent switches: a device under the NIC's parent switch, and one that is reached over the
// root complex (another parent), both byte for byte, and neither through host memory.
TEST(SimCluster, PeerToPeerAcrossParentSwitches) {
  SimConfig config = cluster_config(2);
  config.topology.devices = 4;
  config.topology.devices_per_switch = 1;
  config.topology.switches_per_root_port = 2;
  SimCluster c(config);
  const std::uint64_t base = 1ull << 28, n = 100000;
  const std::vector<std::uint8_t> src = pattern(n, 6);
  std::vector<std::uint64_t> ps;
  for (unsigned device : {1u, 3u}) {
    const RemoteHandle h = c.nic(1)->expose_device(device, base, n);
    ASSERT_TRUE(put(c, *c.nic(0), h, 0, src.data(), n).ok()) << device;
    std::vector<std::uint8_t> back(n);
    const std::uint64_t t0 = c.now_ps();  // a get's responder reads over the whole path
    ASSERT_TRUE(get(c, *c.nic(0), back.data(), h, 0, n).ok()) << device;
    ps.push_back(c.now_ps() - t0);
    EXPECT_EQ(back, src) << device;
    std::vector<std::uint8_t> in_device(n);
    c.device(1, device)->backdoor_read(base, in_device.data(), n);
    EXPECT_EQ(in_device, src) << device;
  }
  EXPECT_LT(ps[0], ps[1]);  // the shared parent switch is nearer than the root complex
  EXPECT_EQ(c.statistics()[1]["host_memory_busy_ns"].get<double>(), 0.0);
}

TEST(SimCluster, RefusedKeysRangesAndRevokedRegionsWriteNothing) {
  SimCluster c(cluster_config(2));
  std::vector<std::uint8_t> remote(8192, 0x11);
  const RemoteHandle h = c.nic(1)->expose(remote.data(), remote.size());
  const std::vector<std::uint8_t> src = pattern(8192, 1);
  RemoteHandle forged = h;
  forged.key[0] = static_cast<char>(forged.key[0] ^ 0x5a);
  Status s = put(c, *c.nic(0), forged, 0, src.data(), 4096);
  EXPECT_EQ(s.code(), ErrorCode::kRemoteAccess) << s.message();
  RemoteHandle wider = h;  // a range the owner never exposed
  wider.size = 2 * remote.size();
  s = put(c, *c.nic(0), wider, 4096, src.data(), 8192);
  EXPECT_EQ(s.code(), ErrorCode::kRemoteAccess) << s.message();
  s = put(c, *c.nic(0), h, 8000, src.data(), 4096);  // outside the handle: refused before it leaves
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.message();
  c.nic(1)->revoke(h);
  s = get(c, *c.nic(0), std::vector<std::uint8_t>(16).data(), h, 0, 16);
  EXPECT_EQ(s.code(), ErrorCode::kRemoteAccess) << s.message();
  s = put(c, *c.nic(0), h, 0, src.data(), 16);
  EXPECT_EQ(s.code(), ErrorCode::kRemoteAccess) << s.message();
  EXPECT_THROW(c.nic(1)->revoke(h), InvalidArgument);
  for (std::uint8_t b : remote) ASSERT_EQ(b, 0x11);
  RemoteHandle elsewhere = h;
  elsewhere.owner = "sim/0/1";
  s = put(c, *c.nic(0), elsewhere, 0, src.data(), 16);
  EXPECT_EQ(s.code(), ErrorCode::kPeerUnreachable) << s.message();
}

TEST(SimCluster, APortThatIsDownFailsItsTransfersOnlyAfterTheTimeout) {
  SimConfig config = cluster_config(3);
  config.network.nic.timeout_us = 50;
  SimCluster c(config);
  std::vector<std::uint8_t> m1(4096), m2(4096);
  const RemoteHandle h1 = c.nic(1)->expose(m1.data(), m1.size());
  const RemoteHandle h2 = c.nic(2)->expose(m2.data(), m2.size());
  const std::vector<std::uint8_t> src = pattern(4096, 9);
  c.set_port_down(1, true);
  const std::uint64_t before = c.now_ps();
  Status s = put(c, *c.nic(0), h1, 0, src.data(), 4096);
  EXPECT_EQ(s.code(), ErrorCode::kPeerUnreachable) << s.message();
  EXPECT_GE(c.now_ps() - before, 50'000'000u);
  EXPECT_TRUE(put(c, *c.nic(0), h2, 0, src.data(), 4096).ok());  // the other peer is unaffected
  EXPECT_EQ(m2, src);
  c.set_port_down(1, false);
  EXPECT_TRUE(put(c, *c.nic(0), h1, 0, src.data(), 4096).ok());
  EXPECT_EQ(m1, src);
}

// A port that goes down mid-transfer fails the transfers under way to that node once each, after
// the timeout; transfers to another node go on.
TEST(SimCluster, APortThatGoesDownMidTransferFailsOnlyWhatWasUnderWay) {
  SimConfig config = cluster_config(3);
  config.network.nic.timeout_us = 200;
  SimCluster c(config);
  const std::size_t big = 64u << 20, small = 1u << 20;
  std::vector<std::uint8_t> m1(big), m2(small);
  const RemoteHandle h1 = c.nic(1)->expose(m1.data(), m1.size());
  const RemoteHandle h2 = c.nic(2)->expose(m2.data(), m2.size());
  const std::vector<std::uint8_t> src = pattern(big, 2);
  auto to1 = std::make_shared<Outcome>(), to2 = std::make_shared<Outcome>();
  auto calls = std::make_shared<std::atomic<int>>(0);
  c.nic(0)->start_put(h1, 0, src.data(), big, [to1, calls](Status s) {
    ++*calls;
    to1->status = std::move(s);
    to1->done = true;
  });
  c.run_for(100'000'000);  // 100 us into the 1.3 ms put
  ASSERT_FALSE(to1->done.load());
  c.set_port_down(1, true);
  c.nic(0)->start_put(h2, 0, src.data(), small, record(c, to2));
  ASSERT_TRUE(c.run_until([&] { return to1->done && to2->done; }));
  EXPECT_EQ(to1->status.code(), ErrorCode::kPeerUnreachable) << to1->status.message();
  EXPECT_TRUE(to2->status.ok());
  EXPECT_EQ(0, std::memcmp(m2.data(), src.data(), small));
  c.run_for(10'000'000'000);
  EXPECT_EQ(calls->load(), 1);
}

// Two nodes write into a third at once: its switch port is the bottleneck, each gets about half,
// and the credits of the port's buffer hold the senders back.
TEST(SimCluster, IncastSharesTheEgressPortThroughCredits) {
  SimCluster c(cluster_config(3));
  const std::size_t n = 8u << 20;
  std::vector<std::uint8_t> sink(2 * n);
  const RemoteHandle h = c.nic(2)->expose(sink.data(), sink.size());
  const std::vector<std::uint8_t> a = pattern(n, 1), b = pattern(n, 2);
  auto oa = std::make_shared<Outcome>(), ob = std::make_shared<Outcome>();
  const std::uint64_t t0 = c.now_ps();
  c.nic(0)->start_put(h, 0, a.data(), n, record(c, oa));
  c.nic(1)->start_put(h, n, b.data(), n, record(c, ob));
  ASSERT_TRUE(c.run_until([&] { return oa->done && ob->done; }));
  ASSERT_TRUE(oa->status.ok() && ob->status.ok());
  const double seconds = double(c.now_ps() - t0) * 1e-12;
  const double gbps = 2.0 * n * 8 / seconds / 1e9;
  // Both messages through one 400 Gb/s port: the port's rate, not twice it.
  EXPECT_LT(gbps, 400.0);
  EXPECT_GT(gbps, 360.0);
  const nlohmann::json stats = c.statistics();
  EXPECT_GT(stats[0]["nic"]["port"]["credit_stalls"].get<std::uint64_t>() +
                stats[1]["nic"]["port"]["credit_stalls"].get<std::uint64_t>(),
            0u);
  EXPECT_EQ(0, std::memcmp(sink.data(), a.data(), n));
  EXPECT_EQ(0, std::memcmp(sink.data() + n, b.data(), n));
}

// Transfers of several sizes among three nodes, twice: the same completion times and bytes. The
// buffers start on a page (PageBuffer), so where the allocator puts them changes nothing.
std::vector<std::uint64_t> mixed_run() {
  SimCluster c(cluster_config(3));
  std::vector<std::unique_ptr<PageBuffer>> mem;
  std::vector<RemoteHandle> h;
  for (unsigned n = 0; n < 3; ++n) {
    mem.push_back(std::make_unique<PageBuffer>(1u << 20));
    h.push_back(c.nic(n)->expose(mem[n]->data(), mem[n]->size()));
  }
  const std::vector<std::uint8_t> bytes = pattern(1u << 20, 5);
  PageBuffer src(bytes.size());
  std::memcpy(src.data(), bytes.data(), bytes.size());
  std::vector<std::uint64_t> times;
  std::vector<std::shared_ptr<Outcome>> all;
  for (unsigned i = 0; i < 24; ++i) {
    auto o = std::make_shared<Outcome>();
    const unsigned from = i % 3, to = (from + 1 + (i / 3) % 2) % 3;
    const std::uint64_t n = 1ull << (4 + i % 16);
    if (i % 4 == 3) c.nic(from)->start_get(mem[from]->data(), h[to], 0, n, record(c, o));
    else c.nic(from)->start_put(h[to], (i * 4096) % (1u << 19), src.data(), n, record(c, o));
    all.push_back(o);
    if (i % 5 == 4) {
      EXPECT_TRUE(c.run_until([&] { return o->done.load(); }));
      times.push_back(c.now_ps());
    }
  }
  EXPECT_TRUE(c.run_until([&] {
    for (auto& o : all) {
      if (!o->done) return false;
    }
    return true;
  }));
  times.push_back(c.now_ps());
  for (auto& m : mem) {
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < m->size(); ++i) sum = sum * 1099511628211ull + m->data()[i];
    times.push_back(sum);
  }
  return times;
}

TEST(SimCluster, SameWorkloadSameTimesAndBytes) {
  const std::vector<std::uint64_t> a = mixed_run();
  std::vector<std::uint8_t> shift(777);  // the allocator's next blocks lie elsewhere
  const std::vector<std::uint64_t> b = mixed_run();
  EXPECT_EQ(a, b);
}

// Two engines on two nodes, an Endpoint each over its node's NIC: the same calls as over UCX.
TEST(SimCluster, EndpointsOverTheSimulatedNetwork) {
  SimCluster c(cluster_config(2));
  auto e0 = Engine::open(c.device(0, 0));
  auto e1 = Engine::open(c.device(1, 0));
  rdma::Endpoint ep0(*e0, c.nic(0)), ep1(*e1, c.nic(1));
  const std::size_t n = 300000;
  HostBuffer exposed = e1->allocate_host(n);
  std::memset(exposed.data(), 0, n);
  const RemoteHandle h = ep1.expose(exposed);
  const std::vector<std::uint8_t> src = pattern(n, 4);
  HostBuffer host = e0->allocate_host(n);
  std::memcpy(host.data(), src.data(), n);
  DeviceBuffer dev = e0->allocate(n), dev2 = e0->allocate(n);
  Stream s = e0->create_stream(), t = e0->create_stream();
  (void)s.copy_h2d(dev, 0, host.data(), n);
  const Op p = ep0.put(s, h, 0, dev, 0, n);  // after the H2D, from device memory (staged)
  Event put_done = e0->create_event();
  s.record(put_done);
  t.wait(put_done);
  const Op g = ep0.get(t, dev2, 0, h, 0, n);  // after the put, into device memory
  std::vector<std::uint8_t> back(n);
  (void)t.copy_d2h(back.data(), dev2, 0, n);
  ASSERT_TRUE(t.synchronize(std::chrono::seconds(60)).ok());
  EXPECT_TRUE(p.status().ok()) << p.status().message();
  EXPECT_TRUE(g.status().ok()) << g.status().message();
  EXPECT_EQ(0, std::memcmp(exposed.data(), src.data(), n));
  EXPECT_EQ(back, src);
  // A forged key fails its op once; the stream goes on.
  RemoteHandle forged = h;
  forged.key[1] = static_cast<char>(forged.key[1] ^ 1);
  const Op bad = ep0.put(s, forged, 0, host.data(), 64);
  const Op good = ep0.put(s, h, 0, host.data(), 64);
  EXPECT_FALSE(s.synchronize(std::chrono::seconds(60)).ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kRemoteAccess);
  EXPECT_TRUE(good.status().ok());
  EXPECT_TRUE(s.synchronize(std::chrono::seconds(60)).ok());
}

// An engine exposes device memory: the peer's puts cross this node's NIC, PCIe switch and the
// device's link into device memory, never host memory, and a get reads it back the same way.
TEST(SimCluster, EndpointExposesDeviceMemoryPeerToPeer) {
  SimConfig config = cluster_config(2);
  config.topology.devices_per_switch = 1;
  SimCluster c(config);
  auto e0 = Engine::open(c.device(0, 0));
  auto e1 = Engine::open(c.device(1, 0));
  rdma::Endpoint ep0(*e0, c.nic(0)), ep1(*e1, c.nic(1));
  const std::size_t n = 200000;
  DeviceBuffer target = e1->allocate(n);
  const RemoteHandle h = ep1.expose(target, 128, n - 256);
  EXPECT_THROW(ep0.expose(target), InvalidArgument);  // not node 0's device
  const std::vector<std::uint8_t> src = pattern(n - 256, 8);
  HostBuffer host = e0->allocate_host(n);
  std::memcpy(host.data(), src.data(), src.size());
  Stream s = e0->create_stream();
  (void)ep0.put(s, h, 0, host.data(), src.size());
  std::vector<std::uint8_t> back(src.size());
  (void)ep0.get(s, back.data(), h, 0, back.size());
  ASSERT_TRUE(s.synchronize(std::chrono::seconds(60)).ok());
  EXPECT_EQ(back, src);
  EXPECT_EQ(c.statistics()[1]["host_memory_busy_ns"].get<double>(), 0.0);  // node 1's host memory untouched
  std::vector<std::uint8_t> in_device(src.size());
  Stream s1 = e1->create_stream();
  (void)s1.copy_d2h(in_device.data(), target, 128, in_device.size());
  ASSERT_TRUE(s1.synchronize(std::chrono::seconds(60)).ok());
  EXPECT_EQ(in_device, src);
}

// perftest's figures between two ConnectX-7 cards cabled back to back on NDR InfiniBand (MTU
// 4096), from a public setup guide ("How to connect two GPU servers using Infiniband DAC
// cables": MCX75310AAS-NEA, perftest output): ib_write_bw 64 KiB, 5000 iterations, 392.34 Gb/s
// average; ib_send_lat 2 B, 1.27 us typical. docs/rdma.md says what the model takes from them.
constexpr double kPublishedWriteGbps = 392.34;
constexpr double kPublishedLatencyUs = 1.27;

// ib_write_bw's figure: `iterations` writes of `n` bytes from node 0 into node 1, all posted at
// once (perftest keeps its tx depth full), over the time until the last completes; Gb/s.
double write_bandwidth_gbps(SimCluster& c, std::size_t n, unsigned iterations) {
  PageBuffer src(n), dst(n);  // on pages: the same figures on every run
  const RemoteHandle h = c.nic(1)->expose(dst.data(), dst.size());
  auto left = std::make_shared<std::atomic<unsigned>>(iterations);
  const std::uint64_t t0 = c.now_ps();
  for (unsigned i = 0; i < iterations; ++i) c.nic(0)->start_put(h, 0, src.data(), n, [left](Status) { --*left; });
  EXPECT_TRUE(c.run_until([&] { return left->load() == 0; }));
  c.nic(1)->revoke(h);
  return double(n) * iterations * 8 / (double(c.now_ps() - t0) * 1e-12) / 1e9;
}

TEST(SimCluster, Ndr400PairAgainstPublishedPerftest) {
  SimCluster c(preset("ndr400-pair"));
  const double gbps = write_bandwidth_gbps(c, 65536, 5000);
  PageBuffer src(64), flag(64), flag0(64);
  // Ping-pong of 2-byte writes, each side answering when the other's write is in its memory;
  // one way is half a round trip, as perftest's latency tests report it.
  const RemoteHandle to1 = c.nic(1)->expose(flag.data(), flag.size());
  const RemoteHandle to0 = c.nic(0)->expose(flag0.data(), flag0.size());
  const unsigned rounds = 1000;
  auto rounds_left = std::make_shared<std::atomic<unsigned>>(rounds);
  std::function<void()> ping;
  SimNic* n0 = c.nic(0).get();
  SimNic* n1 = c.nic(1).get();
  ping = [&] {
    n0->start_put(to1, 0, src.data(), 2, [](Status) {}, [&] {
      n1->start_put(to0, 0, src.data(), 2, [](Status) {}, [&] {
        if (--*rounds_left > 0) ping();
      });
    });
  };
  const std::uint64_t t1 = c.now_ps();
  ping();
  ASSERT_TRUE(c.run_until([&] { return rounds_left->load() == 0; }));
  const double one_way_us = double(c.now_ps() - t1) * 1e-6 / (2.0 * rounds);
  std::printf("ndr400-pair: ib_write_bw-like 64 KiB %.2f Gb/s (published %.2f, ratio %.3f); "
              "2 B one way %.3f us (published %.2f, ratio %.3f)\n",
              gbps, kPublishedWriteGbps, gbps / kPublishedWriteGbps, one_way_us, kPublishedLatencyUs,
              one_way_us / kPublishedLatencyUs);
  EXPECT_NEAR(gbps / kPublishedWriteGbps, 1.0, 0.05);
  EXPECT_NEAR(one_way_us / kPublishedLatencyUs, 1.0, 0.05);
}

// The same class of NIC on 400GbE RoCEv2 through a switched fabric (MTU 4096): ib_write_bw of
// 64 KiB at 381.41 Gb/s average between two cloud GPU nodes (kubernetes-sigs/dranet,
// examples/demo_gke_rdma/README.md). Nothing was fitted to it: the headers and the switch are
// what the model adds.
TEST(SimCluster, Roce400ThroughASwitchAgainstPublishedPerftest) {
  SimConfig config = cluster_config(2);
  config.network.protocol = "roce_v2";
  SimCluster c(config);
  const double gbps = write_bandwidth_gbps(c, 65536, 2000);
  std::printf("roce_v2 through a switch: 64 KiB %.2f Gb/s (published 381.41, ratio %.3f)\n", gbps, gbps / 381.41);
  EXPECT_NEAR(gbps / 381.41, 1.0, 0.05);
}

// The cluster's trace: every NIC's completions, and with trace_tlps every packet on its wires.
TEST(SimCluster, TraceHoldsEveryCompletionAndPacket) {
  const std::string path = testing::TempDir() + "/cluster_trace.json";
  {
    SimConfig config = cluster_config(3);
    config.trace_tlps = true;
    SimCluster c(config, path);
    PageBuffer m1(1u << 20), src(1u << 20);
    const RemoteHandle h = c.nic(1)->expose(m1.data(), m1.size());
    auto a = std::make_shared<Outcome>(), b = std::make_shared<Outcome>(), g = std::make_shared<Outcome>();
    c.nic(0)->start_put(h, 0, src.data(), 40000, record(c, a));
    c.nic(2)->start_put(h, 65536, src.data(), 100, record(c, b));
    c.nic(2)->start_get(src.data(), h, 0, 10000, record(c, g));
    ASSERT_TRUE(c.run_until([&] { return a->done && b->done && g->done; }));
  }
  std::ifstream in(path);
  const nlohmann::json trace = nlohmann::json::parse(in);
  std::size_t completions = 0, payload = 0, packets = 0;
  for (const auto& e : trace["traceEvents"]) {
    const auto cat = e.find("cat");
    if (cat == e.end()) continue;
    if (*cat == "nic") {
      ++completions;
      EXPECT_EQ(e["args"]["status"], "ok");
    }
    if (*cat == "net" && e["name"] == "packet") {
      ++packets;
      EXPECT_LE(e["args"]["payload"].get<std::uint64_t>(), 4096u);
      payload += e["args"]["payload"].get<std::uint64_t>();
    }
  }
  EXPECT_EQ(completions, 3u);
  // Through the switch every packet is on two wires: its sender's and the egress port's.
  EXPECT_EQ(payload, 2u * (40000 + 100 + 10000));
  EXPECT_EQ(packets, 2u * (10 + 1 + 3));
}

TEST(SimCluster, OneNodeIsNotACluster) {
  EXPECT_THROW(SimCluster c(cluster_config(1)), std::invalid_argument);
}

}  // namespace
}  // namespace spyre_dma::model
