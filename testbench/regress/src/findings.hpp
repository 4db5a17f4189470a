// What the checkers of one test found: each finding names its kind (a stable word reports and
// coverage use), the op it concerns and what exactly was wrong.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace spyre_dma::regress {

enum class FindingKind : std::uint8_t {
  // Scoreboard (dmatest-style classification of a byte mismatch).
  kNotCopied,          // the destination still holds what it held before the op
  kCorrupted,          // the destination holds something else than the source
  kOutOfRangeWrite,    // a byte next to the op's destination changed
  kSourceOverwritten,  // the op's source changed while it ran
  kEpochMismatch,      // a byte differs from the shadow at an epoch's full check
  // Engine invariants.
  kLostCompletion,     // an op never completed (or its callback never ran)
  kDuplicateCompletion,
  kOrderViolation,     // FIFO within a stream, event order or a strict-mode barrier broken
  kUnexpectedError,    // an op failed where nothing could make it fail
  kWrongError,         // a directed expectation not met
  kMissedError,        // a fault was injected but no op reported it
  // Engine-device boundary and the model's own checkers.
  kInterface,          // device monitor: tag reuse, buffer reuse while live, ring overrun, ...
  kProtocol,           // the model's PCIe protocol checker counted a violation
  kCrash,              // the test process died or hung (set by the runner's parent)
  kSetup,              // the test could not run (bad program, engine refused to open)
};
const char* to_string(FindingKind kind) noexcept;

struct Finding {
  FindingKind kind = FindingKind::kSetup;
  std::int64_t op = -1;  // index into Program::ops, -1 when not about one op
  std::string message;
};

// Thread-safe: completions report from engine threads. Keeps the first `keep` findings in full
// and counts the rest, so a broken run stays readable and bounded.
class Findings {
 public:
  explicit Findings(std::size_t keep = 32) : keep_(keep) {}
  void add(FindingKind kind, std::int64_t op, std::string message);
  std::vector<Finding> list() const;
  std::uint64_t total() const;
  bool empty() const { return total() == 0; }

 private:
  mutable std::mutex mu_;
  std::size_t keep_;
  std::vector<Finding> kept_;
  std::uint64_t total_ = 0;
};

}  // namespace spyre_dma::regress
