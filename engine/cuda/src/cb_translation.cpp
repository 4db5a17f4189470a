// CB checks and translation into a CopyCommand (see cb_translation.hpp).
#include "cb_translation.hpp"

namespace spyre_dma::cuda::detail {
namespace {

using hw::CbField;
using hw::ErrorKind;

Translation reject(ErrorKind e, CbField f, std::uint64_t detail) {
  Translation t;
  t.rejected = Rejection{e, f, detail};
  return t;
}

// The engine spreads device memory evenly over the 8 segments (physical address = segment x
// 16 GiB + offset, as on the card); the executor's region holds them back to back, each
// device_bytes / 8 (flit multiple) long. A range must lie within one segment's part.
bool to_region(std::uint64_t addr, std::uint64_t n, std::uint64_t device_bytes, std::uint64_t& region) noexcept {
  const std::uint64_t per_segment = device_bytes / hw::kNumSegments / hw::kFlitBytes * hw::kFlitBytes;
  const std::uint64_t segment = addr / hw::kSegmentBytes, offset = addr % hw::kSegmentBytes;
  if (segment >= hw::kNumSegments || offset > per_segment || n > per_segment - offset) return false;
  region = segment * per_segment + offset;
  return true;
}

}  // namespace

Translation translate_cb(const hw::CbDecodeResult& d, hw::Pipeline queue, std::uint64_t max_cb_bytes,
                         std::uint64_t device_bytes, refdev::Iommu& iommu) noexcept {
  if (d.error) return reject(ErrorKind::kMalformedCb, d.error->field, d.error->value);
  if (d.pipeline != queue) {
    return reject(ErrorKind::kMalformedCb, CbField::kPipeline, static_cast<std::uint64_t>(d.pipeline));
  }
  const hw::ControlBlock& cb = d.cb;
  if (cb.dmi.type != hw::DmaType::kSkip && cb.dmi.byte_count() > max_cb_bytes) {
    return reject(ErrorKind::kMalformedCb, CbField::kDmiLength, cb.dmi.length_flits);
  }
  if (cb.dmo.type != hw::DmaType::kSkip && cb.dmo.byte_count() > max_cb_bytes) {
    return reject(ErrorKind::kMalformedCb, CbField::kDmoLength, cb.dmo.length_flits);
  }

  Translation t;
  if (cb.dmi.type != hw::DmaType::kSkip) {
    const hw::DmaSection& s = cb.dmi;
    const std::uint64_t n = s.byte_count();
    const hw::XlatResult dst = hw::translate(cb, s.device, s.length_flits, /*write=*/true);
    if (dst.error != ErrorKind::kNone) return reject(dst.error, CbField::kDmiDeviceVa, encode_va(s.device));
    const std::uint64_t dst_addr = dst.phys_flits * hw::kFlitBytes;
    if (!to_region(dst_addr, n, device_bytes, t.command.device_offset)) {
      return reject(ErrorKind::kDeviceMemoryFault, CbField::kDmiDeviceVa, dst_addr);
    }
    t.command.bytes = n;
    switch (s.type) {
      case hw::DmaType::kImmediate: {
        const std::uint64_t iova = s.host_iova_flits * hw::kFlitBytes;
        t.window = iommu.translate(iova, n, /*device_writes=*/false);
        if (!t.window) return reject(ErrorKind::kIommuFault, CbField::kDmiHostIova, iova);
        t.command.kind = CopyKind::kHostToDevice;
        t.command.host = t.window.host();
        break;
      }
      case hw::DmaType::kMemoryFill:
        t.command.kind = CopyKind::kFill;
        t.command.pattern = s.fill_pattern;
        break;
      case hw::DmaType::kDeviceCopy: {
        const hw::XlatResult src = hw::translate(cb, s.source, s.length_flits, /*write=*/false);
        if (src.error != ErrorKind::kNone) return reject(src.error, CbField::kDmiSource, encode_va(s.source));
        const std::uint64_t src_addr = src.phys_flits * hw::kFlitBytes;
        if (!to_region(src_addr, n, device_bytes, t.command.source_offset)) {
          return reject(ErrorKind::kDeviceMemoryFault, CbField::kDmiSource, src_addr);
        }
        t.command.kind = CopyKind::kDeviceToDevice;
        break;
      }
      case hw::DmaType::kSkip: break;
    }
    return t;
  }
  if (cb.dmo.type != hw::DmaType::kSkip) {
    const hw::DmaSection& s = cb.dmo;  // decode admits only kImmediate here
    const std::uint64_t n = s.byte_count();
    const hw::XlatResult src = hw::translate(cb, s.device, s.length_flits, /*write=*/false);
    if (src.error != ErrorKind::kNone) return reject(src.error, CbField::kDmoDeviceVa, encode_va(s.device));
    const std::uint64_t src_addr = src.phys_flits * hw::kFlitBytes;
    if (!to_region(src_addr, n, device_bytes, t.command.device_offset)) {
      return reject(ErrorKind::kDeviceMemoryFault, CbField::kDmoDeviceVa, src_addr);
    }
    const std::uint64_t iova = s.host_iova_flits * hw::kFlitBytes;
    t.window = iommu.translate(iova, n, /*device_writes=*/true);
    if (!t.window) return reject(ErrorKind::kIommuFault, CbField::kDmoHostIova, iova);
    t.command.kind = CopyKind::kDeviceToHost;
    t.command.host = t.window.host();
    t.command.bytes = n;
    return t;
  }
  t.compute = true;
  t.compute_ns = cb.cmpt.type == hw::ComputeType::kTimed ? cb.cmpt.duration_ns : 0;
  return t;
}

}  // namespace spyre_dma::cuda::detail
