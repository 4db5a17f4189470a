// Failure triage: delta debugging shrinks a failing program to the ops that make it fail, runs
// only programs the bench can check exactly, and stops at its budget. End to end on refdev: a
// device that drops one RB (misbehaviour drop_rb) fails a 200-op program, and the shrinker cuts
// it to at most three ops that still fail the same way.
#include <gtest/gtest.h>

#include <algorithm>

#include "runner.hpp"
#include "shrink.hpp"
#include "spyre_dma/refdev/ref_device.hpp"
#include "suites.hpp"

namespace spyre_dma::regress {
namespace {

bool same_op(const OpSpec& a, const OpSpec& b) {
  return a.type == b.type && a.stream == b.stream && a.host == b.host && a.host_offset == b.host_offset &&
         a.dev == b.dev && a.dev_offset == b.dev_offset && a.src_dev == b.src_dev && a.src_offset == b.src_offset &&
         a.bytes == b.bytes && a.event == b.event;
}

bool contains(const Program& p, const OpSpec& op) {
  return std::any_of(p.ops.begin(), p.ops.end(), [&](const OpSpec& o) { return same_op(o, op); });
}

TEST(Shrink, ASyntheticFailureShrinksToTheOpsThatCauseIt) {
  const Program p = generate(find_suite("smoke")->profile, 7);
  ASSERT_GT(working_ops(p), 100u);
  // "Fails" while two particular data ops are both in it.
  std::vector<OpSpec> culprits;
  for (const OpSpec& op : p.ops) {
    if ((op.type == OpType::kFill || op.type == OpType::kH2D) && culprits.size() < 2 &&
        (culprits.empty() || op.type != culprits.front().type)) {
      culprits.push_back(op);
    }
  }
  ASSERT_EQ(culprits.size(), 2u);
  std::size_t runs = 0;
  const ShrinkResult r = shrink_program(p, [&](const Program& q) {
    ++runs;
    EXPECT_EQ(check_hazards(q), "") << "a program the bench cannot check was run";
    return contains(q, culprits[0]) && contains(q, culprits[1]);
  });
  EXPECT_EQ(working_ops(r.program), 2u);
  EXPECT_TRUE(contains(r.program, culprits[0]) && contains(r.program, culprits[1]));
  EXPECT_EQ(r.program.ops.back().type, OpType::kSync);
  EXPECT_EQ(r.runs, runs);
  EXPECT_FALSE(r.exhausted);
  EXPECT_LT(r.runs, 200u) << "ddmin on 200 ops";
}

TEST(Shrink, StopsAtItsBudget) {
  const Program p = generate(find_suite("smoke")->profile, 8);
  ShrinkOptions o;
  o.max_runs = 5;
  const ShrinkResult r = shrink_program(p, [](const Program&) { return true; }, o);
  EXPECT_LE(r.runs, 5u);
  EXPECT_TRUE(r.exhausted);
  EXPECT_EQ(check_program(r.program), "");
}

TEST(Shrink, ADroppedCompletionShrinksToTheOpsThatReachIt) {
  const Program p = generate(find_suite("smoke")->profile, 3);
  device_core::Misbehave drop;
  drop.kind = device_core::MisbehaveKind::kDropRb;
  drop.at_cb = 40;
  const BackendFactory broken = [&](const Program&) {
    TestBackend b;
    auto d = std::make_shared<refdev::RefDevice>();
    d->set_misbehave(drop);
    b.memory = d.get();
    b.device = d;
    return b;
  };
  RunOptions ro;
  ro.cb_timeout = std::chrono::milliseconds(300);  // a dropped RB with nothing after it times out
  ro.wait_timeout = std::chrono::milliseconds(5000);
  const TestResult first = run_program(p, broken, ro);
  ASSERT_FALSE(first.passed) << "the broken device went unnoticed";
  const FindingKind kind = first.findings.front().kind;
  const ShrinkResult r = shrink_program(p, [&](const Program& q) {
    const TestResult t = run_program(q, broken, ro);
    return std::any_of(t.findings.begin(), t.findings.end(), [&](const Finding& f) { return f.kind == kind; });
  });
  EXPECT_LT(working_ops(r.program), working_ops(p) / 10) << r.runs << " runs";
  EXPECT_FALSE(run_program(r.program, broken, ro).passed);
  drop.kind = device_core::MisbehaveKind::kNone;  // the same program on a sound device passes
  EXPECT_TRUE(run_program(r.program, broken, ro).passed);
}

}  // namespace
}  // namespace spyre_dma::regress
