// Executes one decoded CB against device memory and the IOMMU: the functional heart of the
// reference device, free of threads and registers.
//
// Every check (pipeline, byte count, XLAT, device-memory bounds, IOMMU) happens before any byte
// moves, so a CB that fails touches nothing. The IOMMU window stays open only for the one copy.
#pragma once

#include <cstdint>
#include <optional>

#include "spyre_dma/hw/contract.hpp"
#include "spyre_dma/refdev/iommu.hpp"
#include "spyre_dma/refdev/sparse_memory.hpp"

namespace spyre_dma::refdev::detail {

// What the RB reports about a CB (tag, locator, phase and timestamps come from the pipeline).
struct Outcome {
  hw::RbStatus status = hw::RbStatus::kGood;
  hw::ErrorKind error = hw::ErrorKind::kNone;
  hw::CbField field = hw::CbField::kNone;
  std::uint64_t detail = 0;
  std::uint64_t bytes = 0;

  static Outcome fail(hw::ErrorKind e, hw::CbField f, std::uint64_t d) noexcept {
    return Outcome{hw::RbStatus::kError, e, f, d, 0};
  }
  bool good() const noexcept { return status == hw::RbStatus::kGood; }
};

class CbExecutor {
 public:
  CbExecutor(SparseMemory& memory, Iommu& iommu, std::uint32_t max_cb_bytes) noexcept
      : memory_(memory), iommu_(iommu), max_cb_bytes_(max_cb_bytes) {}

  // The checks that need no translation: a decode error, work for another pipeline, a byte count
  // above max_cb_bytes. nullopt: the CB may execute.
  std::optional<Outcome> admit(const hw::CbDecodeResult& decoded, hw::Pipeline queue) const noexcept;

  // Executes an admitted CB. A compute CB touches nothing (the pipeline sleeps if configured).
  // Throws only what SparseMemory throws when a page cannot be allocated (std::bad_alloc).
  Outcome execute(const hw::ControlBlock& cb);

 private:
  Outcome dmi(const hw::ControlBlock& cb);
  Outcome dmo(const hw::ControlBlock& cb);

  SparseMemory& memory_;
  Iommu& iommu_;
  std::uint32_t max_cb_bytes_;
};

// The device VA as it travels in the CB (segment in bits 29:27, flit offset below).
inline std::uint64_t encode_va(hw::DeviceVa va) noexcept {
  return (std::uint64_t(va.segment) << hw::kSegmentOffsetBits) | va.flit_offset;
}

}  // namespace spyre_dma::refdev::detail
