// `spyre-dma regress`: runs a regression suite on a backend over a range of seeds, in worker
// processes, and writes the summary table, JSON, JUnit XML and coverage.
// `spyre-dma regress-merge`: joins the JSON results of several shards into one report.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend.hpp"

namespace CLI {
class App;
}

namespace spyre_dma_cli {

inline constexpr double kDefaultCbTimeoutS = 20;

struct RegressOptions {
  std::string suite;
  BackendOptions backend;  // --backend and its settings
  std::string seeds;                     // "A..B" or "A"; empty: the suite's default range
  std::string shard;                     // "i/N"; empty: all seeds
  std::string run_id;                    // empty: SLURM_ARRAY_JOB_ID, else made up (see --run-id)
  unsigned jobs = 1;
  std::string json, junit, coverage;     // output files; empty: none
  std::string directed_dir;              // directed suite: folder of test files
  double timeout_s = 600;                // per test, wall clock: longer is a hang
  double cb_timeout_s = kDefaultCbTimeoutS;  // EngineOptions::cb_timeout of every test
  std::string triage;                    // folder: each failing test rerun with views and shrunk
  unsigned triage_max = 3;               // failing tests triaged at most
  double triage_timeout_s = 900;         // per triaged test, wall clock
  std::optional<std::uint64_t> corrupt_seed;  // scoreboard self-test (no in-band "none": every seed may be it)
  double fault_rate = -1;                // override of the suite's rate (< 0: keep)
  double kill_server_rate = 0;           // soak across processes: P(a test's server is killed)
  std::uint32_t ops = 0;                 // override of the suite's op count (0: keep)
  std::string progress = "auto";         // auto, bar, lines, none
  std::string duration;                  // soak: run seeds until this time has passed ("30m")
  double max_rss_growth = 5;             // soak: percent a worker's RSS may grow, warm-up to last test
  std::string warmup;                    // soak: time before the RSS baseline (empty: a tenth of duration)
  std::uint64_t close = 0;               // closure: at most this many seeds past the range, drawn
                                         // while the run can still fill a coverage hole
  bool list = false;                     // print the suites and exit
  bool dump_program = false;             // print the first seed's program as a directed test
};

struct MergeOptions {
  std::vector<std::string> inputs;
  std::vector<std::string> expected;  // result files that must exist (else a failure)
  std::string json, junit, coverage;
};

CLI::App* add_regress_command(CLI::App& app, RegressOptions& options);
CLI::App* add_merge_command(CLI::App& app, MergeOptions& options);

// The backend, its settings and the engine options of a run, as command-line arguments (each
// with a leading space): what a reproduction command needs besides the suite and the seeds.
std::string backend_arguments(const RegressOptions& options);

// 0: every test passed; 1: a test failed; 2: a usage error found at run time.
int run_regress(const RegressOptions& options);
int run_merge(const MergeOptions& options);

}  // namespace spyre_dma_cli
