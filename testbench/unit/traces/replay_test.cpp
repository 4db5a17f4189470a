// Replay on refdev and on sim: data reproduced and checked, dependencies kept, determinism on
// sim, captured start times honoured, and the model's staging cost.
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "spyre_dma/engine.hpp"
#include "spyre_dma/refdev/ref_device.hpp"
#include "spyre_dma/traces/replay.hpp"

#include "spyre_dma/model/sim_device.hpp"
#include "spyre_dma/model/backend.hpp"

namespace st = spyre_dma::traces;
using namespace std::chrono_literals;

namespace {

st::Op make(std::uint64_t id, std::uint32_t stream, st::OpKind kind, std::uint64_t bytes = 0) {
  st::Op op;
  op.id = id;
  op.stream = stream;
  op.kind = kind;
  op.bytes = bytes;
  return op;
}

// One H2D of `bytes` into its own allocation.
st::Trace one_h2d(std::uint64_t bytes, st::HostMemory host) {
  st::Trace t;
  t.allocations.push_back({1, bytes, 0});
  st::Op op = make(1, 0, st::OpKind::kH2D, bytes);
  op.host = host;
  op.dst_alloc = 1;
  t.ops.push_back(op);
  return t;
}

// Stream 0 writes two ranges, a fill and a device copy; stream 1 reads them back after
// depending on the writers; a long compute on stream 0 delays the writer of range B.
st::Trace data_trace() {
  st::Trace t;
  t.allocations.push_back({1, 1 << 20, 0});
  t.allocations.push_back({2, 1 << 20, 64 << 10});
  auto h2d = make(1, 0, st::OpKind::kH2D, 256 << 10);
  h2d.host = st::HostMemory::kPageable;
  h2d.dst_alloc = 1;
  t.ops.push_back(h2d);
  auto fill = make(2, 0, st::OpKind::kFill, 64 << 10);
  fill.dst_alloc = 1;
  fill.dst_offset = 512 << 10;
  fill.pattern = 0xa5a5f00d;
  t.ops.push_back(fill);
  auto compute = make(3, 0, st::OpKind::kCompute);
  compute.compute_ns = 200000;
  t.ops.push_back(compute);
  auto d2d = make(4, 0, st::OpKind::kD2D, 128 << 10);
  d2d.src_alloc = 1;
  d2d.src_offset = 128 << 10;
  d2d.dst_alloc = 2;
  d2d.dst_offset = 4096;
  t.ops.push_back(d2d);
  auto reg = make(5, 0, st::OpKind::kH2D, 64 << 10);
  reg.host = st::HostMemory::kRegistered;
  reg.dst_alloc = 2;
  reg.dst_offset = 512 << 10;
  t.ops.push_back(reg);
  auto d2h1 = make(6, 1, st::OpKind::kD2H, 576 << 10);
  d2h1.host = st::HostMemory::kRegistered;
  d2h1.src_alloc = 1;
  d2h1.deps = {2};
  t.ops.push_back(d2h1);
  auto d2h2 = make(7, 1, st::OpKind::kD2H, 576 << 10);
  d2h2.host = st::HostMemory::kPageable;
  d2h2.src_alloc = 2;
  d2h2.deps = {5};
  t.ops.push_back(d2h2);
  return t;
}

const st::OpTiming& timing(const st::ReplayResult& r, std::uint64_t id) {
  for (const auto& t : r.ops) {
    if (t.id == id) return t;
  }
  throw std::out_of_range("no op");
}

}  // namespace

