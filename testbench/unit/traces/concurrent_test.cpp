// Concurrent traces: the header's groups and their checks, the replay of an imported concurrent
// capture on a simulated server (each group's copies at once, groups one after another,
// deterministically, the model's both-ways mechanisms slowing the measured copy), and compare's
// grouping of concurrent, span and latency points apart from one-way ones.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "spyre_dma/model/sim_config.hpp"
#include "spyre_dma/traces/compare.hpp"
#include "spyre_dma/traces/concurrent.hpp"
#include "spyre_dma/traces/nvbandwidth.hpp"
#include "spyre_dma/traces/replay.hpp"
#include "spyre_dma/traces/trace_io.hpp"

namespace {

using namespace spyre_dma::traces;

constexpr std::uint64_t kMiB = 1ull << 20;

// Two GPUs: one-way H2D and D2H, then each beside the other direction. Figures made up (a Gen5
// host's range).
const std::string kBidirRun = R"json({"nvbandwidth": {"version": "v0.8", "testcases": [
{"name": "host_to_device_memcpy_ce", "status": "Passed", "bandwidth_matrix": [["54.61", "54.58"]]},
{"name": "device_to_host_memcpy_ce", "status": "Passed", "bandwidth_matrix": [["55.02", "54.97"]]},
{"name": "host_to_device_bidirectional_memcpy_ce", "status": "Passed", "bandwidth_matrix": [["43.87", "43.91"]]},
{"name": "device_to_host_bidirectional_memcpy_ce", "status": "Passed", "bandwidth_matrix": [["41.35", "41.20"]]},
{"name": "host_device_latency_sm", "status": "Passed", "bandwidth_matrix": [["802.5", "799.1"]]}
]}})json";

Trace imported(const std::string& file, const std::string& text, std::uint64_t buffer) {
  const std::string path = testing::TempDir() + file;
  std::ofstream(path) << text;
  NvbandwidthReport report;
  return import_nvbandwidth(path, {"", "PCIe Gen4 x16"}, report, buffer);
}

double mean_simulated(const Comparison& c, const std::string& direction) {
  double sum = 0;
  std::size_t n = 0;
  for (const OpComparison& o : c.ops) {
    if (o.direction != direction) continue;
    sum += o.simulated_ns;
    ++n;
  }
  EXPECT_GT(n, 0u) << direction;
  return n ? sum / static_cast<double>(n) : 0;
}

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

