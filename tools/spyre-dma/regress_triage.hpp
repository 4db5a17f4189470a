// `spyre-dma regress --triage DIR`: after the run, each failing test (up to --triage-max) is taken
// apart in a worker process of its own, so that a person can look at what happened:
//   DIR/<suite>-<backend>-seed-<N>/trace.json       the rerun's Perfetto trace (sim, rtl)
//   DIR/<suite>-<backend>-seed-<N>/reproducer/*.json  the program shrunk by delta debugging to the
//                                                   fewest ops that still fail with the same kind
//                                                   of finding, as a directed test
//   DIR/<suite>-<backend>-seed-<N>/reproducer-trace.json  the reproducer's run: its trace and its
//   DIR/<suite>-<backend>-seed-<N>/reproducer-wave.vcd    waves (sim: the model's state; rtl: the
//                                                         RTL data path's signals)
// The result (the files, the ops before and after, the runs the shrinker took and the command that
// reruns the reproducer) goes into the test's report entry (CaseResult::triage).
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "program.hpp"
#include "regress_command.hpp"
#include "runner.hpp"

namespace spyre_dma_cli {

// Worker: reruns `program` (which failed) with its views, then shrinks it. Never throws: what went
// wrong is the result's "error".
nlohmann::json triage_test(const RegressOptions& options, const spyre_dma::regress::Program& program,
                           const spyre_dma::regress::RunOptions& run, std::uint64_t seed);

}  // namespace spyre_dma_cli
