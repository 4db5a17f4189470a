#include "link/protocol_checker.hpp"

namespace spyre_dma::model {

void ProtocolChecker::violate(const std::string& what) {
  ++violations_;
  last_ = what;
  if (strict_) throw ProtocolError("PCIe protocol violation: " + what);
}

void ProtocolChecker::request(pcie::TlpType type, std::uint64_t addr, std::uint64_t len) {
  ++checked_;
  const char* name = type == pcie::TlpType::kMWr ? "MWr" : "MRd";
  if (len == 0) violate(std::string(name) + " of zero length");
  if (addr / pcie::kPageBytes != (addr + len - 1) / pcie::kPageBytes) {
    violate(std::string(name) + " at " + std::to_string(addr) + " of " + std::to_string(len) +
            " bytes crosses a 4 KiB boundary");
  }
  const std::uint32_t limit = type == pcie::TlpType::kMWr ? params_.mps : params_.mrrs;
  if (len > limit) {
    violate(std::string(name) + " of " + std::to_string(len) + " bytes exceeds " +
            (type == pcie::TlpType::kMWr ? "MPS " : "MRRS ") + std::to_string(limit));
  }
}

void ProtocolChecker::completion(std::uint64_t addr, std::uint64_t len) {
  ++checked_;
  if (len > params_.mps) {
    violate("CplD of " + std::to_string(len) + " bytes exceeds MPS " + std::to_string(params_.mps));
  }
  // Completions other than the last of a request end on an RCB boundary.
  (void)addr;
}

void ProtocolChecker::tag_issued(std::uint32_t tag, std::uint64_t at_ps) {
  TagLife& t = tags_[tag];
  if (t.outstanding || at_ps < t.retired) {
    violate("tag " + std::to_string(tag) + " issued at " + std::to_string(at_ps) +
            " ps while outstanding until " + std::to_string(t.retired) + " ps");
  }
  t.outstanding = true;
  t.issued = at_ps;
}

void ProtocolChecker::tag_retired(std::uint32_t tag, std::uint64_t at_ps) {
  TagLife& t = tags_[tag];
  if (!t.outstanding || at_ps < t.issued) {
    violate("tag " + std::to_string(tag) + " retired at " + std::to_string(at_ps) + " ps but not outstanding");
  }
  t.outstanding = false;
  t.retired = at_ps;
}

void ProtocolChecker::credits(std::int64_t in_use, std::int64_t capacity, const char* pool) {
  if (capacity > 0 && (in_use < 0 || in_use > capacity)) {
    violate(std::string(pool) + " credits in use " + std::to_string(in_use) + " outside 0.." +
            std::to_string(capacity));
  }
}

}  // namespace spyre_dma::model
