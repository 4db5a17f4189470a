// The kinds of fault the model can inject (FaultConfig), by the names configuration files and the
// statistics use for them.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace spyre_dma::model {

enum class FaultKind : std::uint8_t {
  kPoisoned,
  kUnsupportedRequest,
  kCompleterAbort,
  kDroppedCompletion,
  kLcrc,
  kIommu,
  kMalformedCb,
  kDeviceReset,
};
inline constexpr std::size_t kNumFaultKinds = 8;

// In enum order: the values of faults.at_cb_fault and the keys of statistics faults.injected.
inline constexpr std::array<std::string_view, kNumFaultKinds> kFaultKindNames = {
    "poisoned", "unsupported_request", "completer_abort", "dropped_completion",
    "lcrc",     "iommu",               "malformed_cb",    "device_reset"};

// faults.at_cb_fault when no deterministic fault is asked for.
inline constexpr std::string_view kNoFault = "none";

inline std::string_view to_string(FaultKind k) noexcept { return kFaultKindNames[static_cast<std::size_t>(k)]; }

inline std::optional<FaultKind> fault_kind_from(std::string_view name) noexcept {
  for (std::size_t i = 0; i < kNumFaultKinds; ++i) {
    if (kFaultKindNames[i] == name) return static_cast<FaultKind>(i);
  }
  return std::nullopt;
}

}  // namespace spyre_dma::model
