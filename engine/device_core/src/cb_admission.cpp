// CB admission (see cb_admission.hpp).
#include "spyre_dma/device_core/cb_admission.hpp"

namespace spyre_dma::device_core {
namespace {

using hw::CbField;
using hw::ErrorKind;

CheckedCb reject(ErrorKind e, CbField f, std::uint64_t detail) noexcept {
  CheckedCb c;
  c.rejected = CbOutcome::fail(e, f, detail);
  return c;
}

// XLAT, then the physical bounds, of one device range: the located address or the rejection.
struct Range {
  std::optional<CbOutcome> rejected;
  std::uint64_t phys = 0;
  std::uint64_t located = 0;
};
Range device_range(const hw::ControlBlock& cb, hw::DeviceVa va, const hw::DmaSection& s, bool write, CbField field,
                   const DeviceMemoryLayout& memory) noexcept {
  Range r;
  const hw::XlatResult x = hw::translate(cb, va, s.length_flits, write);
  if (x.error != ErrorKind::kNone) {
    r.rejected = CbOutcome::fail(x.error, field, encode_va(va));
    return r;
  }
  r.phys = x.phys_flits * hw::kFlitBytes;
  const std::optional<std::uint64_t> at = memory.locate(r.phys, s.byte_count());
  if (!at) {
    r.rejected = CbOutcome::fail(ErrorKind::kDeviceMemoryFault, field, r.phys);
    return r;
  }
  r.located = *at;
  return r;
}

}  // namespace

std::optional<CbOutcome> admit(const hw::CbDecodeResult& d, hw::Pipeline queue, std::uint64_t max_cb_bytes) noexcept {
  if (d.error) return CbOutcome::fail(ErrorKind::kMalformedCb, d.error->field, d.error->value);
  if (d.pipeline != queue) {
    return CbOutcome::fail(ErrorKind::kMalformedCb, CbField::kPipeline, static_cast<std::uint64_t>(d.pipeline));
  }
  if (d.cb.dmi.type != hw::DmaType::kSkip && d.cb.dmi.byte_count() > max_cb_bytes) {
    return CbOutcome::fail(ErrorKind::kMalformedCb, CbField::kDmiLength, d.cb.dmi.length_flits);
  }
  if (d.cb.dmo.type != hw::DmaType::kSkip && d.cb.dmo.byte_count() > max_cb_bytes) {
    return CbOutcome::fail(ErrorKind::kMalformedCb, CbField::kDmoLength, d.cb.dmo.length_flits);
  }
  return std::nullopt;
}

CheckedCb check_work(const hw::ControlBlock& cb, const DeviceMemoryLayout& memory, Iommu* iommu) noexcept {
  CheckedCb c;
  CbWork& w = c.work;
  const bool to_device = cb.dmi.type != hw::DmaType::kSkip;
  if (!to_device && cb.dmo.type == hw::DmaType::kSkip) {  // compute: takes time, moves nothing
    w.kind = CbWork::Kind::kCompute;
    w.compute_ns = cb.cmpt.type == hw::ComputeType::kTimed ? cb.cmpt.duration_ns : 0;
    return c;
  }
  const hw::DmaSection& s = to_device ? cb.dmi : cb.dmo;
  const Range dev = device_range(cb, s.device, s, to_device,
                                 to_device ? CbField::kDmiDeviceVa : CbField::kDmoDeviceVa, memory);
  if (dev.rejected) return reject(dev.rejected->error, dev.rejected->field, dev.rejected->detail);
  w.bytes = s.byte_count();
  w.device = dev.located;
  w.device_phys = dev.phys;
  switch (s.type) {
    case hw::DmaType::kImmediate: {
      w.kind = to_device ? CbWork::Kind::kHostToDevice : CbWork::Kind::kDeviceToHost;
      w.iova = s.host_iova_flits * hw::kFlitBytes;
      if (iommu) {
        w.window = iommu->translate(w.iova, w.bytes, /*device_writes=*/!to_device);
        if (!w.window) return reject(ErrorKind::kIommuFault, host_iova_field(cb), w.iova);
      }
      break;
    }
    case hw::DmaType::kMemoryFill:
      w.kind = CbWork::Kind::kFill;
      w.pattern = s.fill_pattern;
      break;
    case hw::DmaType::kDeviceCopy: {
      const Range src = device_range(cb, s.source, s, false, CbField::kDmiSource, memory);
      if (src.rejected) return reject(src.rejected->error, src.rejected->field, src.rejected->detail);
      w.kind = CbWork::Kind::kDeviceCopy;
      w.source = src.located;
      w.source_phys = src.phys;
      break;
    }
    case hw::DmaType::kSkip: break;
  }
  return c;
}

hw::CbField host_iova_field(const hw::ControlBlock& cb) noexcept {
  return cb.dmi.type != hw::DmaType::kSkip ? CbField::kDmiHostIova : CbField::kDmoHostIova;
}

std::uint64_t host_iova(const hw::ControlBlock& cb) noexcept {
  if (cb.dmi.type == hw::DmaType::kImmediate) return cb.dmi.host_iova_flits * hw::kFlitBytes;
  if (cb.dmo.type == hw::DmaType::kImmediate) return cb.dmo.host_iova_flits * hw::kFlitBytes;
  return 0;
}

}  // namespace spyre_dma::device_core
