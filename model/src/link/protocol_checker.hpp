// PCIe rules checked on every TLP the link carries. A violation is a bug in the model (or an
// injected one in a negative test): it is counted and, in strict mode, thrown as ProtocolError.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <stdexcept>
#include <string>

#include "pcie/link_math.hpp"

namespace spyre_dma::model {

class ProtocolError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

class ProtocolChecker {
 public:
  explicit ProtocolChecker(const pcie::LinkParams& params, bool strict = true)
      : params_(params), strict_(strict) {}

  void request(pcie::TlpType type, std::uint64_t addr, std::uint64_t len);  // MWr or MRd
  void completion(std::uint64_t addr, std::uint64_t len);                   // one CplD
  // Tags in simulated time: a tag may be issued again only at or after its previous retirement.
  void tag_issued(std::uint32_t tag, std::uint64_t at_ps);
  void tag_retired(std::uint32_t tag, std::uint64_t at_ps);
  void credits(std::int64_t in_use, std::int64_t capacity, const char* pool);

  std::uint64_t tlps_checked() const noexcept { return checked_; }
  std::uint64_t violations() const noexcept { return violations_; }
  const std::string& last_violation() const noexcept { return last_; }

 private:
  void violate(const std::string& what);
  pcie::LinkParams params_;
  bool strict_;
  struct TagLife {
    std::uint64_t issued = 0;
    std::uint64_t retired = 0;
    bool outstanding = false;
  };
  std::unordered_map<std::uint32_t, TagLife> tags_;
  std::uint64_t checked_ = 0;
  std::uint64_t violations_ = 0;
  std::string last_;
};

}  // namespace spyre_dma::model
