// The constrained-random stimulus: one Program per (profile, seed), the same on every machine.
//
// Sizes run from one byte to hundreds of MiB, weighted toward small operations and, within each
// class, toward the edges where DMA engines break: multiples of 128 and one byte either side, the
// 4 KiB page, MPS (512) and MRRS (4096) multiples, the engine's CB size, device chunk boundaries.
// Host memory is registered, pageable or unaligned; allocations are single- or multi-chunk;
// streams differ in ordering mode and priority; events tie streams together wherever a read
// depends on another stream's write (and sometimes where nothing does), unless the test runs with
// ordering by footprint (GeneratorProfile::footprint_share). Some seeds shrink the
// rings and the staging pool so that queue-full and staging stalls happen.
#pragma once

#include <cstdint>

#include "program.hpp"

namespace spyre_dma::regress {

struct GeneratorProfile {
  std::uint32_t ops = 300;             // data and compute ops per test (events and syncs come on top)
  std::uint32_t epoch_min = 4;         // ops between two full synchronisations
  std::uint32_t epoch_max = 96;
  std::uint32_t max_streams = 6;
  std::uint64_t max_op_bytes = 8ull << 20;  // nothing larger is drawn
  double large_fraction = 0.01;        // share of ops drawn from the classes above 1 MiB
  // Of the rest: the share of tiny (<= 1 KiB) and of small (<= 64 KiB) ops; the remainder is
  // medium (<= 1 MiB).
  double tiny_share = 0.45;
  double small_share = 0.40;
  // Per-TLP fault rate for the sim backend, spread over the TLP-level fault kinds (the per-CB
  // kinds get a tenth of it). 0: no rate-driven faults.
  double fault_rate = 0;
  // One fault at a chosen CB per test, its kind cycling with the seed.
  bool fault_at_cb = false;
  // The share of tests that run with the engine's ordering by footprint: there a read of another
  // stream's write gets no event (the engine must order it), and the checkers hold the engine to it.
  double footprint_share = 0;
  // The share of streams that propagate failures (FailurePolicy::kPropagate): in a test with
  // faults, the ops behind a failed one fail with kDependencyFailed and move nothing.
  double propagate_share = 0;
};

Program generate(const GeneratorProfile& profile, std::uint64_t seed);

// The fault kinds the model injects at a chosen CB, in the order fault_at_cb cycles through them.
inline constexpr const char* kFaultKinds[] = {
    "poisoned", "unsupported_request", "completer_abort", "dropped_completion",
    "lcrc",     "iommu",               "malformed_cb",    "device_reset",
};

}  // namespace spyre_dma::regress
