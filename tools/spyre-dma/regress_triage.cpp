#include "regress_triage.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "backend.hpp"
#include "directed.hpp"
#include "shrink.hpp"
#include "spyre_dma/traces/output_file.hpp"

namespace spyre_dma_cli {

namespace fs = std::filesystem;
using namespace spyre_dma::regress;

namespace {

bool has_kind(const TestResult& t, FindingKind kind) {
  return std::any_of(t.findings.begin(), t.findings.end(), [&](const Finding& f) { return f.kind == kind; });
}

std::string file_if_written(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && fs::file_size(p, ec) > 0 ? p.string() : std::string();
}

}  // namespace

nlohmann::json triage_test(const RegressOptions& o, const Program& program, const RunOptions& run,
                           std::uint64_t seed) {
  const fs::path folder = fs::path(o.triage) / fmt::format("{}-{}-seed-{}", o.suite, o.backend.name, seed);
  nlohmann::json out = {{"seed", seed}, {"folder", folder.string()}, {"ops", working_ops(program)}};
  try {
    fs::remove_all(folder);  // an earlier triage's files would pass for this one's
    fs::create_directories(folder / "reproducer");
    // The rerun, with its trace (the waves of the whole program would be hundreds of MB: they are
    // written for the reproducer below).
    const bool model = o.backend.name == "sim" || o.backend.name == "rtl";
    BackendOptions traced = o.backend;
    if (model) traced.trace = (folder / "trace.json").string();
    const TestResult first =
        run_program(program, [&](const Program& p) { return open_test_backend(traced, p); }, run);
    if (const std::string f = file_if_written(folder / "trace.json"); !f.empty()) out["trace"] = f;
    if (first.passed) {
      out["error"] = "the rerun passed: the failure did not reproduce in a fresh process";
      return out;
    }
    const FindingKind kind = first.findings.front().kind;
    out["finding"] = to_string(kind);
    if (run.corrupt_op >= 0) {
      out["error"] = "a --corrupt-seed test is not shrunk (the corrupted op is chosen by its place in the program)";
      return out;
    }
    // The fewest ops that still fail with the same kind of finding.
    const BackendOptions plain = o.backend;
    ShrinkOptions so;
    so.budget = std::chrono::duration<double>(o.triage_timeout_s * 0.8);  // the rest: the reruns around it
    const ShrinkResult s = shrink_program(program, [&](const Program& q) {
      return has_kind(run_program(q, [&](const Program& p) { return open_test_backend(plain, p); }, run), kind);
    }, so);
    Program minimal = s.program;
    minimal.name = fmt::format("{}-{}-seed-{}-min", o.suite, o.backend.name, seed);
    const fs::path file = folder / "reproducer" / (minimal.name + ".json");
    const std::string description =
        fmt::format("{} of {} ops of {} seed {} on {}, shrunk by delta debugging ({} runs{}); fails with a {} "
                    "finding",
                    working_ops(minimal), working_ops(program), o.suite, seed, o.backend.name, s.runs,
                    s.exhausted ? ", budget reached" : "", to_string(kind));
    spyre_dma::traces::write_file_atomically(file.string(), to_directed_json(minimal, description, true));
    // The reproducer once more, with its trace and waves (sim: the model's state; rtl: the RTL's
    // signals).
    BackendOptions views = o.backend;
    if (model) views.trace = (folder / "reproducer-trace.json").string();
    if (model) views.wave = (folder / "reproducer-wave.vcd").string();
    if (model) (void)run_program(minimal, [&](const Program& p) { return open_test_backend(views, p); }, run);
    if (const std::string f = file_if_written(folder / "reproducer-trace.json"); !f.empty()) out["reproducer_trace"] = f;
    if (const std::string f = file_if_written(folder / "reproducer-wave.vcd"); !f.empty()) out["wave"] = f;
    out["reproducer"] = file.string();
    out["reproducer_ops"] = working_ops(minimal);
    out["runs"] = s.runs;
    out["complete"] = !s.exhausted;
    out["rerun"] = fmt::format("spyre-dma regress --suite directed --backend {} --directed-dir {}{}", o.backend.name,
                               (folder / "reproducer").string(), backend_arguments(o));
  } catch (const std::exception& e) {
    out["error"] = e.what();
  }
  return out;
}

}  // namespace spyre_dma_cli