TEST(Replay, RefdevReproducesDataAndKeepsDeps) {
  auto dev = std::make_shared<spyre_dma::refdev::RefDevice>();
  spyre_dma::backend::Instance backend;
  backend.memory = dev.get();
  backend.device = dev;
  const st::ReplayResult r = st::replay(data_trace(), backend, {});
  EXPECT_TRUE(r.data_ok) << r.data_error;
  ASSERT_EQ(r.ops.size(), 7u);
  EXPECT_GT(r.total_ns, 0);
  EXPECT_GT(timing(r, 1).duration_ns, 0);
  // Op 7 depends on op 5, which follows the 200 us compute on stream 0.
  EXPECT_GE(timing(r, 7).start_ns, timing(r, 5).start_ns + timing(r, 5).duration_ns);
  EXPECT_GE(timing(r, 6).start_ns, timing(r, 2).start_ns + timing(r, 2).duration_ns);
}


TEST(Replay, SimReproducesDataAndIsDeterministic) {
  spyre_dma::model::SimConfig config;
  const st::ReplayResult a = st::replay_on_sim(data_trace(), config, {});
  EXPECT_TRUE(a.data_ok) << a.data_error;
  EXPECT_GE(timing(a, 7).start_ns, timing(a, 5).start_ns + timing(a, 5).duration_ns);
  EXPECT_GE(timing(a, 4).start_ns, timing(a, 3).start_ns + timing(a, 3).duration_ns);
  const st::ReplayResult b = st::replay_on_sim(data_trace(), config, {});
  ASSERT_EQ(a.ops.size(), b.ops.size());
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    EXPECT_EQ(a.ops[i].start_ns, b.ops[i].start_ns) << a.ops[i].id;
    EXPECT_EQ(a.ops[i].duration_ns, b.ops[i].duration_ns) << a.ops[i].id;
  }
  EXPECT_EQ(a.total_ns, b.total_ns);
}

namespace {

// Three 4 KiB H2D copies captured 50 us apart.
st::Trace spaced_trace() {
  st::Trace t;
  t.allocations.push_back({1, 1 << 20, 0});
  for (std::uint64_t i = 1; i <= 3; ++i) {
    auto op = make(i, 0, st::OpKind::kH2D, 4096);
    op.host = st::HostMemory::kRegistered;
    op.dst_alloc = 1;
    op.dst_offset = (i - 1) * 4096;
    op.start_ns = 1000.0 + static_cast<double>(i - 1) * 50000.0;  // 50 us apart
    t.ops.push_back(op);
  }
  return t;
}

}  // namespace

TEST(Replay, HonourStartTimesDelaysOps) {
  const st::Trace t = spaced_trace();
  spyre_dma::model::SimConfig config;
  const st::ReplayResult fast = st::replay_on_sim(t, config, {});
  st::ReplayOptions honour;
  honour.honour_start_times = true;
  const st::ReplayResult held = st::replay_on_sim(t, config, honour);
  EXPECT_TRUE(held.data_ok) << held.data_error;
  EXPECT_LT(timing(fast, 3).start_ns, 50000.0);
  EXPECT_GE(timing(held, 2).start_ns, 49000.0);
  EXPECT_GE(timing(held, 3).start_ns, 99000.0);
  EXPECT_LT(timing(held, 3).start_ns, 101000.0 + 5000.0);
}

// Simulated ns from submitting a pageable H2D of `bytes` until its last CB ends (the device's
// own timestamps start only at its first CB, after the first piece is staged).
double pageable_h2d_ns(std::uint64_t bytes, double staging_gbps) {
  spyre_dma::model::SimConfig config;
  config.fidelity = spyre_dma::model::Fidelity::kBurst;
  config.host_cost.staging_gbps = staging_gbps;
  auto dev = std::make_shared<spyre_dma::model::SimDevice>(config);
  auto engine = spyre_dma::Engine::open(dev);
  spyre_dma::Stream s = engine->create_stream();
  spyre_dma::DeviceBuffer buf = engine->allocate(bytes);
  std::vector<std::uint8_t> host(bytes, 3);
  const double t0 = dev->now_ns();
  const spyre_dma::Op op = s.copy_h2d(buf, 0, host.data(), bytes);
  EXPECT_TRUE(op.wait(30s).ok());
  return static_cast<double>(op.device_end_ns()) - t0;
}

