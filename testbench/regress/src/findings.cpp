#include "findings.hpp"

namespace spyre_dma::regress {

const char* to_string(FindingKind kind) noexcept {
  switch (kind) {
    case FindingKind::kNotCopied: return "not_copied";
    case FindingKind::kCorrupted: return "corrupted";
    case FindingKind::kOutOfRangeWrite: return "out_of_range_write";
    case FindingKind::kSourceOverwritten: return "source_overwritten";
    case FindingKind::kEpochMismatch: return "epoch_mismatch";
    case FindingKind::kLostCompletion: return "lost_completion";
    case FindingKind::kDuplicateCompletion: return "duplicate_completion";
    case FindingKind::kOrderViolation: return "order_violation";
    case FindingKind::kUnexpectedError: return "unexpected_error";
    case FindingKind::kWrongError: return "wrong_error";
    case FindingKind::kMissedError: return "missed_error";
    case FindingKind::kInterface: return "interface";
    case FindingKind::kProtocol: return "protocol";
    case FindingKind::kCrash: return "crash";
    case FindingKind::kSetup: return "setup";
  }
  return "?";
}

void Findings::add(FindingKind kind, std::int64_t op, std::string message) {
  std::lock_guard<std::mutex> g(mu_);
  ++total_;
  if (kept_.size() < keep_) kept_.push_back(Finding{kind, op, std::move(message)});
}

std::vector<Finding> Findings::list() const {
  std::lock_guard<std::mutex> g(mu_);
  return kept_;
}

std::uint64_t Findings::total() const {
  std::lock_guard<std::mutex> g(mu_);
  return total_;
}

}  // namespace spyre_dma::regress
