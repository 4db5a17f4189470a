// The consistency rules of a trace, applied record by record, so that the reader can name the
// line of the first offending record and check_trace() the whole trace.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "spyre_dma/traces/trace.hpp"

namespace spyre_dma::traces::detail {

// Device offsets must be flit-aligned, as the engine's copies require.
inline constexpr std::uint64_t kOffsetAlign = 128;

struct CheckFailure {
  std::string field;  // "" when the record is fine
  std::string message;
  explicit operator bool() const noexcept { return !field.empty(); }
};

class TraceChecker {
 public:
  // `devices`: the header's count; every allocation's and op's device must be below it.
  explicit TraceChecker(std::uint32_t devices = 1) : devices_(devices) {}
  CheckFailure add(const Allocation& a);
  CheckFailure add(const Op& op);

 private:
  CheckFailure check_range(const char* field, std::uint32_t device, std::uint64_t alloc, std::uint64_t offset,
                           std::uint64_t bytes) const;
  struct AllocInfo {
    std::uint64_t bytes = 0;
    std::uint32_t device = 0;
  };
  std::uint32_t devices_;
  std::unordered_map<std::uint64_t, AllocInfo> allocs_;  // by id
  std::unordered_set<std::uint64_t> ops_;
  bool any_op_ = false;
  std::uint64_t last_op_ = 0;
};

}  // namespace spyre_dma::traces::detail
