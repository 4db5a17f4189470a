#include "suites.hpp"

#include <stdexcept>

#include "directed.hpp"

namespace spyre_dma::regress {

const std::vector<Suite>& suites() {
  static const std::vector<Suite> all = [] {
    std::vector<Suite> s;
    Suite smoke;
    smoke.name = "smoke";
    smoke.description = "short random programs, no faults (CI)";
    smoke.profile.ops = 200;
    smoke.profile.max_op_bytes = 6ull << 20;
    smoke.profile.large_fraction = 0.01;
    smoke.first_seed = 1, smoke.last_seed = 100;
    s.push_back(smoke);

    Suite footprint;
    footprint.name = "footprint";
    footprint.description = "short random programs with ordering by footprint: reads across streams without events";
    footprint.profile = smoke.profile;
    footprint.profile.footprint_share = 1;
    footprint.first_seed = 1, footprint.last_seed = 100;
    s.push_back(footprint);

    Suite small;
    small.name = "small";
    small.description = "long random programs of small ops (three in four of at most 1 KiB, the rest up to 64 KiB)";
    small.profile.ops = 5000;
    small.profile.max_op_bytes = 64ull << 10;
    small.profile.large_fraction = 0;
    small.profile.tiny_share = 0.75;
    small.profile.small_share = 0.25;
    small.profile.epoch_max = 256;
    small.first_seed = 1, small.last_seed = 20;
    s.push_back(small);

    Suite nightly;
    nightly.name = "nightly";
    nightly.description = "long random programs, faults at 1e-4 per TLP on sim, transfers up to 256 MiB";
    nightly.profile.ops = 2000;
    nightly.profile.max_op_bytes = 256ull << 20;
    nightly.profile.large_fraction = 0.002;
    nightly.profile.fault_rate = 1e-4;
    nightly.first_seed = 1, nightly.last_seed = 500;
    s.push_back(nightly);

    Suite faults;
    faults.name = "faults";
    faults.description = "one fault of each kind at a chosen CB (the kind cycles with the seed); half the streams propagate failures";
    faults.profile.ops = 200;
    faults.profile.max_op_bytes = 2ull << 20;
    faults.profile.fault_at_cb = true;
    faults.profile.propagate_share = 0.5;
    faults.first_seed = 0, faults.last_seed = 31;
    faults.needs_faults = true;
    s.push_back(faults);

    Suite directed;
    directed.name = "directed";
    directed.description = "the directed test files (seed = index in the sorted file list)";
    directed.directed = true;
    directed.first_seed = 0, directed.last_seed = 0;  // the file count decides
    s.push_back(directed);
    return s;
  }();
  return all;
}

const Suite* find_suite(const std::string& name) {
  for (const Suite& s : suites()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

Program program_for(const Suite& suite, std::uint64_t seed, const std::string& directed_dir,
                    std::vector<std::string>* backends) {
  if (!suite.directed) return generate(suite.profile, seed);
  const std::vector<std::string> files = directed_files(directed_dir);
  if (seed >= files.size()) {
    throw std::out_of_range("directed suite: seed " + std::to_string(seed) + " is past the last of " +
                            std::to_string(files.size()) + " files in " + directed_dir);
  }
  DirectedTest t = load_directed(files[seed]);
  if (backends) *backends = t.backends;
  t.program.seed = t.seed.value_or(seed);
  return std::move(t.program);
}

}  // namespace spyre_dma::regress
