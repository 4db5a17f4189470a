// CB admission and the copy command (see cb_work.hpp).
#include "cb_work.hpp"

namespace spyre_dma::cuda::detail {

using device_core::CbWork;

std::optional<std::uint64_t> SegmentedRegion::locate(std::uint64_t addr, std::uint64_t n) const noexcept {
  const std::uint64_t segment = addr / hw::kSegmentBytes, offset = addr % hw::kSegmentBytes;
  if (segment >= hw::kNumSegments || offset > per_segment_ || n > per_segment_ - offset) return std::nullopt;
  return segment * per_segment_ + offset;
}

CbPlan plan_cb(const hw::CbDecodeResult& d, hw::Pipeline queue, std::uint64_t max_cb_bytes,
               const SegmentedRegion& region, device_core::Iommu& iommu) noexcept {
  CbPlan plan;
  if ((plan.rejected = device_core::admit(d, queue, max_cb_bytes))) return plan;
  device_core::CheckedCb checked = device_core::check_work(d.cb, region, &iommu);
  if ((plan.rejected = checked.rejected)) return plan;
  CbWork& w = checked.work;
  CopyCommand& c = plan.command;
  c.bytes = w.bytes;
  c.device_offset = w.device;
  switch (w.kind) {
    case CbWork::Kind::kHostToDevice: c.kind = CopyKind::kHostToDevice; break;
    case CbWork::Kind::kDeviceToHost: c.kind = CopyKind::kDeviceToHost; break;
    case CbWork::Kind::kFill:
      c.kind = CopyKind::kFill;
      c.pattern = w.pattern;
      break;
    case CbWork::Kind::kDeviceCopy:
      c.kind = CopyKind::kDeviceToDevice;
      c.source_offset = w.source;
      break;
    case CbWork::Kind::kCompute:
      plan.compute = true;
      plan.compute_ns = w.compute_ns;
      return plan;
  }
  c.host = w.window.host();
  plan.window = std::move(w.window);
  return plan;
}

}  // namespace spyre_dma::cuda::detail
