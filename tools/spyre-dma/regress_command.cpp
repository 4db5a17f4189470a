#include "regress_command.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <csignal>
#include <signal.h>
#include <limits>
#include <optional>
#include <random>
#include <map>
#include <system_error>

#include "backend.hpp"
#include "digest.hpp"
#include "directed.hpp"
#include "regress_progress.hpp"
#include "regress_triage.hpp"
#include "report.hpp"
#include "soak.hpp"
#include "suites.hpp"
#include "worker_pool.hpp"
#include "spyre_dma/input_file.hpp"
#include "spyre_dma/vfio/client.hpp"
#include "spyre_dma/traces/output_file.hpp"
#include "outputs.hpp"
#include "cli_checks.hpp"

namespace spyre_dma_cli {
namespace {

using namespace spyre_dma::regress;
using Clock = std::chrono::steady_clock;

struct SeedRange {
  std::uint64_t first = 0, last = 0;
};

// "A..B" or "A"; the empty string when fine, else what is wrong.
// SIGINT and SIGTERM during a run: the first stops it (no more tests, workers killed) and the
// results so far are written, marked incomplete; the second ends the process at once.
volatile std::sig_atomic_t g_stop_signal = 0;

extern "C" void on_stop_signal(int sig) {
  if (g_stop_signal != 0) {
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  g_stop_signal = sig;
}

// Installs on_stop_signal for SIGINT and SIGTERM while it lives (no SA_RESTART: a poll or a wait
// returns at once with EINTR).
class StopSignals {
 public:
  StopSignals() {
    g_stop_signal = 0;
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGINT, &sa, &old_int_);
    ::sigaction(SIGTERM, &sa, &old_term_);
  }
  ~StopSignals() {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  int signal() const { return g_stop_signal; }

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

std::string parse_seeds(const std::string& s, SeedRange& r) {
  const auto dots = s.find("..");
  try {
    std::size_t used = 0;
    if (dots == std::string::npos) {
      r.first = r.last = std::stoull(s, &used);
      if (used != s.size()) throw std::invalid_argument(s);
    } else {
      const std::string a = s.substr(0, dots), b = s.substr(dots + 2);
      r.first = std::stoull(a, &used);
      if (used != a.size()) throw std::invalid_argument(a);
      r.last = std::stoull(b, &used);
      if (used != b.size()) throw std::invalid_argument(b);
    }
  } catch (const std::exception&) {
    return "--seeds '" + s + "': expected A..B or A (unsigned integers)";
  }
  if (s.find('-') != std::string::npos) return "--seeds '" + s + "': seeds are unsigned";
  if (r.last < r.first) return "--seeds '" + s + "': the range is empty (B < A)";
  return {};
}

std::string parse_shard(const std::string& s, unsigned& index, unsigned& count) {
  const auto slash = s.find('/');
  try {
    if (slash == std::string::npos) throw std::invalid_argument(s);
    std::size_t used = 0;
    const std::string a = s.substr(0, slash), b = s.substr(slash + 1);
    index = static_cast<unsigned>(std::stoul(a, &used));
    if (used != a.size()) throw std::invalid_argument(a);
    count = static_cast<unsigned>(std::stoul(b, &used));
    if (used != b.size()) throw std::invalid_argument(b);
  } catch (const std::exception&) {
    return "--shard '" + s + "': expected i/N (0 <= i < N)";
  }
  if (count == 0 || index >= count) return "--shard '" + s + "': expected i/N with 0 <= i < N";
  return {};
}

}  // namespace

std::string backend_arguments(const RegressOptions& o) {
  std::string c;
  for (const auto& [key, value] : settings_of(o.backend).values) c += " --" + key + " " + value;
  if (o.cb_timeout_s != kDefaultCbTimeoutS) c += fmt::format(" --cb-timeout {}", o.cb_timeout_s);
  if (o.backend.devices > 1) c += fmt::format(" --devices {}", o.backend.devices);
  return c;
}

namespace {

// --run-id; else the Slurm array's job id (every task of the array shares it); else the run's
// definition (suite, backend and its options, seeds, number of shards, faults, ops): shards of one
// definition, run by hand one after another, share it, and a shard of another does not.
std::string run_id_of(const RegressOptions& o) {
  if (!o.run_id.empty()) return o.run_id;
  if (const char* job = std::getenv("SLURM_ARRAY_JOB_ID"); job && *job) return std::string("slurm-") + job;
  const std::string shards = o.shard.substr(o.shard.find('/') == std::string::npos ? o.shard.size() : o.shard.find('/'));
  const std::string definition = fmt::format("{}|{}{}|{}|{}|{}|{}|{}|{}", o.suite, o.backend.name, backend_arguments(o),
                                             o.seeds, shards, o.fault_rate, o.ops, o.directed_dir, o.kill_server_rate);
  return "run-" + Digest::hex(hash_bytes(definition.data(), definition.size()));
}

std::string repro_command(const RegressOptions& o, std::uint64_t seed) {
  std::string c = fmt::format("spyre-dma regress --suite {} --backend {} --seeds {}..{}", o.suite, o.backend.name, seed, seed);
  c += backend_arguments(o);
  if (o.fault_rate >= 0) c += fmt::format(" --fault-rate {}", o.fault_rate);
  if (o.kill_server_rate > 0) c += fmt::format(" --kill-server-rate {}", o.kill_server_rate);
  if (o.ops > 0) c += fmt::format(" --ops {}", o.ops);
  if (o.corrupt_seed == seed) c += fmt::format(" --corrupt-seed {}", seed);
  if (!o.directed_dir.empty()) c += " --directed-dir " + o.directed_dir;
  return c;
}

// The backends whose device is the model, which injects the faults a program asks for.
bool injects_faults(const std::string& backend) { return backend == "sim" || backend == "rtl"; }

// The coverage bins a run of this suite on this backend can reach.
CoverageContext coverage_context(const RegressOptions& o, const Suite& suite) {
  CoverageContext c;
  c.model = injects_faults(o.backend.name);
  const double rate = o.fault_rate >= 0 ? o.fault_rate : suite.profile.fault_rate;
  c.faults = c.model && (suite.directed || suite.profile.fault_at_cb || rate > 0);
  c.huge_ops = suite.directed || (suite.profile.max_op_bytes > (16ull << 20) && suite.profile.large_fraction > 0);
  c.systemc_path = o.backend.name == "sim";
  c.footprint = suite.directed || suite.profile.footprint_share > 0;
  return c;
}

std::string directed_dir(const RegressOptions& o) { return o.directed_dir.empty() ? SPYRE_DMA_DIRECTED_DIR : o.directed_dir; }

// A test as the options make it: its suite (with --ops and --fault-rate), program and run options.
struct TestPlan {
  Suite suite;
  Program program;
  RunOptions run;
  std::vector<std::string> backends;  // a directed test's: where it applies (empty: everywhere)
};

TestPlan plan_test(const RegressOptions& o, const Suite& base, std::uint64_t seed) {
  TestPlan t;
  t.suite = base;
  if (o.ops > 0) t.suite.profile.ops = o.ops;
  if (o.fault_rate >= 0) t.suite.profile.fault_rate = o.fault_rate;
  t.program = program_for(t.suite, seed, directed_dir(o), &t.backends);
  t.run.cb_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(o.cb_timeout_s * 1000));
  if (o.kill_server_rate > 0 && !t.program.ops.empty()) {
    // Drawn from the seed alone: the same seed kills at the same op on every run.
    std::mt19937_64 draw(seed ^ 0x6b696c6c73657276ull);
    if (static_cast<double>(draw() >> 11) * 0x1p-53 < o.kill_server_rate) {
      t.run.kill_device_at_op = static_cast<std::int64_t>(draw() % t.program.ops.size());
      t.run.kill_device = [](spyre_dma::Device& device) {
        const pid_t server = spyre_dma::vfio::server_pid(device);
        if (server <= 0) throw std::runtime_error("--kill-server-rate: the device has no server process to kill");
        ::kill(server, SIGKILL);
      };
    }
  }
  if (o.corrupt_seed == seed) {
    // The data op nearest the middle of the program gets a byte flipped as it completes.
    const Program& p = t.program;
    std::int64_t best = -1;
    for (std::size_t i = 0; i < p.ops.size(); ++i) {
      const OpType k = p.ops[i].type;
      const bool data = k == OpType::kH2D || k == OpType::kD2H || k == OpType::kD2D || k == OpType::kFill;
      if (data && (best < 0 || std::llabs(static_cast<long long>(i) - static_cast<long long>(p.ops.size() / 2)) <
                                   std::llabs(best - static_cast<long long>(p.ops.size() / 2)))) {
        best = static_cast<std::int64_t>(i);
      }
    }
    t.run.corrupt_op = best;
  }
  return t;
}

// One test, in a worker process: its result as a one-case report.
Report run_one(const RegressOptions& o, const Suite& base, std::uint64_t seed) {
  CaseResult c;
  c.suite = o.suite;
  c.backend = o.backend.name;
  c.seed = seed;
  c.name = fmt::format("seed {}", seed);
  c.repro = repro_command(o, seed);
  Report r;
  r.version = SPYRE_DMA_VERSION;
  r.suite = o.suite, r.backend = o.backend.name;
  try {
    const TestPlan plan = plan_test(o, base, seed);
    const Program& p = plan.program;
    const RunOptions& ro = plan.run;
    const std::vector<std::string>& backends = plan.backends;
    if (plan.suite.directed) c.name = p.name;
    if (!backends.empty() && std::find(backends.begin(), backends.end(), o.backend.name) == backends.end()) {
      c.status = "skip";
      r.cases.push_back(c);
      return r;
    }
    const BackendOptions bo = o.backend;
    if (bo.devices <= 1) {
      const TestResult t = run_program(p, [&](const Program& prog) { return open_test_backend(bo, prog); }, ro);
      c.status = t.passed ? "pass" : "fail";
      c.findings = t.findings;
      c.finding_count = t.finding_count;
      c.metrics = t.metrics;
      c.digest = t.digest;
      r.coverage = t.coverage;
      r.coverage.attribute(o.suite + "/" + o.backend.name, seed);
    } else {
      // The program on every device of one server at once: the test passes when every device's
      // run does; findings name their device, figures and coverage add up.
      const std::vector<TestResult> all = run_program_together(p, open_test_backends(bo, p), ro);
      bool passed = true;
      double sim_ns = 0;  // one server, one clock: its time, not the devices' sum
      Digest rbs, memory;  // the devices' parts, in device order
      TestDigest digest;
      for (std::size_t d = 0; d < all.size(); ++d) {
        const TestResult& t = all[d];
        rbs.add(t.digest.rbs);
        memory.add(t.digest.memory);
        digest.sim_time_ps = std::max(digest.sim_time_ps, t.digest.sim_time_ps);
        passed = passed && t.passed;
        for (Finding f : t.findings) {
          f.message = fmt::format("device {}: {}", d, f.message);
          c.findings.push_back(std::move(f));
        }
        c.finding_count += t.finding_count;
        c.metrics += t.metrics;
        sim_ns = std::max(sim_ns, t.metrics.sim_time_ns);
        r.coverage.merge(t.coverage);
      }
      r.coverage.attribute(o.suite + "/" + o.backend.name, seed);
      c.metrics.sim_time_ns = sim_ns;
      digest.rbs = rbs.value();
      digest.memory = memory.value();
      c.digest = digest;
      c.status = passed ? "pass" : "fail";
    }
  } catch (const std::exception& e) {
    c.status = "fail";
    c.findings.push_back(Finding{FindingKind::kSetup, -1, e.what()});
    c.finding_count = 1;
  }
  r.cases.push_back(std::move(c));
  return r;
}

// --triage: each failing test (the first --triage-max by seed) rerun with its views and shrunk,
// one worker process each (a triage that crashes or hangs loses only itself); the results go into
// the tests' report entries.
void triage_failures(const RegressOptions& o, const Suite& suite, Report& report, const StopSignals& signals) {
  std::vector<CaseResult*> failing;
  for (CaseResult& c : report.cases) {
    if (c.status == "fail" || c.status == "crash" || c.status == "hang") failing.push_back(&c);
  }
  std::sort(failing.begin(), failing.end(), [](const CaseResult* a, const CaseResult* b) { return a->seed < b->seed; });
  if (failing.size() > o.triage_max) failing.resize(o.triage_max);
  if (failing.empty()) return;
  if (o.backend.devices > 1) {
    for (CaseResult* c : failing) c->triage = {{"error", "--triage takes one device at a time (--devices 1)"}};
    return;
  }
  fmt::print(stderr, "triage: {} failing test(s) into {}\n", failing.size(), o.triage);
  WorkerPoolOptions pool;
  pool.jobs = std::min<unsigned>(o.jobs, static_cast<unsigned>(failing.size()));
  pool.timeout = to_timeout(o.triage_timeout_s);
  pool.stop = [&signals] { return signals.signal() != 0; };
  WorkerPoolTasks tasks;
  tasks.task_at = [&](std::size_t k) -> std::optional<std::uint64_t> {
    if (k >= failing.size()) return std::nullopt;
    return failing[k]->seed;
  };
  tasks.work = [&o, &suite](std::uint64_t seed) {
    const TestPlan plan = plan_test(o, suite, seed);
    return triage_test(o, plan.program, plan.run, seed);
  };
  auto attach = [&](std::uint64_t seed, nlohmann::json result) {
    for (CaseResult* c : failing) {
      if (c->seed == seed) c->triage = result;
    }
  };
  tasks.on_result = [&](pid_t, const nlohmann::json& result) { attach(result.at("seed").get<std::uint64_t>(), result); };
  tasks.on_lost = [&](const LostTask& lost) {
    attach(lost.task, {{"error", lost.reason == LostTask::Reason::kTimedOut
                                     ? fmt::format("the triage ran longer than --triage-timeout {} s", o.triage_timeout_s)
                                     : "the triage process " + lost.detail}});
  };
  try {
    run_worker_pool(pool, tasks);
  } catch (const std::system_error& e) {
    for (CaseResult* c : failing) c->triage = {{"error", e.what()}};
  }
}

// What a worker process does: runs one seed's test and returns its one-case report (in a soak,
// with the heap still in use).
void set_worker_side(WorkerPoolTasks& tasks, const RegressOptions& o, const Suite& suite) {
  const bool soak = !o.duration.empty();
  if (soak) tasks.worker_init = prepare_soak_worker;
  tasks.work = [&o, &suite, soak](std::uint64_t seed) {
    nlohmann::json result = run_one(o, suite, seed).to_json();
    if (soak) add_heap_in_use(result);
    return result;
  };
}

// The result of a test that never reported one.
CaseResult lost_case(const RegressOptions& o, const LostTask& lost) {
  const std::uint64_t seed = lost.task;
  CaseResult c;
  c.suite = o.suite, c.backend = o.backend.name, c.seed = seed;
  c.name = fmt::format("seed {}", seed);
  std::string why;
  switch (lost.reason) {
    case LostTask::Reason::kUnreadable:
      c.status = "crash";
      why = "the worker's result could not be read: " + lost.detail;
      break;
    case LostTask::Reason::kEnded:
      c.status = "crash";
      why = "the test process " + lost.detail;
      break;
    case LostTask::Reason::kTimedOut:
      c.status = "hang";
      why = fmt::format("the test ran longer than --timeout {} s and was killed", o.timeout_s);
      break;
  }
  c.findings.push_back(Finding{FindingKind::kCrash, -1, why});
  c.finding_count = 1;
  c.repro = repro_command(o, seed);
  return c;
}

bool write_file(const std::string& path, const std::string& text) {
  try {
    spyre_dma::traces::write_file_atomically(path, text);
    return true;
  } catch (const spyre_dma::traces::OutputError& e) {
    fmt::print(stderr, "spyre-dma: {}\n", e.what());
    return false;
  }
}

bool write_outputs(const Report& r, const std::string& json, const std::string& junit, const std::string& coverage) {
  bool ok = true;
  if (!json.empty()) ok = write_file(json, r.to_json().dump(1) + "\n") && ok;
  if (!junit.empty()) ok = write_file(junit, r.junit()) && ok;
  if (!coverage.empty()) ok = write_file(coverage, r.coverage.table()) && ok;
  return ok;
}

}  // namespace

CLI::App* add_regress_command(CLI::App& app, RegressOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "regress", "Run a regression suite (random or directed tests with scoreboard, invariant, interface and "
                 "protocol checking) on a backend over a range of seeds, in worker processes");
  cmd->add_option("--suite", o.suite, "smoke, nightly, faults or directed (--list describes them)");
  add_backend_options(*cmd, o.backend);
  add_devices_option(*cmd, o.backend);
  cmd->add_option("--seeds", o.seeds, "Seeds A..B (inclusive) or A; default: the suite's range");
  cmd->add_option("--shard", o.shard, "Run only slice i of N of the seeds (i/N, 0-based; seed k of the range goes "
                                      "to shard k mod N)");
  cmd->add_option("--jobs,-j", o.jobs, "Worker processes")->capture_default_str()->check(CLI::Range(1u, 256u));
  cmd->add_option("--json", o.json, "Write the results as JSON (the input of regress-merge)");
  cmd->add_option("--run-id", o.run_id,
                  "The run this shard belongs to, recorded in its JSON: regress-merge refuses shards of different "
                  "runs (default: SLURM_ARRAY_JOB_ID when set, else one made of host, process and time)");
  cmd->add_option("--junit", o.junit, "Write JUnit XML");
  cmd->add_option("--coverage", o.coverage, "Write the coverage table");
  cmd->add_option("--directed-dir", o.directed_dir, "directed suite: the folder of test files");
  cmd->add_option("--timeout", o.timeout_s, "Seconds one test may take before it counts as hung")
      ->capture_default_str()
      ->check(timeout_seconds());
  cmd->add_option("--cb-timeout", o.cb_timeout_s,
                  "Seconds the engine waits for a CB's RB before it fails the op (EngineOptions::cb_timeout)")
      ->capture_default_str()
      ->check(timeout_seconds());
  cmd->add_option("--triage", o.triage,
                  "Folder: each failing test is rerun with its trace and waves (sim, rtl) and shrunk to a minimal "
                  "reproducer (a directed test), and the report links them")
      ->type_name("DIR");
  cmd->add_option("--triage-max", o.triage_max, "Failing tests triaged at most (the first by seed)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1000u));
  cmd->add_option("--triage-timeout", o.triage_timeout_s, "Seconds one test's triage may take")
      ->capture_default_str()
      ->check(timeout_seconds());
  cmd->add_option("--corrupt-seed", o.corrupt_seed,
                  "Self-test: flip one byte of device or host memory behind the engine's back in this seed's test "
                  "(it must fail)");
  cmd->add_option("--kill-server-rate", o.kill_server_rate,
                  "Soak across processes (--backend vfio-user --vfio-serve B): each test's server is killed (SIGKILL) "
                  "at an op drawn from its seed, with this probability; the test then asks every op to end once, done "
                  "or with a typed error")
      ->check(finite_range(0.0, 1.0));
  cmd->add_option("--fault-rate", o.fault_rate, "sim, rtl: faults per TLP (overrides the suite's rate)")
      ->check(finite_range(0.0, 0.5));
  cmd->add_option("--ops", o.ops, "Operations per test (overrides the suite's count)")->check(CLI::Range(1u, 10000000u));
  cmd->add_option("--progress", o.progress, "auto (a bar on a terminal), bar, lines or none")
      ->check(CLI::IsMember({"auto", "bar", "lines", "none"}))
      ->capture_default_str();
  cmd->add_option("--duration", o.duration,
                  "Soak: keep drawing seeds (from the first of --seeds on) until this much time has passed, e.g. "
                  "30m or 1h; reports the invariant counters and every worker's memory from the end of the warm-up "
                  "to its last test");
  cmd->add_option("--warmup", o.warmup,
                  "Soak: time after which each worker's next RSS sample is its baseline (default: a tenth of "
                  "--duration)");
  cmd->add_option("--max-rss-growth", o.max_rss_growth,
                  "Soak: fail when a worker's resident memory grew by more than this many percent after the warm-up")
      ->capture_default_str()
      ->check(finite_range(0.0, 1e6));
  cmd->add_option("--close", o.close,
                  "Coverage closure: after the seeds, keep drawing the next ones, at most N more, while a coverage "
                  "bin this suite and backend can reach is still empty")
      ->type_name("N")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1000000}));
  cmd->add_flag("--list", o.list, "List the suites and exit");
  cmd->add_flag("--dump-program", o.dump_program,
                "Print the first seed's program in the directed-test format and exit (keeps a random test as a "
                "directed one)");
  return cmd;
}