TEST(Replay, StagingCostSlowsPageableCopies) {
  const std::uint64_t bytes = 16ull << 20;
  const double free_ns = pageable_h2d_ns(bytes, 0.0);
  const double charged_ns = pageable_h2d_ns(bytes, 10.0);
  // 16 MiB at 10 GB/s is 1.68 ms of host copying. The device's DMA of each 4 MiB piece overlaps
  // the host's copy of the next, so the copy gets slower by the copy time less what overlaps
  // (at most the free run's time): about bytes / staging_gbps.
  const double copy_ns = static_cast<double>(bytes) / 10.0;
  const double slower = charged_ns - free_ns;
  EXPECT_GT(slower, copy_ns - free_ns) << "free " << free_ns << " charged " << charged_ns;
  EXPECT_LT(slower, copy_ns * 1.05) << "free " << free_ns << " charged " << charged_ns;
  // Replays see it too.
  const st::Trace t = one_h2d(bytes, st::HostMemory::kPageable);
  spyre_dma::model::SimConfig config;
  config.fidelity = spyre_dma::model::Fidelity::kBurst;
  config.host_cost.staging_gbps = 0.0;  // free staging (the default charges the host's memcpy)
  const st::ReplayResult a = st::replay_on_sim(t, config, {});
  config.host_cost.staging_gbps = 10.0;
  const st::ReplayResult b = st::replay_on_sim(t, config, {});
  EXPECT_TRUE(b.data_ok) << b.data_error;
  EXPECT_GT(b.total_ns, a.total_ns + copy_ns / 2);
}

TEST(Replay, StagingCostLeavesRegisteredCopiesAlone) {
  const st::Trace t = one_h2d(16ull << 20, st::HostMemory::kRegistered);
  spyre_dma::model::SimConfig config;
  config.fidelity = spyre_dma::model::Fidelity::kBurst;
  const st::ReplayResult free_copy = st::replay_on_sim(t, config, {});
  config.host_cost.staging_gbps = 10.0;
  const st::ReplayResult charged = st::replay_on_sim(t, config, {});
  EXPECT_EQ(free_copy.total_ns, charged.total_ns);
}

// A smaller staging piece starts the device earlier: the staging of the rest of a copy that fits
// one default (4 MiB) buffer then lands in its device time.
TEST(Replay, StagingPieceMovesStagingIntoDeviceTime) {
  const std::uint64_t bytes = 2ull << 20;
  st::Trace t;
  t.allocations.push_back({1, bytes, 0});
  auto op = make(1, 0, st::OpKind::kH2D, bytes);
  op.host = st::HostMemory::kPageable;
  op.dst_alloc = 1;
  t.ops.push_back(op);
  spyre_dma::model::SimConfig config;
  config.fidelity = spyre_dma::model::Fidelity::kBurst;
  config.host_cost.staging_gbps = 10.0;
  const st::ReplayResult whole = st::replay_on_sim(t, config, {});
  st::ReplayOptions o;
  o.staging_buffer_bytes = 512u << 10;
  const st::ReplayResult pieces = st::replay_on_sim(t, config, o);
  EXPECT_TRUE(pieces.data_ok) << pieces.data_error;
  // Three of the four 512 KiB pieces are staged after the device starts: about 157 us at 10 GB/s.
  const double staged_after_start = 3.0 * (512u << 10) / 10.0;
  EXPECT_GT(pieces.ops[0].duration_ns, 0.9 * staged_after_start);
  EXPECT_LT(whole.ops[0].duration_ns, 0.5 * staged_after_start);
}


namespace {

// Every device of a simulated server of `config`, as replay_together() takes them.
std::vector<spyre_dma::backend::Instance> server_devices(const spyre_dma::model::SimConfig& config) {
  return spyre_dma::model::open_server(config);
}

spyre_dma::model::SimConfig server(std::uint32_t devices, std::uint32_t per_switch) {
  spyre_dma::model::SimConfig c;
  c.topology.devices = devices;
  c.topology.devices_per_switch = per_switch;
  c.host.memory_gbps = 1000.0;  // out of the way
  return c;
}

}  // namespace

