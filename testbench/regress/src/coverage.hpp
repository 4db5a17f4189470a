// Functional coverage: named bins, each counting how often a test exercised one thing worth
// exercising (a size class, a boundary crossing, a direction, a pressure condition, a fault kind,
// an error status). The list of bins is fixed (catalogue()), so a bin nothing hit shows up as a
// hole rather than disappearing; counts merge across tests, processes and shards by addition.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace spyre_dma::regress {

struct BinInfo {
  const char* name;
  const char* meaning;
};
// Every bin, grouped by the prefix before the first dot.
const std::vector<BinInfo>& catalogue();

class Coverage {
 public:
  // `bin` must be in the catalogue (a typo would otherwise create a bin that is never a hole).
  void hit(const std::string& bin, std::uint64_t n = 1);
  void merge(const Coverage& other);
  std::uint64_t count(const std::string& bin) const;
  std::vector<std::string> holes() const;
  const std::map<std::string, std::uint64_t>& bins() const noexcept { return bins_; }

  nlohmann::json to_json() const;  // {bin: count} over the whole catalogue
  // Throws std::invalid_argument naming the bin for an unknown bin or a non-integer count.
  static Coverage from_json(const nlohmann::json& j);
  // A table by group: hits per bin, then the holes listed.
  std::string table() const;

 private:
  std::map<std::string, std::uint64_t> bins_;
};

}  // namespace spyre_dma::regress