CLI::App* add_merge_command(CLI::App& app, MergeOptions& o) {
  CLI::App* cmd = app.add_subcommand("regress-merge", "Merge the JSON results of regression shards into one report");
  cmd->add_option("inputs", o.inputs, "Shard result files (JSON from regress --json)");
  cmd->add_option("--expect", o.expected,
                  "Result files that must exist; a missing one counts as a failed shard (repeatable)");
  cmd->add_option("--json", o.json, "Write the merged results as JSON");
  cmd->add_option("--junit", o.junit, "Write the merged JUnit XML");
  cmd->add_option("--coverage", o.coverage, "Write the merged coverage table");
  return cmd;
}

int run_regress(const RegressOptions& o) {
  if (o.list) {
    for (const Suite& s : suites()) {
      fmt::print("{:<10} {}{}\n", s.name, s.description,
                 s.directed ? "" : fmt::format(" (seeds {}..{}, {} ops each)", s.first_seed, s.last_seed, s.profile.ops));
    }
    return 0;
  }
  const Suite* suite = find_suite(o.suite);
  if (!suite) {
    std::string names;
    for (const Suite& s : suites()) names += (names.empty() ? "" : ", ") + s.name;
    fmt::print(stderr, "spyre-dma: error: --suite '{}': unknown suite (have: {})\n", o.suite, names);
    return 2;
  }
  if (std::string e = check_backend_options(o.backend); !e.empty()) {
    fmt::print(stderr, "spyre-dma: error: {}\n", e);
    return 2;
  }
  if (o.kill_server_rate > 0) {
    const auto serve = o.backend.extra.find("vfio-serve");
    if (serve == o.backend.extra.end() || serve->second.empty()) {
      fmt::print(stderr, "spyre-dma: error: --kill-server-rate needs a private server per device to kill: "
                         "--backend vfio-user --vfio-serve BACKEND\n");
      return 2;
    }
  }
  if ((suite->needs_faults || o.fault_rate > 0) && !injects_faults(o.backend.name)) {
    fmt::print(stderr,
               "spyre-dma: error: --suite {}{}: its fault injection needs --backend sim or rtl (the model's; {} injects "
               "no faults)\n",
               o.suite, o.fault_rate > 0 ? " --fault-rate" : "", o.backend.name);
    return 2;
  }
  SeedRange range{suite->first_seed, suite->last_seed};
  if (suite->directed) {
    try {
      const auto files = directed_files(directed_dir(o));
      if (files.empty()) {
        fmt::print(stderr, "spyre-dma: error: no directed tests (*.json) in {}\n", directed_dir(o));
        return 2;
      }
      range = {0, files.size() - 1};
    } catch (const std::exception& e) {
      fmt::print(stderr, "spyre-dma: error: {}\n", e.what());
      return 2;
    }
  }
  if (!o.seeds.empty()) {
    if (std::string e = parse_seeds(o.seeds, range); !e.empty()) {
      fmt::print(stderr, "spyre-dma: error: {}\n", e);
      return 2;
    }
  }
  unsigned shard = 0, shards = 1;
  if (!o.shard.empty()) {
    if (std::string e = parse_shard(o.shard, shard, shards); !e.empty()) {
      fmt::print(stderr, "spyre-dma: error: {}\n", e);
      return 2;
    }
  }
  if (!check_outputs("regress", {{"--json", o.json}, {"--junit", o.junit}, {"--coverage", o.coverage}},
                     {directed_dir(o)})) {
    return 2;
  }
  // The heavy fault nightly on refdev would be refused per test; refuse it once here instead.
  if (!injects_faults(o.backend.name) && suite->profile.fault_rate > 0 && o.fault_rate < 0) {
    fmt::print(stderr, "spyre-dma: error: --suite {} injects faults: use --backend sim or rtl, or --fault-rate 0\n",
               o.suite);
    return 2;
  }
  if (o.dump_program) {
    Suite s = *suite;
    if (o.ops > 0) s.profile.ops = o.ops;
    if (o.fault_rate >= 0) s.profile.fault_rate = o.fault_rate;
    try {
      Program p = program_for(s, range.first, directed_dir(o));
      p.name = fmt::format("{}-seed-{}", o.suite, range.first);
      fmt::print("{}", to_directed_json(p, "from: " + repro_command(o, range.first)));
    } catch (const std::exception& e) {
      fmt::print(stderr, "spyre-dma: error: {}\n", e.what());
      return 2;
    }
    return 0;
  }
  std::optional<std::chrono::seconds> duration;
  std::chrono::seconds warmup{0};
  if (!o.warmup.empty() && o.duration.empty()) {
    fmt::print(stderr, "spyre-dma: error: --warmup is for a soak: it needs --duration\n");
    return 2;
  }
  if (!o.duration.empty()) {
    duration = parse_duration(o.duration);
    if (!duration) {
      fmt::print(stderr, "spyre-dma: error: --duration '{}': expected a time such as 90s, 30m, 1h or 1h30m\n",
                 o.duration);
      return 2;
    }
    if (suite->directed) {
      fmt::print(stderr, "spyre-dma: error: --duration: the directed suite has a fixed set of tests\n");
      return 2;
    }
    warmup = *duration / 10;
    if (!o.warmup.empty()) {
      const auto w = parse_duration(o.warmup);
      if (!w || *w >= *duration) {
        fmt::print(stderr, "spyre-dma: error: --warmup '{}': expected a time such as 90s or 3m, shorter than "
                   "--duration {}\n", o.warmup, o.duration);
        return 2;
      }
      warmup = *w;
    }
    // A soak goes on past the suite's default range; an explicit A..B still bounds it.
    if (o.seeds.empty() || o.seeds.find("..") == std::string::npos) range.last = UINT64_MAX - 1;
  }
  // The k-th seed of this shard, or nullopt past the range (seed k of the range goes to shard k mod N).
  // Arithmetic, never a walk: a range may span all 2^64 seeds.
  const std::uint64_t span = range.last - range.first;  // seeds in the range, less one
  const std::uint64_t in_shard = shard > span ? 0 : (span - shard) / shards;  // this shard's, less one
  auto seed_at = [&](std::size_t k) -> std::optional<std::uint64_t> {
    if (shard > span || static_cast<std::uint64_t>(k) > in_shard) return std::nullopt;
    return range.first + shard + static_cast<std::uint64_t>(k) * shards;
  };
  std::size_t seed_count = 0;  // fixed runs only; a soak stops at its deadline instead
  if (!duration && shard <= span) {
    seed_count = in_shard >= std::numeric_limits<std::size_t>::max() ? std::numeric_limits<std::size_t>::max()
                                                                      : static_cast<std::size_t>(in_shard + 1);
  }

  Report report;
  report.version = SPYRE_DMA_VERSION;
  report.suite = o.suite;
  report.backend = o.backend.name;
  report.seeds = fmt::format("{}..{}", range.first, range.last);
  report.shard = o.shard;
  report.run_id = run_id_of(o);
  const auto t0 = Clock::now();
  const auto deadline = duration ? t0 + *duration : Clock::time_point::max();
  // A soak's length in tests is not known ahead, so it reports line by line.
  Progress progress(duration && o.progress != "none" ? "lines" : o.progress, seed_count);
  SoakMonitor soak(t0 + warmup);

  WorkerPoolOptions pool;
  pool.jobs = o.jobs;
  pool.timeout = to_timeout(o.timeout_s);
  WorkerPoolTasks tasks;
  // The k-th test to start, while the seeds are not used up and a soak's time has not run out.
  // Closure: seeds past the range while a hole this run can reach stays empty.
  const CoverageContext reach = coverage_context(o, *suite);
  std::uint64_t closure_seeds = 0;
  tasks.task_at = [&](std::size_t k) -> std::optional<std::uint64_t> {
    if (duration && Clock::now() >= deadline) return std::nullopt;
    if (k < seed_count || o.close == 0) return seed_at(k);
    const std::uint64_t extra = static_cast<std::uint64_t>(k - seed_count);
    if (extra >= o.close || range.last + extra >= UINT64_MAX - 1 || report.coverage.holes(reach).empty()) {
      return std::nullopt;
    }
    closure_seeds = extra + 1;
    return range.last + 1 + extra;
  };
  set_worker_side(tasks, o, *suite);
  tasks.on_result = [&](pid_t worker, const nlohmann::json& result) {
    Report one = Report::from_json(result, "worker");
    for (CaseResult& c : one.cases) {
      progress.done(c);
      report.cases.push_back(std::move(c));
    }
    report.coverage.merge(one.coverage);
    if (duration) soak.sample(worker, result.value(kHeapInUseKey, std::uint64_t{0}));  // between tests
  };
  tasks.on_lost = [&](const LostTask& lost) {
    CaseResult c = lost_case(o, lost);
    progress.done(c);
    report.cases.push_back(std::move(c));
  };
  std::size_t started = 0;  // tests handed out
  const StopSignals signals;
  pool.stop = [&signals] { return signals.signal() != 0; };
  try {
    started = run_worker_pool(pool, tasks);
  } catch (const std::system_error& e) {
    fmt::print(stderr, "spyre-dma: error: {}\n", e.what());
    return 2;
  }
  progress.finish();
  if (!o.triage.empty() && signals.signal() == 0) triage_failures(o, *suite, report, signals);
  if (duration) {
    report.seeds = started == 0 ? "none" : fmt::format("{}..{}", range.first, *seed_at(started - 1));
  } else if (closure_seeds > 0) {
    report.seeds = fmt::format("{}..{}", range.first, range.last + closure_seeds);
  }
  report.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  const int stopped_by = signals.signal();
  if (stopped_by != 0) report.interrupted = stopped_by == SIGINT ? "SIGINT" : "SIGTERM";
  std::sort(report.cases.begin(), report.cases.end(),
            [](const CaseResult& a, const CaseResult& b) { return a.seed < b.seed; });
  fmt::print("{}", report.summary());
  const std::vector<std::string> holes = report.coverage.holes(), fillable = report.coverage.holes(reach);
  fmt::print("coverage: {} of {} bins hit; {}; {} more out of this run's reach{}\n", catalogue().size() - holes.size(),
             catalogue().size(),
             fillable.empty() ? std::string("no hole it could fill")
                              : fmt::format("holes it could fill: {}", fmt::join(fillable, ", ")),
             holes.size() - fillable.size(), o.coverage.empty() ? "" : " (--coverage lists them, and why)");
  if (closure_seeds > 0) {
    fmt::print("closure: {} more seed(s), {}..{}, {}\n", closure_seeds, range.last + 1, range.last + closure_seeds,
               fillable.empty() ? "until every hole it could fill was filled"
                                : fmt::format("up to --close {}", o.close));
  }
  bool memory_ok = true;
  if (duration) {
    fmt::print("{}", soak.summary(report, *duration));
    if (soak.worst_growth_percent() > o.max_rss_growth) {
      memory_ok = false;
      fmt::print("FAIL soak: a worker's resident memory grew by {:.2f}%, more than --max-rss-growth {}\n",
                 soak.worst_growth_percent(), o.max_rss_growth);
    }
  }
  if (!write_outputs(report, o.json, o.junit, o.coverage)) return 2;
  if (duration && !o.json.empty()) {
    // The soak's figures next to the report, so that the report itself stays regress-merge input.
    nlohmann::json j = soak.to_json(report, *duration);
    if (!write_file(o.json + ".soak.json", j.dump(1) + "\n")) return 2;
  }
  if (stopped_by != 0) return 128 + stopped_by;  // as a shell reports a process the signal ended
  return report.failures() == 0 && memory_ok ? 0 : 1;
}

