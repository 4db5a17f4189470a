// One CB against device memory and the IOMMU (see cb_executor.hpp).
#include "cb_executor.hpp"

namespace spyre_dma::refdev::detail {

using hw::CbField;
using hw::ErrorKind;

std::optional<Outcome> CbExecutor::admit(const hw::CbDecodeResult& d, hw::Pipeline queue) const noexcept {
  if (d.error) return Outcome::fail(ErrorKind::kMalformedCb, d.error->field, d.error->value);
  if (d.pipeline != queue) {
    return Outcome::fail(ErrorKind::kMalformedCb, CbField::kPipeline,
                         static_cast<std::uint64_t>(d.pipeline));
  }
  if (d.cb.dmi.type != hw::DmaType::kSkip && d.cb.dmi.byte_count() > max_cb_bytes_) {
    return Outcome::fail(ErrorKind::kMalformedCb, CbField::kDmiLength, d.cb.dmi.length_flits);
  }
  if (d.cb.dmo.type != hw::DmaType::kSkip && d.cb.dmo.byte_count() > max_cb_bytes_) {
    return Outcome::fail(ErrorKind::kMalformedCb, CbField::kDmoLength, d.cb.dmo.length_flits);
  }
  return std::nullopt;
}

Outcome CbExecutor::execute(const hw::ControlBlock& cb) {
  if (cb.dmi.type != hw::DmaType::kSkip) return dmi(cb);
  if (cb.dmo.type != hw::DmaType::kSkip) return dmo(cb);
  return Outcome{};  // compute: takes time on the compute unit, moves nothing
}

Outcome CbExecutor::dmi(const hw::ControlBlock& cb) {
  const hw::DmaSection& s = cb.dmi;
  const std::uint64_t n = s.byte_count();
  const hw::XlatResult dst = hw::translate(cb, s.device, s.length_flits, /*write=*/true);
  if (dst.error != ErrorKind::kNone) return Outcome::fail(dst.error, CbField::kDmiDeviceVa, encode_va(s.device));
  const std::uint64_t dst_addr = dst.phys_flits * hw::kFlitBytes;
  if (!memory_.contains(dst_addr, n)) {
    return Outcome::fail(ErrorKind::kDeviceMemoryFault, CbField::kDmiDeviceVa, dst_addr);
  }
  switch (s.type) {
    case hw::DmaType::kImmediate: {
      const std::uint64_t iova = s.host_iova_flits * hw::kFlitBytes;
      Iommu::Window w = iommu_.translate(iova, n, /*device_writes=*/false);
      if (!w) return Outcome::fail(ErrorKind::kIommuFault, CbField::kDmiHostIova, iova);
      memory_.write(dst_addr, w.host(), n);
      break;
    }
    case hw::DmaType::kMemoryFill:
      memory_.fill32(dst_addr, s.fill_pattern, n);
      break;
    case hw::DmaType::kDeviceCopy: {
      const hw::XlatResult src = hw::translate(cb, s.source, s.length_flits, /*write=*/false);
      if (src.error != ErrorKind::kNone) return Outcome::fail(src.error, CbField::kDmiSource, encode_va(s.source));
      const std::uint64_t src_addr = src.phys_flits * hw::kFlitBytes;
      if (!memory_.contains(src_addr, n)) {
        return Outcome::fail(ErrorKind::kDeviceMemoryFault, CbField::kDmiSource, src_addr);
      }
      memory_.copy(dst_addr, src_addr, n);
      break;
    }
    case hw::DmaType::kSkip: break;
  }
  return Outcome{hw::RbStatus::kGood, ErrorKind::kNone, CbField::kNone, 0, n};
}

Outcome CbExecutor::dmo(const hw::ControlBlock& cb) {
  const hw::DmaSection& s = cb.dmo;  // decode admits only kImmediate here
  const std::uint64_t n = s.byte_count();
  const hw::XlatResult src = hw::translate(cb, s.device, s.length_flits, /*write=*/false);
  if (src.error != ErrorKind::kNone) return Outcome::fail(src.error, CbField::kDmoDeviceVa, encode_va(s.device));
  const std::uint64_t src_addr = src.phys_flits * hw::kFlitBytes;
  if (!memory_.contains(src_addr, n)) {
    return Outcome::fail(ErrorKind::kDeviceMemoryFault, CbField::kDmoDeviceVa, src_addr);
  }
  const std::uint64_t iova = s.host_iova_flits * hw::kFlitBytes;
  Iommu::Window w = iommu_.translate(iova, n, /*device_writes=*/true);
  if (!w) return Outcome::fail(ErrorKind::kIommuFault, CbField::kDmoHostIova, iova);
  memory_.read(src_addr, w.host(), n);
  return Outcome{hw::RbStatus::kGood, ErrorKind::kNone, CbField::kNone, 0, n};
}

}  // namespace spyre_dma::refdev::detail