// nvbandwidth's bidirectional testcases, imported and replayed on a simulated server of its two
// GPUs: each group's two copies run at once, the groups one after another, the same on every
// run, and a measured copy takes longer beside the other direction than alone: the root port
// carries both directions together at host.root_port_ratio of the link's rate, and without that
// limit (the link alone) the measured D2H keeps its one-way time.
TEST(ConcurrentReplay, MeasuredCopyIsSlowerBesideTheOtherDirectionAndRunsAreIdentical) {
  const Trace t = imported("bidir_run.json", kBidirRun, 2 * kMiB);
  ASSERT_EQ(t.header.devices, 2u);
  // The default configuration (Gen5 x16, TLP fidelity) of one device: the replay raises it to the
  // trace's two, each on a root port of its own.
  const spyre_dma::model::SimConfig config;
  const ReplayResult first = replay_on_sim(t, config, {});
  const ReplayResult second = replay_on_sim(t, config, {});
  ASSERT_TRUE(first.data_ok) << first.data_error;
  ASSERT_EQ(first.ops.size(), t.ops.size());
  EXPECT_EQ(first.total_ns, second.total_ns);
  for (std::size_t i = 0; i < first.ops.size(); ++i) {
    EXPECT_EQ(first.ops[i].id, t.ops[i].id);
    EXPECT_EQ(first.ops[i].start_ns, second.ops[i].start_ns) << t.ops[i].id;
    EXPECT_EQ(first.ops[i].duration_ns, second.ops[i].duration_ns) << t.ops[i].id;
  }

  const std::vector<ConcurrentGroup> groups = concurrent_groups(t);
  ASSERT_EQ(groups.size(), 6u);  // four bidirectional cells, two latency points
  double previous_end = 0;
  for (const ConcurrentGroup& g : groups) {
    // Per (device, stream): the span of its replayed copies.
    std::map<std::pair<std::uint32_t, std::uint32_t>, std::pair<double, double>> span;
    for (std::size_t i = 0; i < t.ops.size(); ++i) {
      if (t.ops[i].id < g.first_op || t.ops[i].id > g.last_op) continue;
      const OpTiming& r = first.ops[i];
      auto [it, fresh] = span.try_emplace({t.ops[i].device, t.ops[i].stream}, r.start_ns, r.start_ns + r.duration_ns);
      it->second.first = std::min(it->second.first, r.start_ns);
      it->second.second = std::max(it->second.second, r.start_ns + r.duration_ns);
    }
    double start = 1e300, end = 0;
    for (const auto& [queue, s] : span) {
      start = std::min(start, s.first);
      end = std::max(end, s.second);
    }
    EXPECT_GE(start, previous_end) << g.source << ": a group starts after the one before has ended";
    previous_end = end;
    if (g.measure == GroupMeasure::kCopy) {
      ASSERT_EQ(span.size(), 2u) << g.source;
      const auto measured = span.begin()->second, beside = std::next(span.begin())->second;
      EXPECT_LT(beside.first, measured.second) << g.source << ": the D2H runs while the H2D does";
      EXPECT_LT(measured.first, beside.second) << g.source;
    }
  }

  const Comparison c = compare(t, first);
  // The root port's limit on both directions together is what slows them: on the link alone (no
  // such limit) each keeps almost its one-way time.
  spyre_dma::model::SimConfig link_only = config;
  link_only.host.root_port_ratio = 0;
  const Comparison unlimited = compare(t, replay_on_sim(t, link_only, {}));
  // Measured with this tree (2 MiB copies, mean time each added to its stream): D2H 38.46 us
  // alone, 46.65 us beside the H2D (+21%), within 5% of alone on the link alone; H2D 38.0 us alone
  // and about 47.5 us beside the D2H (+25%): the root port serves the two directions in turn.
  const double d2h_alone = mean_simulated(c, "d2h registered");
  const double h2d_alone = mean_simulated(c, "h2d registered");
  EXPECT_GT(mean_simulated(c, "d2h registered (h2d beside)"), 1.15 * d2h_alone);
  EXPECT_GT(mean_simulated(c, "h2d registered (d2h beside)"), 1.15 * h2d_alone);
  EXPECT_LT(mean_simulated(unlimited, "d2h registered (h2d beside)"), 1.05 * d2h_alone);
  EXPECT_LT(mean_simulated(unlimited, "h2d registered (d2h beside)"), 1.05 * h2d_alone);
  // Only the measured copies are compared: the copies beside them have no captured duration.
  const std::uint32_t copies = copies_for_size(2 * kMiB);
  EXPECT_EQ(c.ops.size(), 4u * copies + 4u * copies);
  EXPECT_EQ(c.skipped, 4u * copies);
  ASSERT_EQ(c.latency.size(), 2u);
  EXPECT_EQ(c.latency[1].device, 1u);
  EXPECT_EQ(c.latency[1].captured_ns, 799.1);
  EXPECT_GT(c.latency[1].simulated_ns, 0);
}

