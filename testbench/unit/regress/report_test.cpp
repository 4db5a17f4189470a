// Coverage bins and reports: merging adds, holes are listed, JSON round-trips (it is what shards
// hand to regress-merge), JUnit marks failures, a missing shard is a failure; the determinism
// digest sees every byte and its place, and a run's digest does not depend on the order its
// tests finished in.
#include <gtest/gtest.h>

#include <algorithm>

#include "coverage.hpp"
#include "digest.hpp"
#include "report.hpp"

namespace spyre_dma::regress {
namespace {

CaseResult a_case(std::uint64_t seed, bool pass) {
  CaseResult c;
  c.suite = "smoke", c.backend = "refdev", c.seed = seed, c.name = "seed " + std::to_string(seed);
  c.status = pass ? "pass" : "fail";
  c.metrics.ops = 10, c.metrics.bytes = 1000, c.metrics.wall_s = 0.5;
  c.metrics.setup_s = 0.25, c.metrics.run_s = 0.125, c.metrics.check_s = 0.0625, c.metrics.teardown_s = 0.0625;
  c.metrics.faults_injected["poisoned"] = 2;
  if (!pass) {
    c.findings.push_back(Finding{FindingKind::kCorrupted, 3, "device buffer 0: 1 of 64 destination byte(s) wrong <&>"});
    c.finding_count = 1;
  }
  c.repro = "spyre-dma regress --suite smoke --backend refdev --seeds " + std::to_string(seed) + ".." + std::to_string(seed);
  return c;
}

TEST(Coverage, UnknownBinsAreRefusedAndHolesListed) {
  Coverage c;
  EXPECT_THROW(c.hit("size.tinny"), std::invalid_argument);
  c.hit("size.tiny", 3);
  Coverage d;
  d.hit("size.tiny");
  d.hit("dir.h2d");
  c.merge(d);
  EXPECT_EQ(c.count("size.tiny"), 4u);
  EXPECT_EQ(c.holes().size(), catalogue().size() - 2);
  EXPECT_NE(c.table().find("size.small"), std::string::npos);
  EXPECT_EQ(Coverage::from_json(c.to_json()).bins(), c.bins());
  EXPECT_THROW(Coverage::from_json(nlohmann::json{{"size.tiny", -1}}), std::invalid_argument);
}

TEST(Coverage, EachBinNamesTheSuitesAndSeedsThatHitIt) {
  Coverage a, b, c;
  a.hit("dir.h2d");
  a.attribute("smoke/sim", 7);
  b.hit("dir.h2d", 2);
  b.hit("xorder.strict.record");
  b.attribute("smoke/sim", 3);
  c.hit("dir.h2d");
  c.attribute("faults/rtl", 12);
  Coverage all;
  for (const Coverage* x : {&a, &b, &c}) all.merge(*x);
  EXPECT_EQ(all.count("dir.h2d"), 4u);
  const nlohmann::json src = all.sources_json();
  EXPECT_EQ(src["dir.h2d"]["tests"], 3);
  EXPECT_EQ(src["dir.h2d"]["seeds"]["smoke/sim"], nlohmann::json({3, 7}));
  EXPECT_EQ(src["dir.h2d"]["seeds"]["faults/rtl"], nlohmann::json({12, 12}));
  EXPECT_EQ(src["xorder.strict.record"]["tests"], 1);
  const Coverage back = Coverage::from_json(all.to_json(), src);
  EXPECT_EQ(back.sources_json(), src);
  const std::string t = all.table();
  EXPECT_NE(t.find("3 test(s): faults/rtl seed 12 smoke/sim seeds 3..7"), std::string::npos) << t;
  EXPECT_NE(t.find("no regression can hit"), std::string::npos);
  EXPECT_NE(t.find("rb.retry: no backend answers Retry"), std::string::npos);
  EXPECT_THROW(Coverage::from_json(all.to_json(), nlohmann::json{{"dir.h2d", {{"tests", 1}, {"seeds", {{"x", {1}}}}}}}),
               std::invalid_argument);
}

TEST(Coverage, HolesInAContextAreThoseItCanFill) {
  Coverage c;
  CoverageContext smoke_refdev;  // no faults, no model, no huge ops
  CoverageContext nightly_sim{true, true, true, true};
  const auto few = c.holes(smoke_refdev), many = c.holes(nightly_sim);
  auto has = [](const std::vector<std::string>& v, const char* bin) {
    return std::find(v.begin(), v.end(), bin) != v.end();
  };
  EXPECT_TRUE(has(few, "dir.h2d"));
  EXPECT_FALSE(has(few, "fault.poisoned"));
  EXPECT_FALSE(has(few, "size.huge"));
  EXPECT_TRUE(has(many, "fault.poisoned"));
  EXPECT_TRUE(has(many, "xfault.pcie_error.dmao"));
  EXPECT_FALSE(has(many, "rb.retry")) << "no run can fill it";
  EXPECT_FALSE(has(many, "xfault.completion_timeout.dmao"));
  CoverageContext nightly_rtl = nightly_sim;
  nightly_rtl.systemc_path = false;
  EXPECT_FALSE(has(c.holes(nightly_rtl), "xfault.pcie_error.dmao")) << "the RTL never poisons its writes";
  for (const BinInfo& b : catalogue()) {
    if (b.unreachable) {
      EXPECT_GT(std::string(b.unreachable).size(), 20u) << b.name << " says why";
    }
  }
}

TEST(Report, JsonRoundTripsAndJunitMarksFailures) {
  Report r;
  r.version = "1", r.suite = "smoke", r.backend = "refdev", r.seeds = "1..2", r.shard = "0/1";
  r.cases = {a_case(1, true), a_case(2, false)};
  r.coverage.hit("dir.d2h", 5);
  const Report back = Report::from_json(r.to_json(), "r.json");
  EXPECT_EQ(back.to_json(), r.to_json());
  EXPECT_EQ(back.failures(), 1u);
  const std::string x = r.junit();
  EXPECT_NE(x.find("tests=\"2\" failures=\"1\""), std::string::npos) << x;
  EXPECT_NE(x.find("<failure type=\"corrupted\""), std::string::npos) << x;
  EXPECT_NE(x.find("&lt;&amp;&gt;"), std::string::npos);  // escaped
  EXPECT_NE(r.summary().find("reproduce: spyre-dma regress --suite smoke --backend refdev --seeds 2..2"), std::string::npos);
  // Time by phase, summed over the tests, and the ops per second of the run phase alone.
  EXPECT_NE(r.summary().find("set-up 0.50 s (50%), run 0.25 s (25%), check 0.12 s (12%), teardown 0.12 s (12%)"),
            std::string::npos) << r.summary();
  EXPECT_NE(r.summary().find("20 ops/s per process, 80 in the run phase"), std::string::npos) << r.summary();
}

TEST(Report, AnInterruptedRunSaysSoEverywhere) {
  Report r;
  r.version = "1", r.suite = "smoke", r.backend = "refdev", r.seeds = "1..100", r.shard = "";
  r.cases = {a_case(1, true), a_case(2, true)};
  EXPECT_EQ(r.to_json().at("complete"), true);
  EXPECT_EQ(r.junit().find("incomplete"), std::string::npos);
  r.interrupted = "SIGINT";
  const nlohmann::json j = r.to_json();
  EXPECT_EQ(j.at("complete"), false);
  EXPECT_EQ(j.at("interrupted"), "SIGINT");
  EXPECT_EQ(Report::from_json(j, "r.json").interrupted, "SIGINT");
  EXPECT_NE(r.junit().find("<property name=\"incomplete\" value=\"interrupted by SIGINT\"/>"), std::string::npos);
  EXPECT_NE(r.summary().find("INCOMPLETE: interrupted by SIGINT"), std::string::npos);
  Report whole;  // a merge with one interrupted shard is incomplete
  whole = merge_reports({r, Report::from_json(r.to_json(), "b.json")}, {});
  EXPECT_EQ(whole.interrupted, "SIGINT");
}

TEST(Report, BadFilesNameTheKey) {
  Report r;
  r.version = "1", r.suite = "s", r.backend = "b", r.seeds = "1..1", r.shard = "";
  r.cases = {a_case(1, true)};
  nlohmann::json j = r.to_json();
  j["tests"][0].erase("status");
  try {
    (void)Report::from_json(j, "shard-3.json");
    FAIL() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "shard-3.json: tests[0].status: missing");
  }
  EXPECT_THROW((void)Report::from_json(nlohmann::json{{"format", "other"}}, "x.json"), std::invalid_argument);
}

TEST(Digest, EveryByteAndEveryBoundaryCounts) {
  std::vector<std::uint8_t> bytes(1000);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::uint8_t>(i * 7);
  Digest whole;
  whole.add(bytes.data(), bytes.size());
  for (std::size_t i : {0u, 31u, 32u, 500u, 999u}) {  // each lane, the tail
    std::vector<std::uint8_t> b = bytes;
    b[i] ^= 1;
    Digest d;
    d.add(b.data(), b.size());
    EXPECT_NE(d.value(), whole.value()) << "byte " << i;
  }
  Digest split;  // the same bytes cut elsewhere
  split.add(bytes.data(), 400);
  split.add(bytes.data() + 400, 600);
  EXPECT_NE(split.value(), whole.value());
  Digest again;
  again.add(bytes.data(), bytes.size());
  EXPECT_EQ(again.value(), whole.value());
  EXPECT_EQ(Digest::hex(0xabcull), "0000000000000abc");
}

TEST(Report, DigestIsInTheJsonAndDoesNotDependOnTestOrder) {
  Report r;
  r.version = "1", r.suite = "faults", r.backend = "sim", r.seeds = "1..3", r.shard = "";
  r.cases = {a_case(1, true), a_case(2, true), a_case(3, false)};
  for (CaseResult& c : r.cases) c.digest = TestDigest{c.seed * 11, c.seed * 13, c.seed * 1000};
  const nlohmann::json j = r.to_json();
  EXPECT_EQ(j.at("digest"), Digest::hex(r.digest()));
  EXPECT_EQ(j.at("tests")[1].at("digest").at("sim_time_ps"), 2000);
  const Report back = Report::from_json(j, "r.json");
  EXPECT_EQ(back.digest(), r.digest());
  Report shuffled = r;  // workers finish in any order
  std::swap(shuffled.cases[0], shuffled.cases[2]);
  EXPECT_EQ(shuffled.digest(), r.digest());
  Report other = r;  // one part of one test differs
  other.cases[1].digest->memory ^= 1;
  EXPECT_NE(other.digest(), r.digest());
  EXPECT_NE(r.summary().find("digest                   " + Digest::hex(r.digest())), std::string::npos);
  // A digest whose parts do not add up is refused, naming the test.
  nlohmann::json bad = j;
  bad["tests"][0]["digest"]["rbs"] = "0000000000000001";
  try {
    (void)Report::from_json(bad, "r.json");
    FAIL() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "r.json: tests[0].digest: \"test\" does not match its parts");
  }
  bad = j;
  bad["tests"][0]["digest"]["memory"] = "xyz";
  EXPECT_THROW((void)Report::from_json(bad, "r.json"), std::invalid_argument);
}