TEST(ReplayTogether, DevicesThatShareNothingReplayAsAlone) {
  const st::Trace t = data_trace();
  // Alone through the same stepping driver: replay() lets its device run a step before each op
  // of the same stream, which the stepping replay of several devices does not (it issues what it
  // can first), so only the driver's own run alone isolates what the devices share.
  const st::ReplayResult alone = st::replay_together({&t}, server_devices(server(1, 0)), {}).at(0);
  const std::vector<st::ReplayResult> r = st::replay_together({&t, &t}, server_devices(server(2, 0)), {});
  ASSERT_EQ(r.size(), 2u);
  for (const st::ReplayResult& d : r) {
    EXPECT_TRUE(d.data_ok) << d.data_error;
    ASSERT_EQ(d.ops.size(), alone.ops.size());
    for (std::size_t i = 0; i < d.ops.size(); ++i) {
      EXPECT_NEAR(d.ops[i].duration_ns, alone.ops[i].duration_ns, 0.02 * alone.ops[i].duration_ns + 50) << d.ops[i].id;
    }
  }
}

TEST(ReplayTogether, DevicesBehindOneSwitchShareItsUplink) {
  const st::Trace big = one_h2d(16 << 20, st::HostMemory::kRegistered);
  const double alone = st::replay_on_sim(big, server(1, 0), {}).ops[0].duration_ns;
  const std::vector<st::ReplayResult> r = st::replay_together({&big, &big}, server_devices(server(2, 2)), {});
  for (const st::ReplayResult& d : r) {
    EXPECT_TRUE(d.data_ok) << d.data_error;
    EXPECT_GT(d.ops[0].duration_ns, 1.7 * alone);  // the Gen5 x16 uplink is one device link's twin
  }
}

TEST(ReplayTogether, DifferentTracesPerDeviceDeterministically) {
  const st::Trace a = data_trace();
  const st::Trace b = one_h2d(4 << 20, st::HostMemory::kPageable);
  const auto first = st::replay_together({&a, &b}, server_devices(server(2, 2)), {});
  const auto second = st::replay_together({&a, &b}, server_devices(server(2, 2)), {});
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].ops.size(), a.ops.size());
  EXPECT_EQ(first[1].ops.size(), b.ops.size());
  for (std::size_t d = 0; d < 2; ++d) {
    EXPECT_TRUE(first[d].data_ok) << first[d].data_error;
    EXPECT_EQ(first[d].total_ns, second[d].total_ns) << "device " << d;
    for (std::size_t i = 0; i < first[d].ops.size(); ++i) {
      EXPECT_EQ(first[d].ops[i].start_ns, second[d].ops[i].start_ns);
      EXPECT_EQ(first[d].ops[i].duration_ns, second[d].ops[i].duration_ns);
    }
  }
}

TEST(ReplayTogether, HonoursStartTimesOnEveryDevice) {
  const st::Trace t = spaced_trace();
  st::ReplayOptions honour;
  honour.honour_start_times = true;
  const auto r = st::replay_together({&t, &t}, server_devices(server(2, 0)), honour);
  for (const st::ReplayResult& d : r) {
    EXPECT_TRUE(d.data_ok) << d.data_error;
    EXPECT_GE(timing(d, 2).start_ns, 49000.0);
    EXPECT_GE(timing(d, 3).start_ns, 99000.0);
    EXPECT_LT(timing(d, 3).start_ns, 110000.0);
  }
}

TEST(ReplayTogether, OneTracePerDevice) {
  const st::Trace t = data_trace();
  EXPECT_THROW(st::replay_together({&t}, server_devices(server(2, 0)), {}), std::invalid_argument);
}

