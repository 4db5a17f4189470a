// The regression suites: what `spyre-dma regress --suite NAME` runs for each seed.
//
//   smoke     short random programs, no faults: the CI suite (minutes)
//   small     long random programs of small ops (the runner's throughput case)
//   nightly   long random programs with rate-driven fault injection (sim), large transfers
//   faults    one fault of each kind at a chosen CB, cycling with the seed (sim)
//   directed  the directed test files; the seed is the index of a file in the sorted list
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "generator.hpp"
#include "program.hpp"

namespace spyre_dma::regress {

struct Suite {
  std::string name;
  std::string description;
  GeneratorProfile profile;
  std::uint64_t first_seed = 1, last_seed = 1;  // the default seed range
  bool directed = false;
  bool needs_faults = false;  // only backends that inject faults (sim) can run it
};

const std::vector<Suite>& suites();
// The suite of that name, or null.
const Suite* find_suite(const std::string& name);

// One test of a suite: a generated program, or the seed-th directed file of `directed_dir`.
// Throws DirectedError for a directed file that does not load, std::out_of_range for a seed past
// the last directed file.
Program program_for(const Suite& suite, std::uint64_t seed, const std::string& directed_dir,
                    std::vector<std::string>* backends = nullptr);

}  // namespace spyre_dma::regress