int run_merge(const MergeOptions& o) {
  std::vector<Report> parts;
  std::vector<std::string> part_files;  // the file each of `parts` was read from
  std::vector<std::string> missing;
  std::vector<std::string> inputs = o.inputs;
  for (const std::string& e : o.expected) {
    if (std::find(inputs.begin(), inputs.end(), e) == inputs.end()) inputs.push_back(e);
  }
  if (inputs.empty()) {
    fmt::print(stderr, "spyre-dma: error: regress-merge: no result files given\n");
    return 2;
  }
  if (!check_outputs("regress-merge", {{"--json", o.json}, {"--junit", o.junit}, {"--coverage", o.coverage}}, inputs)) {
    return 2;
  }
  {  // one file given twice, under one name or two (a link, a `..`)
    std::map<std::string, std::string> by_file;
    for (const std::string& path : inputs) {
      const auto [it, fresh] = by_file.emplace(resolved_path(path), path);
      if (!fresh) {
        fmt::print(stderr, "spyre-dma: error: regress-merge: '{}' and '{}' are the same file: merge each shard once\n",
                   it->second, path);
        return 2;
      }
    }
  }
  for (const std::string& path : inputs) {
    std::string text;
    try {
      text = spyre_dma::read_input_file(path);
    } catch (const std::exception& e) {  // unreadable, not a file, above the input limit
      fmt::print(stderr, "spyre-dma: error: {}\n", e.what());
      missing.push_back(path);
      continue;
    }
    if (const std::size_t at = spyre_dma::json_too_deep_at(text); at != std::string_view::npos) {
      fmt::print(stderr, "spyre-dma: error: {}: invalid JSON: {} (at byte {})\n", path,
                 spyre_dma::json_too_deep_message(), at);
      missing.push_back(path);
      continue;
    }
    try {
      parts.push_back(Report::from_json(nlohmann::json::parse(text), path));
      part_files.push_back(path);
    } catch (const nlohmann::json::parse_error& e) {
      fmt::print(stderr, "spyre-dma: error: {}: invalid JSON: {}\n", path, e.what());
      missing.push_back(path);
    } catch (const std::exception& e) {
      fmt::print(stderr, "spyre-dma: error: {}\n", e.what());
      missing.push_back(path);
    }
  }
  if (const std::string conflict = merge_conflicts(parts, part_files, missing.size()); !conflict.empty()) {
    fmt::print(stderr, "spyre-dma: error: regress-merge: {}\n", conflict);
    return 2;
  }
  const Report m = merge_reports(parts, missing);
  fmt::print("{}", m.summary());
  fmt::print("{}", m.coverage.table());
  if (!write_outputs(m, o.json, o.junit, o.coverage)) return 2;
  if (!m.interrupted.empty()) {  // counted so far, not the whole: not a pass
    fmt::print(stderr, "spyre-dma: regress-merge: a shard was interrupted ({}): the merged run is incomplete\n",
               m.interrupted);
    return 1;
  }
  return m.failures() == 0 ? 0 : 1;
}

}  // namespace spyre_dma_cli