// compare() on a hand-made replay: one-way, concurrent, span and latency points each where they
// belong, with figures that can be checked by hand.
TEST(ConcurrentCompare, GroupsReportConcurrentSpanAndLatencyPointsApart) {
  Trace t;
  t.header.devices = 2;
  t.header.extra["groups"] = nlohmann::json::array(
      {{{"label", "h2d registered (d2h beside)"}, {"measure", "copy"}, {"first_op", 2}, {"last_op", 3},
        {"note", "measured beside"}},
       {{"label", "h2d+d2h registered (span)"}, {"measure", "span"}, {"first_op", 4}, {"last_op", 5},
        {"spans", {{4, 5}}}},
       {{"label", "h2d registered latency"}, {"measure", "latency"}, {"first_op", 6}, {"last_op", 6},
        {"note", "a load, not a copy"}}});
  for (std::uint32_t d = 0; d < 2; ++d) t.allocations.push_back({d + 1u, 4 * kMiB, 0, d});
  struct Spec {
    std::uint32_t device, stream;
    OpKind kind;
    std::uint64_t bytes;
    std::optional<double> captured;
  };
  const Spec specs[] = {{0, 0, OpKind::kH2D, kMiB, 1000.0},  {1, 0, OpKind::kH2D, kMiB, 2000.0},
                        {1, 1, OpKind::kD2H, 2 * kMiB, {}},  {0, 0, OpKind::kH2D, kMiB, 5000.0},
                        {0, 1, OpKind::kD2H, kMiB, 5000.0},  {1, 0, OpKind::kH2D, 128, 800.0}};
  ReplayResult r;
  const double start[] = {0, 0, 0, 10000, 10500, 20000};
  const double duration[] = {1100, 2200, 3000, 4000, 4000, 600};
  for (std::uint64_t i = 0; i < 6; ++i) {
    Op op;
    op.id = i + 1;
    op.device = specs[i].device;
    op.stream = specs[i].stream;
    op.kind = specs[i].kind;
    op.bytes = specs[i].bytes;
    op.host = HostMemory::kRegistered;
    (op.kind == OpKind::kH2D ? op.dst_alloc : op.src_alloc) = specs[i].device + 1u;
    op.duration_ns = specs[i].captured;
    t.ops.push_back(op);
    r.ops.push_back(OpTiming{op.id, start[i], duration[i], 0, 0});
  }
  ASSERT_EQ(check_trace(t), "");
  const Comparison c = compare(t, r);
  ASSERT_EQ(c.ops.size(), 3u);  // the one-way copy, the measured copy, the span
  EXPECT_EQ(c.ops[0].direction, "h2d registered");
  EXPECT_FALSE(c.ops[0].concurrent);
  EXPECT_NEAR(c.ops[0].rel_error, 0.1, 1e-12);
  EXPECT_EQ(c.ops[1].direction, "h2d registered (d2h beside)");
  EXPECT_TRUE(c.ops[1].concurrent);
  EXPECT_EQ(c.ops[1].device, 1u);
  EXPECT_NEAR(c.ops[1].rel_error, 0.1, 1e-12);
  EXPECT_EQ(c.ops[2].measure, "span");
  EXPECT_EQ(c.ops[2].id, 4u);
  EXPECT_DOUBLE_EQ(c.ops[2].simulated_ns, 4500.0);  // 10000 .. 14500
  EXPECT_NEAR(c.ops[2].rel_error, -0.1, 1e-12);
  ASSERT_EQ(c.latency.size(), 1u);
  EXPECT_DOUBLE_EQ(c.latency[0].simulated_ns, 600.0);
  EXPECT_NEAR(c.latency[0].rel_error, -0.25, 1e-12);
  EXPECT_EQ(c.skipped, 1u);  // the D2H beside, which has no captured duration

  // The summary rows keep one-way and concurrent points apart; latency has its own statistics.
  ASSERT_NE(c.find("all", "all"), nullptr);
  EXPECT_EQ(c.find("all", "all")->ops, 1u);
  ASSERT_NE(c.find("all concurrent", "all"), nullptr);
  EXPECT_EQ(c.find("all concurrent", "all")->ops, 2u);
  EXPECT_EQ(c.find("h2d registered latency", "all"), nullptr);
  ASSERT_FALSE(c.latency_groups.empty());
  EXPECT_EQ(c.latency_groups.front().direction, "h2d registered latency");

  const std::string table = c.table();
  EXPECT_NE(table.find("h2d registered (d2h beside)"), std::string::npos) << table;
  EXPECT_NE(table.find("all concurrent"), std::string::npos) << table;
  EXPECT_NE(table.find("latency points"), std::string::npos) << table;
  EXPECT_NE(table.find("latency: device 1 128 B: captured 800 ns, simulated 600 ns (-25.0%)"), std::string::npos)
      << table;
  EXPECT_NE(table.find("note: h2d registered latency: a load, not a copy"), std::string::npos) << table;

  const nlohmann::json j = c.to_json();
  EXPECT_EQ(j.at("ops").size(), 3u);
  EXPECT_EQ(j.at("ops")[2].at("measure"), "span");
  EXPECT_EQ(j.at("latency").at("ops").size(), 1u);
  EXPECT_EQ(j.at("notes").size(), 2u);
  bool concurrent_row = false;
  for (const auto& g : j.at("groups")) concurrent_row = concurrent_row || g.at("direction") == "all concurrent";
  EXPECT_TRUE(concurrent_row);
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