TEST(Report, MergeAddsCoverageAndCountsMissingShards) {
  Report a, b;
  a.suite = b.suite = "smoke", a.backend = b.backend = "sim";
  a.cases = {a_case(1, true)};
  b.cases = {a_case(2, true)};
  a.coverage.hit("dir.h2d");
  b.coverage.hit("dir.h2d", 2);
  const Report m = merge_reports({a, b}, {"out/shard-2.json"});
  EXPECT_EQ(m.cases.size(), 3u);
  EXPECT_EQ(m.failures(), 1u);
  EXPECT_EQ(m.cases.back().status, "missing");
  EXPECT_EQ(m.coverage.count("dir.h2d"), 3u);
}

// Shards carry their identity (run id, i/N): regress-merge refuses what would count tests twice,
// mix runs or leave the run incomplete without saying so, naming the files.
TEST(Report, MergeRefusesShardsOfOtherRunsRepeatedOrMissing) {
  auto shard = [](const char* run, const char* which, std::uint64_t seed) {
    Report r;
    r.suite = "smoke", r.backend = "refdev", r.run_id = run, r.shard = which;
    r.cases = {a_case(seed, true)};
    return r;
  };
  const Report a = shard("run-1", "0/3", 0), b = shard("run-1", "1/3", 1), c = shard("run-1", "2/3", 2);
  const Report again = Report::from_json(a.to_json(), "copy.json");
  EXPECT_EQ(again.run_id, "run-1") << "the identity survives the JSON";
  EXPECT_EQ(merge_conflicts({a, b, c}, {"a", "b", "c"}), "");
  EXPECT_EQ(merge_conflicts({a, b}, {"a", "b"}, 1), "") << "the third named but never written: counted as failed";
  EXPECT_NE(merge_conflicts({a, b}, {"a", "b"}).find("shard(s) 2/3 not among the inputs (2 of 3)"), std::string::npos)
      << merge_conflicts({a, b}, {"a", "b"});
  EXPECT_NE(merge_conflicts({a, shard("run-2", "1/3", 1), c}, {"a", "x", "c"}).find("a is from run run-1 and x from run run-2"),
            std::string::npos);
  Report a_other_seed = shard("run-1", "0/3", 7);
  EXPECT_NE(merge_conflicts({a, a_other_seed, b, c}, {"a", "a2", "b", "c"}).find("a and a2 are both shard 0/3 of run run-1"),
            std::string::npos);
  EXPECT_NE(merge_conflicts({a, shard("run-1", "1/2", 1)}, {"a", "h"}).find("cut the same way"), std::string::npos);
  Report old_a = a, old_b = b, old_c = c;  // reports from before run ids: still merge by their shards
  old_a.run_id = old_b.run_id = old_c.run_id = "";
  EXPECT_EQ(merge_conflicts({old_a, old_b, old_c}, {"a", "b", "c"}), "");
}

}  // namespace
}  // namespace spyre_dma::regress
