// Concurrent traces: the header's groups, their checks, and their narrowing to a part of a trace.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "spyre_dma/traces/concurrent.hpp"
#include "spyre_dma/traces/trace_io.hpp"

namespace {

using namespace spyre_dma::traces;

constexpr std::uint64_t kMiB = 1ull << 20;

// A trace of one device: an H2D and a D2H on two streams, and a lone H2D, with `extra.groups`.
Trace small(const nlohmann::json& groups) {
  Trace t;
  t.allocations.push_back({1, kMiB, 0});
  for (std::uint64_t id = 1; id <= 3; ++id) {
    Op op;
    op.id = id;
    op.stream = id == 2 ? 1 : 0;
    op.kind = id == 2 ? OpKind::kD2H : OpKind::kH2D;
    op.bytes = kMiB;
    op.host = HostMemory::kRegistered;
    (op.kind == OpKind::kH2D ? op.dst_alloc : op.src_alloc) = 1;
    op.duration_ns = 100000;
    t.ops.push_back(op);
  }
  if (!groups.is_null()) t.header.extra["groups"] = groups;
  return t;
}

void expect_group_error(const nlohmann::json& groups, const std::string& field, const std::string& part) {
  try {
    (void)concurrent_groups(small(groups));
    ADD_FAILURE() << "accepted " << groups.dump();
  } catch (const TraceError& e) {
    EXPECT_EQ(e.line(), 1u);
    EXPECT_EQ(e.field(), field) << e.what();
    EXPECT_NE(e.message().find(part), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(ConcurrentGroups, HeaderGroupsAreCheckedNamingKeyAndValue) {
  EXPECT_TRUE(concurrent_groups(small(nullptr)).empty());
  const nlohmann::json good = nlohmann::json::array(
      {{{"label", "h2d+d2h registered (span)"}, {"measure", "span"}, {"first_op", 1}, {"last_op", 2},
        {"spans", {{1, 2}}}}});
  const auto g = concurrent_groups(small(good));
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].spans, (std::vector<std::vector<std::uint64_t>>{{1, 2}}));
  EXPECT_EQ(g[0].to_json(), good[0]);  // written as read

  expect_group_error(nlohmann::json::array({1}), "header.extra.groups[0]", "expected an object");
  expect_group_error(nlohmann::json::object({{"a", 1}}), "header.extra.groups", "expected an array");
  auto bad = good;
  bad[0]["measure"] = "bandwidth";
  expect_group_error(bad, "header.extra.groups[0].measure", "\"bandwidth\"");
  bad = good;
  bad[0]["label"] = "";
  expect_group_error(bad, "header.extra.groups[0].label", "empty");
  bad = good;
  bad[0]["last_op"] = 9;
  expect_group_error(bad, "header.extra.groups[0].last_op", "9 is not an op");
  bad = good;
  bad[0]["first_op"] = -1;
  expect_group_error(bad, "header.extra.groups[0].first_op", "-1");
  bad = good;
  bad[0]["spans"] = {{1, 3}};
  expect_group_error(bad, "header.extra.groups[0].spans[0]", "op 3 is not an op of this group");
  bad = good;
  bad[0]["spans"] = {{1}};
  expect_group_error(bad, "header.extra.groups[0].spans[0]", "at least two");
  bad = good;
  bad[0].erase("spans");
  expect_group_error(bad, "header.extra.groups[0].spans", "missing");
  bad = good;
  bad[0]["colour"] = "red";
  expect_group_error(bad, "header.extra.groups[0].colour", "unknown key");
  bad = good;
  bad.push_back({{"label", "x"}, {"measure", "copy"}, {"first_op", 2}, {"last_op", 3}});
  expect_group_error(bad, "header.extra.groups[1].first_op", "op 2 is in group 0 already");

  Header h;
  EXPECT_FALSE(devices_per_switch(h).has_value());
  h.extra["devices_per_switch"] = 2;
  EXPECT_EQ(devices_per_switch(h), 2u);
  h.extra["devices_per_switch"] = "two";
  try {
    (void)devices_per_switch(h);
    ADD_FAILURE();
  } catch (const TraceError& e) {
    EXPECT_EQ(e.field(), "header.extra.devices_per_switch");
    EXPECT_NE(e.message().find("\"two\""), std::string::npos);
  }
}

// A part of a trace (a calibration's fit copies) keeps the groups of its ops, narrowed to them.
TEST(ConcurrentGroups, NarrowedToTheOpsKept) {
  ConcurrentGroup copy;
  copy.label = "h2d registered (d2h beside)";
  copy.first_op = 1;
  copy.last_op = 3;
  ConcurrentGroup span;
  span.label = "h2d+d2h registered (span)";
  span.measure = GroupMeasure::kSpan;
  span.first_op = 4;
  span.last_op = 7;
  span.spans = {{4, 5}, {6, 7}};
  const auto some = narrow_groups({copy, span}, {2, 3, 4, 5, 7});
  ASSERT_EQ(some.size(), 2u);
  EXPECT_EQ(some[0].first_op, 2u);
  EXPECT_EQ(some[0].last_op, 3u);
  EXPECT_EQ(some[1].first_op, 4u);
  EXPECT_EQ(some[1].last_op, 7u);
  EXPECT_EQ(some[1].spans, (std::vector<std::vector<std::uint64_t>>{{4, 5}}));  // 6 went, and its span
  const auto fewer = narrow_groups({copy, span}, {1, 6});
  ASSERT_EQ(fewer.size(), 1u);  // no span left whole: the span group goes
  EXPECT_EQ(fewer[0].first_op, 1u);
  EXPECT_EQ(fewer[0].last_op, 1u);
}
