// The two times every op carries on the simulator (docs/engine.md, "Timing"): device time (its
// CBs' first start to last end) and host time (the call that submitted it to the completion the
// engine saw, staging copies included), both in simulated time; and events, which measure what
// CUDA events around queued copies measure.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "spyre_dma/model/config_loader.hpp"
#include "spyre_dma/model/sim_device.hpp"
#include "spyre_dma/spyre_dma.hpp"

namespace spyre_dma::model {
namespace {

constexpr std::uint64_t kBytes = 4ull << 20;  // one staging piece of the engine's default

struct Timed {
  std::uint64_t device_ns = 0, host_ns = 0, between_events_ns = 0;
  std::uint64_t host_start_ns = 0, device_start_ns = 0, device_end_ns = 0, host_end_ns = 0;
};

// One copy between events on its stream, of registered or pageable (plain heap) host memory.
Timed copy(bool h2d, bool pageable) {
  auto dev = std::make_shared<SimDevice>(preset("spyre-gen5x16"));
  auto engine = Engine::open(dev);
  Stream s = engine->create_stream();
  DeviceBuffer buf = engine->allocate(kBytes);
  HostBuffer registered = engine->allocate_host(kBytes);
  std::vector<std::uint8_t> heap(kBytes, 0x5a);
  void* host = pageable ? static_cast<void*>(heap.data()) : registered.data();
  Event before = engine->create_event(), after = engine->create_event();
  s.record(before);
  Op op = h2d ? s.copy_h2d(buf, 0, host, kBytes) : s.copy_d2h(host, buf, 0, kBytes);
  s.record(after);
  EXPECT_TRUE(s.synchronize(std::chrono::seconds(60)).ok());
  Timed t;
  t.device_start_ns = op.device_start_ns();
  t.device_end_ns = op.device_end_ns();
  t.host_start_ns = op.host_start_ns();
  t.host_end_ns = op.host_end_ns();
  t.device_ns = t.device_end_ns - t.device_start_ns;
  t.host_ns = t.host_end_ns - t.host_start_ns;
  t.between_events_ns = static_cast<std::uint64_t>(after.elapsed_since(before).count());
  return t;
}

TEST(SimTiming, HostTimeHoldsTheDeviceTimeAndTheStaging) {
  // The staging copy of 4 MiB at host_cost.staging_gbps (4.5 GB/s): about 932 us.
  const double staging_ns = kBytes / preset("spyre-gen5x16").host_cost.staging_gbps;
  for (const bool h2d : {true, false}) {
    const Timed reg = copy(h2d, false), page = copy(h2d, true);
    for (const Timed& t : {reg, page}) {
      EXPECT_LE(t.host_start_ns, t.device_start_ns) << (h2d ? "H2D" : "D2H");
      EXPECT_GE(t.host_end_ns, t.device_end_ns) << (h2d ? "H2D" : "D2H");
    }
    // One staging piece: it is copied before the CB starts (H2D) or after it ends (D2H), so the
    // device time is the registered copy's, and the host time holds the staging besides.
    EXPECT_NEAR(double(page.device_ns), double(reg.device_ns), 0.01 * double(reg.device_ns)) << (h2d ? "H2D" : "D2H");
    EXPECT_GT(double(page.host_ns), double(reg.host_ns) + 0.95 * staging_ns) << (h2d ? "H2D" : "D2H");
    EXPECT_LT(double(page.host_ns), double(reg.host_ns) + 1.2 * staging_ns) << (h2d ? "H2D" : "D2H");
  }
}

TEST(SimTiming, EventsAroundAPageableCopyHoldItsStagingBothWays) {
  // A pageable cudaMemcpyAsync returns once the bytes are where they go, so events recorded
  // around it span the staging, in either direction.
  const double staging_ns = kBytes / preset("spyre-gen5x16").host_cost.staging_gbps;
  for (const bool h2d : {true, false}) {
    const Timed reg = copy(h2d, false), page = copy(h2d, true);
    EXPECT_GE(reg.between_events_ns, reg.device_ns) << (h2d ? "H2D" : "D2H");
    EXPECT_LT(reg.between_events_ns, reg.device_ns + 5000) << (h2d ? "H2D" : "D2H");
    EXPECT_GT(double(page.between_events_ns), double(reg.between_events_ns) + 0.95 * staging_ns)
        << (h2d ? "H2D" : "D2H");
  }
}

TEST(SimTiming, HostTimesAreTheSameOnEveryRun) {
  const Timed a = copy(false, true), b = copy(false, true);
  EXPECT_EQ(a.host_start_ns, b.host_start_ns);
  EXPECT_EQ(a.host_end_ns, b.host_end_ns);
  EXPECT_EQ(a.between_events_ns, b.between_events_ns);
}

}  // namespace
}  // namespace spyre_dma::model