namespace {

// Two devices, an H2D of 4 MiB each into an allocation of its own device; with `dep`, device 1's
// copy depends on device 0's.
st::Trace two_device_copies(bool dep) {
  st::Trace t;
  t.header.devices = 2;
  t.allocations.push_back({1, 4 << 20, 0, 0});
  t.allocations.push_back({2, 4 << 20, 0, 1});
  st::Op a = make(1, 0, st::OpKind::kH2D, 4 << 20);
  a.host = st::HostMemory::kRegistered;
  a.dst_alloc = 1;
  t.ops.push_back(a);
  st::Op b = make(2, 0, st::OpKind::kH2D, 4 << 20);
  b.device = 1;
  b.host = st::HostMemory::kRegistered;
  b.dst_alloc = 2;
  if (dep) b.deps = {1};
  t.ops.push_back(b);
  // Device 1 reads its copy back: data checked on the second device too.
  st::Op c = make(3, 1, st::OpKind::kD2H, 4 << 20);
  c.device = 1;
  c.host = st::HostMemory::kRegistered;
  c.src_alloc = 2;
  c.deps = {2};
  t.ops.push_back(c);
  return t;
}

}  // namespace

TEST(ReplayDevices, DevicesRunAtOnceAndADependencyOnAnotherDeviceWaits) {
  // A one-device configuration: replay_on_sim raises it to the trace's two devices, each on a
  // root port of its own.
  const spyre_dma::model::SimConfig one = server(1, 0);
  const st::ReplayResult free = st::replay_on_sim(two_device_copies(false), one, {});
  const st::ReplayResult held = st::replay_on_sim(two_device_copies(true), one, {});
  for (const st::ReplayResult* r : {&free, &held}) {
    EXPECT_TRUE(r->data_ok) << r->data_error;
    ASSERT_EQ(r->ops.size(), 3u);
    for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(r->ops[i].id, i + 1);  // keyed by trace op id, trace order
  }
  const auto end = [](const st::OpTiming& t) { return t.start_ns + t.duration_ns; };
  // Without the dependency the two devices' copies overlap; with it, device 1 starts after.
  EXPECT_LT(free.ops[1].start_ns, end(free.ops[0]));
  EXPECT_GE(held.ops[1].start_ns, end(held.ops[0]));
  EXPECT_GT(held.total_ns, free.total_ns + 0.5 * held.ops[0].duration_ns);
}

TEST(ReplayDevices, DeterministicOnASimulatedServer) {
  const st::Trace t = two_device_copies(true);
  const std::vector<st::ReplayResult> runs = {st::replay(t, server_devices(server(2, 2)), {}),
                                              st::replay(t, server_devices(server(2, 2)), {})};
  ASSERT_EQ(runs[0].ops.size(), runs[1].ops.size());
  EXPECT_EQ(runs[0].total_ns, runs[1].total_ns);
  for (std::size_t i = 0; i < runs[0].ops.size(); ++i) {
    EXPECT_EQ(runs[0].ops[i].start_ns, runs[1].ops[i].start_ns);
    EXPECT_EQ(runs[0].ops[i].duration_ns, runs[1].ops[i].duration_ns);
  }
}

TEST(ReplayDevices, DeviceCountsMustMatch) {
  const st::Trace t = two_device_copies(false);
  // One instance for a trace of two: refused, saying how to open them.
  try {
    (void)st::replay(t, server_devices(server(1, 0)).front(), {});
    ADD_FAILURE() << "a trace of two devices replayed on one";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("2 devices"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)st::replay(t, server_devices(server(3, 0)), {}), std::invalid_argument);
  // replay_together takes one device's traces only.
  EXPECT_THROW((void)st::replay_together({&t, &t}, server_devices(server(2, 0)), {}), std::invalid_argument);
  // A configuration of more devices than the trace's: the others stay idle.
  const st::ReplayResult r = st::replay_on_sim(t, server(3, 0), {});
  EXPECT_TRUE(r.data_ok) << r.data_error;
}
