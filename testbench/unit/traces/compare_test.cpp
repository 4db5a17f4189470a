// Compare: relative errors, statistics by direction and size class, bounds at the resolution.
#include <gtest/gtest.h>

#include "spyre_dma/traces/compare.hpp"

namespace {

using namespace spyre_dma::traces;

Op copy(std::uint64_t id, std::uint64_t bytes, double captured_ns, HostMemory host = HostMemory::kRegistered) {
  Op op;
  op.id = id;
  op.kind = OpKind::kH2D;
  op.host = host;
  op.bytes = bytes;
  op.dst_alloc = id;
  op.duration_ns = captured_ns;
  return op;
}

TEST(Compare, RelativeErrorsStatisticsAndBounds) {
  Trace t;
  t.header.resolution_ns = 1000;
  ReplayResult r;
  // Four 4 KiB copies captured at 10 us, simulated 9, 10, 11, 13 us.
  const double sim[] = {9e3, 10e3, 11e3, 13e3};
  for (std::uint64_t i = 0; i < 4; ++i) {
    t.ops.push_back(copy(i + 1, 4096, 10e3));
    r.ops.push_back({i + 1, 1e7 * static_cast<double>(i + 1), sim[i], 0, 0});
  }
  // A 256 B copy captured at one tick: a bound.
  t.ops.push_back(copy(5, 256, 1000));
  r.ops.push_back({5, 5e7, 1800, 0, 0});
  // A 32 MiB pageable copy 5% slow; a compute op (never compared).
  t.ops.push_back(copy(6, 32ull << 20, 1e6, HostMemory::kPageable));
  r.ops.push_back({6, 6e7, 1.05e6, 0, 0});
  Op k;
  k.id = 7;
  k.kind = OpKind::kCompute;
  k.compute_ns = 500;
  k.duration_ns = 500;
  t.ops.push_back(k);
  r.ops.push_back({7, 7e7, 500, 0, 0});

  const Comparison c = compare(t, r);
  ASSERT_EQ(c.ops.size(), 6u);
  EXPECT_NEAR(c.ops[0].rel_error, -0.1, 1e-12);
  EXPECT_TRUE(c.ops[4].bound);
  const GroupStats* small = c.find("h2d registered", "<64KiB");
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(small->ops, 4u);
  EXPECT_EQ(small->bounds, 1u);
  EXPECT_NEAR(small->median_abs, 0.1, 1e-12);  // |e| = 0.1, 0, 0.1, 0.3
  EXPECT_NEAR(small->p90_abs, 0.3, 1e-12);
  EXPECT_NEAR(small->bias, 0.05, 1e-12);  // signed -0.1, 0, 0.1, 0.3
  EXPECT_NEAR(small->max_abs, 0.3, 1e-12);
  const GroupStats* big = c.find("h2d pageable", ">=16MiB");
  ASSERT_NE(big, nullptr);
  EXPECT_NEAR(big->bias, 0.05, 1e-12);
  const GroupStats* all = c.find("all", "all");
  ASSERT_NE(all, nullptr);
  EXPECT_EQ(all->ops, 5u);
  const std::string table = c.table();
  EXPECT_NE(table.find("bound: h2d registered 256 B x 1: captured <= 1.00 us, simulated 1.80 us"), std::string::npos) << table;
  const auto j = c.to_json();
  EXPECT_EQ(j["ops"].size(), 6u);
  EXPECT_FALSE(j["ops"][4].contains("rel_error"));
}

TEST(Compare, SizeClasses) {
  EXPECT_STREQ(size_class(65535), "<64KiB");
  EXPECT_STREQ(size_class(65536), "64KiB-1MiB");
  EXPECT_STREQ(size_class(1u << 20), "1MiB-16MiB");
  EXPECT_STREQ(size_class(16u << 20), ">=16MiB");
}

TEST(Compare, OpsWithoutADurationAreSkipped) {
  Trace t;
  t.ops.push_back(copy(1, 4096, 1000));
  t.ops.back().duration_ns.reset();
  ReplayResult r;
  r.ops.push_back({1, 0, 900, 0, 0});
  const Comparison c = compare(t, r);
  EXPECT_TRUE(c.ops.empty());
  EXPECT_EQ(c.skipped, 1u);
}

}  // namespace

namespace {

// compare --top: the ops off the most, worst first, bounds left out, each with its stream and
// captured start; the table says what the sign of an error means.
TEST(CompareWorst, ListsTheOpsOffTheMostWithTheirContext) {
  Trace t;
  Comparison c;
  const double errors[] = {0.05, -0.40, 0.20, 3.0};
  for (std::uint64_t i = 0; i < 4; ++i) {
    Op op;
    op.id = i + 1;
    op.kind = OpKind::kH2D;
    op.bytes = 4096;
    op.stream = static_cast<std::uint32_t>(i % 2);
    op.start_ns = 1000.0 * static_cast<double>(i);
    t.ops.push_back(op);
    OpComparison o;
    o.id = op.id;
    o.direction = "h2d registered";
    o.bytes = op.bytes;
    o.captured_ns = 1000;
    o.simulated_ns = 1000 * (1 + errors[i]);
    o.rel_error = errors[i];
    o.bound = i == 3;  // the largest "error" is a bound: never listed
    c.ops.push_back(o);
  }
  c.groups = group_stats(c.ops);
  const std::string w = c.worst(t, 2);
  EXPECT_NE(w.find("worst 2 of 3 compared ops (device time):"), std::string::npos) << w;
  const std::size_t first = w.find("   1        2 h2d registered"), second = w.find("   2        3 h2d registered");
  ASSERT_NE(first, std::string::npos) << w;
  ASSERT_NE(second, std::string::npos) << w;
  EXPECT_LT(first, second);
  EXPECT_NE(w.find("-40.0%"), std::string::npos) << w;
  EXPECT_EQ(w.find("+300.0%"), std::string::npos) << w;
  EXPECT_EQ(c.worst(t, 0), "");
  EXPECT_NE(c.table().find("> 0, the model is slower"), std::string::npos);
}

}  // namespace
