// Comparing in host time (docs/traces.md, "Compare"): a capture on the simulator records each op's
// host time beside its device time; its replay on the same model gives them back, and compare
// --timing host sets one against the other, staging of pageable copies included.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <sstream>
#include <vector>

#include "sim_capture.hpp"
#include "spyre_dma/traces/compare.hpp"
#include "spyre_dma/traces/replay.hpp"
#include "spyre_dma/traces/trace_io.hpp"

namespace st = spyre_dma::traces;
using namespace std::chrono_literals;

namespace {

constexpr std::uint64_t kBytes = 2ull << 20;

spyre_dma::model::SimConfig config() { return spyre_dma::test::burst_config(); }

// On one stream: a pageable and a registered H2D, then a pageable and a registered D2H, each
// waited for before the next is called (a synchronous caller), then two pageable H2Ds called
// back to back (the second's host time holds its wait for the first).
st::Trace capture() {
  spyre_dma::test::RecordedEngine rec = spyre_dma::test::recorded_engine(config());
  spyre_dma::Engine* engine = rec.engine.get();
  spyre_dma::Stream s = engine->create_stream();
  spyre_dma::DeviceBuffer buf = engine->allocate(kBytes);
  spyre_dma::HostBuffer registered = engine->allocate_host(kBytes);
  std::vector<std::uint8_t> heap(kBytes, 0x3c);
  EXPECT_TRUE(s.copy_h2d(buf, 0, heap.data(), kBytes).wait(60s).ok());
  EXPECT_TRUE(s.copy_h2d(buf, 0, registered.data(), kBytes).wait(60s).ok());
  EXPECT_TRUE(s.copy_d2h(heap.data(), buf, 0, kBytes).wait(60s).ok());
  EXPECT_TRUE(s.copy_d2h(registered.data(), buf, 0, kBytes).wait(60s).ok());
  s.copy_h2d(buf, 0, heap.data(), kBytes);
  s.copy_h2d(buf, 0, heap.data(), kBytes);
  EXPECT_TRUE(s.synchronize(60s).ok());
  return rec.recorder->trace();
}

}  // namespace

TEST(HostTimingCompare, ACaptureOnTheModelRecordsHostTimeBesideDeviceTime) {
  const st::Trace t = capture();
  ASSERT_EQ(st::check_trace(t), "");
  ASSERT_EQ(t.ops.size(), 6u);
  for (const st::Op& op : t.ops) {
    ASSERT_TRUE(op.host_start_ns && op.host_duration_ns && op.start_ns && op.duration_ns) << op.id;
    // The call comes before the device starts, the completion after it ends.
    EXPECT_LE(*op.host_start_ns, *op.start_ns) << op.id;
    EXPECT_GE(*op.host_start_ns + *op.host_duration_ns, *op.start_ns + *op.duration_ns) << op.id;
  }
  // A pageable copy's host time holds its staging, which its device time does not.
  EXPECT_GT(*t.ops[0].host_duration_ns, 2 * *t.ops[1].host_duration_ns);
  EXPECT_GT(*t.ops[2].host_duration_ns, 2 * *t.ops[3].host_duration_ns);
  // Both keys survive the file format.
  std::stringstream file;
  st::write_trace(t, file);
  const st::Trace back = st::parse_trace(file, "<memory>");
  EXPECT_EQ(back.ops[2].host_start_ns, t.ops[2].host_start_ns);
  EXPECT_EQ(back.ops[2].host_duration_ns, t.ops[2].host_duration_ns);
}

TEST(HostTimingCompare, TheReplayOnTheSameModelGivesTheHostTimesBack) {
  const st::Trace t = capture();
  const st::ReplayResult r = st::replay_on_sim(t, config(), {});
  ASSERT_TRUE(r.data_ok) << r.data_error;
  const st::Comparison host = st::compare(t, r, st::Timing::kHost);
  const st::Comparison device = st::compare(t, r, st::Timing::kDevice);
  EXPECT_EQ(host.timing, st::Timing::kHost);
  EXPECT_EQ(device.timing, st::Timing::kDevice);
  ASSERT_EQ(host.ops.size(), 6u);
  ASSERT_EQ(device.ops.size(), 6u);
  EXPECT_NE(host.table().find("timing: host"), std::string::npos);
  EXPECT_EQ(host.to_json()["timing"], "host");
  for (std::size_t i = 0; i < 6; ++i) {
    // The same model, workload and calls: the replay calls each op as the capture's caller did
    // (the two called back to back without a step between them), so its host times are the
    // capture's, to within the replay's own issue cost.
    EXPECT_LT(std::abs(host.ops[i].rel_error), 0.02) << "op " << host.ops[i].id;
  }
  // The pageable copies differ between the two times by their staging; registered ones hardly.
  EXPECT_GT(host.ops[0].simulated_ns, 2 * device.ops[0].simulated_ns);
  EXPECT_GT(host.ops[2].simulated_ns, 2 * device.ops[2].simulated_ns);
  EXPECT_LT(host.ops[1].simulated_ns, 1.5 * device.ops[1].simulated_ns);
  // The second of the two H2Ds called back to back waited for the first: its host time from its
  // call holds that wait, the time it added to the stream's host timeline does not.
  EXPECT_GT(*t.ops[5].host_duration_ns, 1.5 * host.ops[5].captured_ns);
}

TEST(HostTimingCompare, ATraceWithoutHostTimesComparesNothingInHostTime) {
  st::Trace t = capture();
  const st::ReplayResult r = st::replay_on_sim(t, config(), {});
  for (st::Op& op : t.ops) {
    op.host_start_ns.reset();
    op.host_duration_ns.reset();
  }
  const st::Comparison host = st::compare(t, r, st::Timing::kHost);
  EXPECT_TRUE(host.ops.empty());
  EXPECT_EQ(host.skipped, 6u);
  EXPECT_NE(host.table().find("without a captured host time"), std::string::npos);
  EXPECT_EQ(st::compare(t, r).ops.size(), 6u);
}
