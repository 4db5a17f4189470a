// CB -> copy command: the device core's admission (cb_admission.hpp) over this backend's device
// memory layout, and the resolved command for the executor.
#pragma once

#include <optional>

#include "spyre_dma/cuda/copy_executor.hpp"
#include "spyre_dma/device_core/cb_admission.hpp"

namespace spyre_dma::cuda::detail {

// Device memory as the executor holds it: the engine spreads device memory evenly over the 8
// segments (physical address = segment x 16 GiB + offset, as on the card); the executor's region
// holds them back to back, each device_bytes / 8 (a flit multiple) long. A range must lie within
// one segment's part.
class SegmentedRegion final : public device_core::DeviceMemoryLayout {
 public:
  explicit SegmentedRegion(std::uint64_t device_bytes) noexcept
      : per_segment_(device_bytes / hw::kNumSegments / hw::kFlitBytes * hw::kFlitBytes) {}
  std::optional<std::uint64_t> locate(std::uint64_t phys, std::uint64_t bytes) const noexcept override;

 private:
  std::uint64_t per_segment_;
};

// What the worker does with one fetched CB: an Error RB, a compute wait, or a copy.
struct CbPlan {
  std::optional<device_core::CbOutcome> rejected;
  bool compute = false;  // a COMPUTE CB: wait compute_ns, no copy
  std::uint64_t compute_ns = 0;
  CopyCommand command;              // valid when neither rejected nor compute
  device_core::Iommu::Window window;  // pins the host mapping while the copy runs
};

// Admission of a decoded CB fetched from `queue`, then its command.
CbPlan plan_cb(const hw::CbDecodeResult& decoded, hw::Pipeline queue, std::uint64_t max_cb_bytes,
               const SegmentedRegion& region, device_core::Iommu& iommu) noexcept;

}  // namespace spyre_dma::cuda::detail
