// Capture: a TraceRecorder on a refdev run sees every op, its kind, size, buffers and timestamps.
#include <gtest/gtest.h>

#include <vector>

#include "spyre_dma/engine.hpp"
#include "spyre_dma/refdev/ref_device.hpp"
#include "spyre_dma/traces/recorder.hpp"
#include "spyre_dma/traces/trace_io.hpp"

namespace st = spyre_dma::traces;
using namespace std::chrono_literals;

TEST(Recorder, CapturesARefdevRun) {
  auto recorder = std::make_shared<st::TraceRecorder>();
  spyre_dma::EngineOptions options;
  options.observer = recorder;
  auto engine = spyre_dma::Engine::open(std::make_shared<spyre_dma::refdev::RefDevice>(), options);
  spyre_dma::Stream a = engine->create_stream();
  spyre_dma::Stream b = engine->create_stream();
  spyre_dma::DeviceBuffer buf = engine->allocate(1 << 20);
  spyre_dma::HostBuffer pinned = engine->allocate_host(64 << 10);
  std::vector<std::uint8_t> pageable(64 << 10, 7);
  spyre_dma::Event ev = engine->create_event();

  a.copy_h2d(buf, 0, pageable.data(), pageable.size());
  a.fill(buf, 65536, 4096, 0x01020304);
  a.record(ev);
  b.wait(ev);
  b.copy_d2h(pinned.data(), buf, 0, 65536);
  b.compute(2us);
  ASSERT_TRUE(engine->synchronize(10s).ok());

  const st::Trace t = recorder->trace();
  EXPECT_EQ(st::check_trace(t), "");
  EXPECT_EQ(t.header.source, "capture");
  ASSERT_EQ(t.ops.size(), 6u);
  ASSERT_EQ(t.allocations.size(), 1u);
  EXPECT_EQ(t.allocations[0].bytes, 1u << 20);
  EXPECT_EQ(t.ops[0].kind, st::OpKind::kH2D);
  EXPECT_EQ(t.ops[0].host, st::HostMemory::kPageable);
  EXPECT_EQ(t.ops[0].bytes, 65536u);
  EXPECT_EQ(t.ops[1].kind, st::OpKind::kFill);
  EXPECT_EQ(t.ops[1].pattern, 0x01020304u);
  EXPECT_EQ(t.ops[1].dst_offset, 65536u);
  EXPECT_EQ(t.ops[2].kind, st::OpKind::kEventRecord);
  EXPECT_EQ(t.ops[3].kind, st::OpKind::kEventWait);
  EXPECT_EQ(t.ops[2].event, t.ops[3].event);
  EXPECT_NE(t.ops[2].event, 0u);
  EXPECT_EQ(t.ops[4].kind, st::OpKind::kD2H);
  EXPECT_EQ(t.ops[4].host, st::HostMemory::kRegistered);
  EXPECT_EQ(t.ops[4].stream, 1u);
  EXPECT_EQ(t.ops[0].stream, 0u);
  EXPECT_EQ(t.ops[5].compute_ns, 2000u);
  for (const st::Op& op : t.ops) {
    ASSERT_TRUE(op.issue_ns.has_value());
    EXPECT_GE(*op.issue_ns, 0);
    if (op.kind == st::OpKind::kH2D || op.kind == st::OpKind::kD2H || op.kind == st::OpKind::kFill ||
        op.kind == st::OpKind::kCompute) {
      ASSERT_TRUE(op.start_ns.has_value()) << op.id;
      EXPECT_GT(*op.start_ns, 0) << op.id;
      EXPECT_GT(*op.duration_ns, 0) << op.id;
    }
  }
  EXPECT_GT(*t.ops[5].issue_ns, 0);
  EXPECT_EQ(recorder->ops_failed(), 0u);
}
