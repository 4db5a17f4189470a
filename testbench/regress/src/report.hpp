// Regression reports: every test's verdict with its findings, figures and reproduction command;
// the merged coverage; and the three ways out - JSON for tools (and for merging shards), JUnit
// XML for CI systems, and a summary table for people.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "coverage.hpp"
#include "findings.hpp"
#include "runner.hpp"

namespace spyre_dma::regress {

struct CaseResult {
  std::string suite, backend;
  std::uint64_t seed = 0;
  std::string name;    // "seed 17", or the directed test's name
  // "pass", "skip" (not for this backend), "fail", "crash" (the process died), "hang" (timed out),
  // "missing" (a shard's result file was never written)
  std::string status;
  std::vector<Finding> findings;
  std::uint64_t finding_count = 0;
  TestMetrics metrics;
  std::string repro;   // one command line that reruns exactly this test
  std::optional<TestDigest> digest;  // none for a test that did not run (skip, crash, hang, missing)
  // `regress --triage`: where the failing test's rerun put its trace, waves and shrunk reproducer
  // ({"seed", "folder", "trace", "reproducer", "reproducer_trace", "wave", "ops", "reproducer_ops",
  // "runs", "complete", "finding", "rerun", "error"}, each where it applies); null when not triaged.
  nlohmann::json triage;
  bool passed() const { return status == "pass" || status == "skip"; }
};

struct Report {
  std::string version;
  std::string suite, backend, seeds, shard;  // as given; "merged" reports join them
  // Which run the report belongs to: the shards of one run share it, so that regress-merge can
  // refuse shards of different runs. Empty in reports written before it existed.
  std::string run_id;
  std::vector<CaseResult> cases;
  Coverage coverage;
  double wall_s = 0;
  // The signal that stopped the run before all its tests ran ("SIGINT"); empty: it ran them all.
  // An interrupted report holds every test that finished, and says so (JSON, JUnit, summary).
  std::string interrupted;

  nlohmann::json to_json() const;
  // Throws std::invalid_argument naming the file and the key that is wrong.
  static Report from_json(const nlohmann::json& j, const std::string& file);
  std::string junit() const;
  std::string summary() const;  // the table; coverage comes separately (coverage.table())
  std::size_t failures() const;
  // The run's determinism digest: every test's (seed, name, status and digest) folded in seed
  // order, so it does not depend on -j, sharding or the order the tests finished in.
  std::uint64_t digest() const;
};

// Joins shard reports; a shard listed in `missing` (its file absent) becomes a failed case.
Report merge_reports(const std::vector<Report>& parts, const std::vector<std::string>& missing);
// Why `parts` (read from `files`, in order; `absent` more were named but not found) cannot be
// merged, or empty, naming the files: shards of different runs; two parts that are the same shard
// (i/N) of a run, or hold the same test (suite, backend, seed: a shard given twice, under two
// names or as a copy, or shards whose seed ranges overlap); shards of one run split differently
// (i/N with different N); fewer inputs than the run's N shards (the merged run would be
// incomplete without saying so).
std::string merge_conflicts(const std::vector<Report>& parts, const std::vector<std::string>& files,
                            std::size_t absent = 0);

}  // namespace spyre_dma::regress
