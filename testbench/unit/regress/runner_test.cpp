// The runner end to end on refdev: a generated program passes with every checker attached, and
// the checkers are not vacuous - a byte flipped behind the engine's back fails the test.
#include <gtest/gtest.h>

#include "runner.hpp"
#include "spyre_dma/refdev/ref_device.hpp"
#include "suites.hpp"

namespace spyre_dma::regress {
namespace {

TestBackend refdev(const Program&) {
  TestBackend b;
  auto d = std::make_shared<refdev::RefDevice>();
  b.memory = d.get();
  b.device = d;
  return b;
}

TEST(Runner, ARandomProgramPassesOnRefdev) {
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    const TestResult r = run_program(generate(find_suite("smoke")->profile, seed), refdev);
    ASSERT_TRUE(r.passed) << "seed " << seed << ": " << r.findings.front().message;
    EXPECT_GT(r.metrics.data_ops, 50u);
    EXPECT_GT(r.metrics.bytes_checked, r.metrics.bytes);
    EXPECT_GT(r.coverage.count("dir.h2d"), 0u);
    EXPECT_GT(r.coverage.count("rb.good"), 0u);
    // The phases are laps of one clock: each took some time and together they are the test's.
    const TestMetrics& m = r.metrics;
    for (double phase : {m.setup_s, m.run_s, m.check_s, m.teardown_s}) EXPECT_GT(phase, 0.0);
    EXPECT_NEAR(m.setup_s + m.run_s + m.check_s + m.teardown_s, m.wall_s, 1e-3);
  }
}

TEST(Runner, ACorruptedByteFailsTheTest) {
  const Program p = generate(find_suite("smoke")->profile, 4);
  std::int64_t op = -1;
  for (std::size_t i = 0; i < p.ops.size() && op < 0; ++i) {
    if (p.ops[i].type == OpType::kH2D) op = static_cast<std::int64_t>(i);
  }
  RunOptions o;
  o.corrupt_op = op;
  const TestResult r = run_program(p, refdev, o);
  ASSERT_FALSE(r.passed);
  EXPECT_EQ(r.findings.front().kind, FindingKind::kCorrupted) << r.findings.front().message;
  EXPECT_EQ(r.findings.front().op, op);
}

TEST(Runner, ABadProgramIsASetupFinding) {
  Program p = generate(find_suite("smoke")->profile, 5);
  p.ops.front().stream = 99;
  const TestResult r = run_program(p, refdev);
  ASSERT_FALSE(r.passed);
  EXPECT_EQ(r.findings.front().kind, FindingKind::kSetup);
  EXPECT_NE(r.findings.front().message.find("stream 99 does not exist"), std::string::npos);
}

TEST(Runner, AFaultPlanOnRefdevIsRefusedByTheBackend) {
  // refdev injects no PCIe faults: the tool's backend factory refuses; here a factory that
  // cannot open gives a setup finding rather than a crash.
  const TestResult r = run_program(generate(find_suite("smoke")->profile, 6),
                                   [](const Program&) -> TestBackend { throw std::invalid_argument("no device"); });
  ASSERT_FALSE(r.passed);
  EXPECT_EQ(r.findings.front().kind, FindingKind::kSetup);
}

}  // namespace
}  // namespace spyre_dma::regress

namespace spyre_dma::regress {
namespace {

TEST(Runner, ADeviceThatStopsAnsweringIsALostCompletion) {
  // refdev told to hang: no CB is answered, so the epoch's waits give up and the runner reports
  // the ops as lost rather than waiting for ever.
  const auto hung = [](const Program&) {
    TestBackend b;
    auto d = std::make_shared<refdev::RefDevice>();
    refdev::RefDeviceFaults f;
    f.hang = true;
    d->set_faults(f);
    b.memory = d.get();
    b.device = d;
    return b;
  };
  RunOptions o;
  o.wait_timeout = std::chrono::milliseconds(200);
  o.cb_timeout = std::chrono::milliseconds(500);  // closing the engine waits this long for the dead CBs
  Program p = generate(find_suite("smoke")->profile, 8);
  p.ops.resize(std::min<std::size_t>(p.ops.size(), 12));
  p.ops.push_back(OpSpec{});  // a final sync
  const TestResult r = run_program(p, hung, o);
  ASSERT_FALSE(r.passed);
  bool lost = false;
  for (const Finding& f : r.findings) lost = lost || f.kind == FindingKind::kLostCompletion;
  EXPECT_TRUE(lost) << r.findings.front().message;
}

}  // namespace
}  // namespace spyre_dma::regress
