// Functional coverage: named bins, each counting how often a test exercised one thing worth
// exercising (a size class, a boundary crossing, a direction, a pressure condition, a fault kind,
// an error status), and crosses of them (op kind x size class x host memory, on its queue; fault
// kind x queue, recovered from; stream ordering x event use). The list of bins is fixed
// (catalogue()), so a bin nothing hit shows up as a hole rather than disappearing; counts merge
// across tests, processes and shards by addition, and each bin remembers which suite, backend and
// seeds hit it.
//
// Not every bin can be hit everywhere: a bin says what it needs (fault injection, the model's
// statistics, ops above 16 MiB, the SystemC data path), and a few can be hit by no regression at
// all (each says why; docs/regress.md lists them). holes(context) leaves out what a run in that
// context cannot hit, which is what closure mode (`regress --close`) keeps drawing seeds for.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace spyre_dma::regress {

// What a bin needs of a run to be reachable.
enum BinNeeds : unsigned {
  kNeedsNothing = 0,
  kNeedsFaults = 1u << 0,       // injected faults (a fault suite or --fault-rate, on sim or rtl)
  kNeedsModel = 1u << 1,        // the model's statistics (sim, rtl)
  kNeedsHugeOps = 1u << 2,      // ops above 16 MiB (nightly)
  kNeedsSystemcPath = 1u << 3,  // the SystemC data path (sim): the RTL never poisons its writes
  kNeedsFootprint = 1u << 4,    // tests with ordering by footprint (the footprint suite)
};

struct BinInfo {
  std::string name;
  std::string meaning;
  unsigned needs = kNeedsNothing;
  const char* unreachable = nullptr;  // why no regression can hit it; null: some run can
};
// Every bin, grouped by the prefix before the first dot.
const std::vector<BinInfo>& catalogue();
const BinInfo* find_bin(const std::string& name);

// What a run can reach.
struct CoverageContext {
  bool faults = false, model = false, huge_ops = false, systemc_path = false, footprint = false;
  bool reaches(const BinInfo& b) const;
};

class Coverage {
 public:
  // `bin` must be in the catalogue (a typo would otherwise create a bin that is never a hole).
  void hit(const std::string& bin, std::uint64_t n = 1);
  // Marks every bin this coverage has hit as hit by one test of `label` (suite/backend) and seed.
  void attribute(const std::string& label, std::uint64_t seed);
  void merge(const Coverage& other);
  std::uint64_t count(const std::string& bin) const;
  std::vector<std::string> holes() const;
  // The holes a run in `context` could fill.
  std::vector<std::string> holes(const CoverageContext& context) const;
  const std::map<std::string, std::uint64_t>& bins() const noexcept { return bins_; }

  nlohmann::json to_json() const;  // {bin: count} over the whole catalogue
  // {bin: {"tests": n, "seeds": {label: [first, last]}}} for the bins hit with attribution.
  nlohmann::json sources_json() const;
  // Throws std::invalid_argument naming the bin for an unknown bin or a non-integer count;
  // `sources` may be null (a report without attribution).
  static Coverage from_json(const nlohmann::json& j, const nlohmann::json& sources = nullptr);
  // A table by group: hits per bin, the tests and seeds that hit it, then the holes listed (those
  // no regression can hit apart, with the reason).
  std::string table() const;

 private:
  struct Source {
    std::uint64_t tests = 0;
    std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> seeds;  // label -> [first, last]
  };
  std::map<std::string, std::uint64_t> bins_;
  std::map<std::string, Source> sources_;
};

}  // namespace spyre_dma::regress
