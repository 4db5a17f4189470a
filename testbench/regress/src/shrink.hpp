// Failure triage: a failing program shrunk to the fewest ops that still fail the same way, by delta
// debugging (Zeller and Hildebrandt's ddmin, "Simplifying and Isolating Failure-Inducing Input",
// 2002): try halves, then quarters, ... of the ops and their complements, keep any that still
// fails, and end with a pass that tries to remove each op alone (1-minimal: no single op can go).
//
// A candidate is run only when it is a program the bench can check exactly: runnable
// (check_program) and keeping the hazard rules (check_hazards) - removing a record or a wait can
// leave a read unordered after its write, and such a program fails for a reason of its own.
// Buffers, streams and events stay as declared (removing ops never invalidates an index), and
// syncs are ops like any other, so epochs merge where that keeps the rules.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>

#include "program.hpp"

namespace spyre_dma::regress {

struct ShrinkOptions {
  std::size_t max_runs = 400;                 // candidates run at most
  std::chrono::duration<double> budget{600};  // wall time at most
};

struct ShrinkResult {
  Program program;        // the smallest failing program found (the input when nothing smaller fails)
  std::size_t runs = 0;   // candidates run
  std::size_t skipped = 0;  // candidates not run: they broke a rule of check_program or check_hazards
  bool exhausted = false;   // stopped at max_runs or the budget (the result may not be 1-minimal)
};

// The ops of a program that do something (every op but the syncs).
std::size_t working_ops(const Program& program);

// `still_fails(p)` runs p and says whether it fails as the original did. The original must fail.
ShrinkResult shrink_program(const Program& failing, const std::function<bool(const Program&)>& still_fails,
                            const ShrinkOptions& options = {});

}  // namespace spyre_dma::regress
