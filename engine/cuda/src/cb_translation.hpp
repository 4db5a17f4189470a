// CB -> copy command: the checks every device makes before it touches memory (decode, pipeline,
// length, XLAT, device memory bounds, IOMMU), in refdev's order and with refdev's RB fields, and
// the resolved command for the executor.
#pragma once

#include <optional>

#include "spyre_dma/cuda/copy_executor.hpp"
#include "spyre_dma/hw/contract.hpp"
#include "spyre_dma/refdev/iommu.hpp"

namespace spyre_dma::cuda::detail {

struct Rejection {
  hw::ErrorKind error = hw::ErrorKind::kNone;
  hw::CbField field = hw::CbField::kNone;
  std::uint64_t detail = 0;
};

struct Translation {
  std::optional<Rejection> rejected;
  bool compute = false;            // a COMPUTE CB: wait compute_ns, no copy
  std::uint64_t compute_ns = 0;
  CopyCommand command;             // valid when neither rejected nor compute
  refdev::Iommu::Window window;    // pins the host mapping while the copy runs
};

// `device_bytes`: the executor's device memory; `max_cb_bytes`: MAX_CB_BYTES. The command's
// device offsets are into the executor's region (see to_region in cb_translation.cpp).
Translation translate_cb(const hw::CbDecodeResult& decoded, hw::Pipeline queue, std::uint64_t max_cb_bytes,
                         std::uint64_t device_bytes, refdev::Iommu& iommu) noexcept;

// The encoded device VA (segment << 27 | flit offset), as RBs carry it.
inline std::uint64_t encode_va(const hw::DeviceVa& va) noexcept {
  return (std::uint64_t(va.segment) << hw::kSegmentOffsetBits) | va.flit_offset;
}

}  // namespace spyre_dma::cuda::detail
