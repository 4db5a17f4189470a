// Encoders, decoders and validation of the hardware contract (see spyre_dma/hw/contract.hpp).
#include "spyre_dma/hw/contract.hpp"

#include <cstring>

namespace spyre_dma::hw {
namespace {

constexpr std::uint64_t mask(unsigned bits) { return bits >= 64 ? ~0ull : (1ull << bits) - 1; }
constexpr std::uint64_t field(std::uint64_t word, unsigned lo, unsigned bits) {
  return (word >> lo) & mask(bits);
}
constexpr std::uint64_t place(std::uint64_t value, unsigned lo, unsigned bits) {
  return (value & mask(bits)) << lo;
}

// Bit positions, in one place so that encoder and decoder cannot drift apart.
namespace ctrl {
constexpr unsigned kFormatLo = 0, kFormatBits = 8;
constexpr unsigned kTagLo = 8, kTagBits = 24;
constexpr unsigned kBarrierBit = 32, kIrqBit = 33;
constexpr std::uint64_t kUsed = mask(34);
}  // namespace ctrl
namespace dma {
constexpr unsigned kTypeLo = 0, kTypeBits = 4;
constexpr unsigned kLengthLo = 8, kLengthBits = 24;
constexpr unsigned kVaLo = 32, kVaBits = 30;
constexpr std::uint64_t kWord0Used = place(~0ull, kTypeLo, kTypeBits) |
                                     place(~0ull, kLengthLo, kLengthBits) |
                                     place(~0ull, kVaLo, kVaBits);
constexpr unsigned kIovaLo = 0, kIovaBits = kIovaFlitBits;
constexpr unsigned kPatternLo = 0, kPatternBits = 32;
constexpr unsigned kSourceLo = 0, kSourceBits = 30;
constexpr unsigned kLastLo = 57, kLastBits = 7;
}  // namespace dma
namespace xl {
constexpr unsigned kModeLo = 0, kModeBits = 2;
constexpr unsigned kLengthLo = 2, kLengthBits = 28;
constexpr unsigned kBaseLo = 30, kBaseBits = 34;
}  // namespace xl
namespace rbw {
constexpr unsigned kTagLo = 0, kTagBits = 24;
constexpr unsigned kStatusLo = 24, kStatusBits = 4;
constexpr unsigned kLocatorLo = 28, kLocatorBits = 4;
constexpr unsigned kPhaseBit = 32;
constexpr unsigned kFormatLo = 40, kFormatBits = 8;
constexpr std::uint64_t kUsed = mask(33) | place(~0ull, kFormatLo, kFormatBits);
constexpr unsigned kErrorLo = 0, kErrorBits = 16;
constexpr unsigned kFieldLo = 16, kFieldBits = 16;
}  // namespace rbw

std::uint64_t encode_va(DeviceVa va) {
  return place(va.segment, kSegmentOffsetBits, kSegmentBits) |
         place(va.flit_offset, 0, kSegmentOffsetBits);
}
DeviceVa decode_va(std::uint64_t raw) {
  return DeviceVa{static_cast<std::uint8_t>(field(raw, kSegmentOffsetBits, kSegmentBits)),
                  static_cast<std::uint32_t>(field(raw, 0, kSegmentOffsetBits))};
}

inline void encode_dma(std::uint8_t* out, const DmaSection& s) {
  std::uint64_t w0 = 0, w1 = 0;
  if (s.type != DmaType::kSkip) {
    w0 = place(static_cast<std::uint64_t>(s.type), dma::kTypeLo, dma::kTypeBits) |
         place(s.length_flits, dma::kLengthLo, dma::kLengthBits) |
         place(encode_va(s.device), dma::kVaLo, dma::kVaBits);
    switch (s.type) {
      case DmaType::kImmediate: w1 = place(s.host_iova_flits, dma::kIovaLo, dma::kIovaBits); break;
      case DmaType::kMemoryFill: w1 = place(s.fill_pattern, dma::kPatternLo, dma::kPatternBits); break;
      case DmaType::kDeviceCopy: w1 = place(encode_va(s.source), dma::kSourceLo, dma::kSourceBits); break;
      default: w1 = place(s.host_iova_flits, dma::kIovaLo, dma::kIovaBits); break;
    }
    w1 |= place(s.last_flit_bytes, dma::kLastLo, dma::kLastBits);
  }
  store_le64(out, w0);
  store_le64(out + 8, w1);
}

struct SectionFields {
  CbField type, length, va, host, reserved, source;
};
constexpr SectionFields kDmiFields{CbField::kDmiType, CbField::kDmiLength, CbField::kDmiDeviceVa,
                                   CbField::kDmiHostIova, CbField::kDmiReserved,
                                   CbField::kDmiSource};
constexpr SectionFields kDmoFields{CbField::kDmoType, CbField::kDmoLength, CbField::kDmoDeviceVa,
                                   CbField::kDmoHostIova, CbField::kDmoReserved,
                                   CbField::kDmoReserved};

std::optional<CbDecodeError> decode_dma(const std::uint8_t* in, bool is_dmi, DmaSection& s) {
  const SectionFields& f = is_dmi ? kDmiFields : kDmoFields;
  const std::uint64_t w0 = load_le64(in), w1 = load_le64(in + 8);
  const std::uint64_t type = field(w0, dma::kTypeLo, dma::kTypeBits);
  s = DmaSection{};
  if (type == static_cast<std::uint64_t>(DmaType::kSkip)) {
    if (w0 != 0 || w1 != 0) return CbDecodeError{f.reserved, w0 != 0 ? w0 : w1};
    return std::nullopt;
  }
  const bool dmi_only = type == static_cast<std::uint64_t>(DmaType::kMemoryFill) ||
                        type == static_cast<std::uint64_t>(DmaType::kDeviceCopy);
  if (type > static_cast<std::uint64_t>(DmaType::kDeviceCopy) || (dmi_only && !is_dmi)) {
    return CbDecodeError{f.type, type};
  }
  if (w0 & ~dma::kWord0Used) return CbDecodeError{f.reserved, w0};
  s.type = static_cast<DmaType>(type);
  s.length_flits = static_cast<std::uint32_t>(field(w0, dma::kLengthLo, dma::kLengthBits));
  s.device = decode_va(field(w0, dma::kVaLo, dma::kVaBits));
  s.last_flit_bytes = static_cast<std::uint8_t>(field(w1, dma::kLastLo, dma::kLastBits));
  std::uint64_t used1 = place(~0ull, dma::kLastLo, dma::kLastBits);
  switch (s.type) {
    case DmaType::kImmediate:
      s.host_iova_flits = field(w1, dma::kIovaLo, dma::kIovaBits);
      used1 |= place(~0ull, dma::kIovaLo, dma::kIovaBits);
      break;
    case DmaType::kMemoryFill:
      s.fill_pattern = static_cast<std::uint32_t>(field(w1, dma::kPatternLo, dma::kPatternBits));
      used1 |= place(~0ull, dma::kPatternLo, dma::kPatternBits);
      break;
    case DmaType::kDeviceCopy:
      s.source = decode_va(field(w1, dma::kSourceLo, dma::kSourceBits));
      used1 |= place(~0ull, dma::kSourceLo, dma::kSourceBits);
      break;
    case DmaType::kSkip: break;
  }
  if (w1 & ~used1) return CbDecodeError{f.reserved, w1};
  if (s.length_flits == 0) return CbDecodeError{f.length, 0};
  if (std::uint64_t(s.device.flit_offset) + s.length_flits > kSegmentFlits) {
    return CbDecodeError{f.va, encode_va(s.device)};
  }
  if (s.type == DmaType::kDeviceCopy &&
      std::uint64_t(s.source.flit_offset) + s.length_flits > kSegmentFlits) {
    return CbDecodeError{f.source, encode_va(s.source)};
  }
  return std::nullopt;
}

bool is_work(const DmaSection& s) { return s.type != DmaType::kSkip; }

}  // namespace

bool operator==(const DeviceVa& a, const DeviceVa& b) noexcept {
  return a.segment == b.segment && a.flit_offset == b.flit_offset;
}
bool operator==(const XlatEntry& a, const XlatEntry& b) noexcept {
  return a.mode == b.mode && a.base_flits == b.base_flits && a.length_flits == b.length_flits;
}
bool operator==(const DmaSection& a, const DmaSection& b) noexcept {
  return a.type == b.type && a.device == b.device && a.length_flits == b.length_flits &&
         a.last_flit_bytes == b.last_flit_bytes && a.host_iova_flits == b.host_iova_flits &&
         a.fill_pattern == b.fill_pattern && a.source == b.source;
}
bool operator==(const ComputeSection& a, const ComputeSection& b) noexcept {
  return a.type == b.type && a.duration_ns == b.duration_ns;
}
bool operator==(const ControlBlock& a, const ControlBlock& b) noexcept {
  return a.tag == b.tag && a.barrier == b.barrier && a.interrupt == b.interrupt && a.dmi == b.dmi &&
         a.dmo == b.dmo && a.cmpt == b.cmpt && a.xlat == b.xlat;
}
bool operator==(const ResponseBlock& a, const ResponseBlock& b) noexcept {
  return a.tag == b.tag && a.status == b.status && a.locator == b.locator && a.phase == b.phase &&
         a.error == b.error && a.field == b.field && a.detail == b.detail &&
         a.start_ns == b.start_ns && a.end_ns == b.end_ns && a.bytes == b.bytes;
}

std::string_view to_string(Pipeline p) noexcept {
  switch (p) {
    case Pipeline::kCompute: return "COMPUTE";
    case Pipeline::kDmai: return "DMAI";
    case Pipeline::kDmao: return "DMAO";
  }
  return "UNKNOWN";
}

std::string_view to_string(RbStatus s) noexcept {
  switch (s) {
    case RbStatus::kGood: return "Good";
    case RbStatus::kRetry: return "Retry";
    case RbStatus::kAbend: return "Abend";
    case RbStatus::kError: return "Error";
  }
  return "Unknown";
}

std::string_view to_string(ErrorKind k) noexcept {
  switch (k) {
    case ErrorKind::kNone: return "none";
    case ErrorKind::kMalformedCb: return "malformed CB";
    case ErrorKind::kXlatFault: return "XLAT fault";
    case ErrorKind::kIommuFault: return "IOMMU fault";
    case ErrorKind::kDeviceMemoryFault: return "device memory fault";
    case ErrorKind::kPcieError: return "PCIe error";
    case ErrorKind::kCompletionTimeout: return "completion timeout";
    case ErrorKind::kReset: return "device reset";
    case ErrorKind::kQueueFault: return "queue fault";
  }
  return "unknown";
}

std::string_view to_string(CbField f) noexcept {
  switch (f) {
    case CbField::kNone: return "none";
    case CbField::kCtrlFormat: return "CTRL.format";
    case CbField::kCtrlTag: return "CTRL.tag";
    case CbField::kCtrlReserved: return "CTRL.reserved";
    case CbField::kReservedWord: return "RSVD";
    case CbField::kDmiType: return "DMI.type";
    case CbField::kDmiLength: return "DMI.length";
    case CbField::kDmiLastFlit: return "DMI.last_flit_bytes";
    case CbField::kDmiDeviceVa: return "DMI.device_va";
    case CbField::kDmiHostIova: return "DMI.host_iova";
    case CbField::kDmiReserved: return "DMI.reserved";
    case CbField::kDmoType: return "DMO.type";
    case CbField::kDmoLength: return "DMO.length";
    case CbField::kDmoLastFlit: return "DMO.last_flit_bytes";
    case CbField::kDmoDeviceVa: return "DMO.device_va";
    case CbField::kDmoHostIova: return "DMO.host_iova";
    case CbField::kDmoReserved: return "DMO.reserved";
    case CbField::kCmptType: return "CMPT.type";
    case CbField::kCmptReserved: return "CMPT.reserved";
    case CbField::kCmptDuration: return "CMPT.duration";
    case CbField::kXlatMode: return "XLAT.mode";
    case CbField::kXlatLength: return "XLAT.length";
    case CbField::kXlatReserved: return "XLAT.reserved";
    case CbField::kSections: return "sections";
    case CbField::kPipeline: return "pipeline";
    case CbField::kDmiSource: return "DMI.source_va";
  }
  return "unknown";
}

CbBytes encode(const ControlBlock& cb) noexcept {
  CbBytes out;
  encode(cb, out.data());
  return out;
}

namespace {
std::uint64_t ctrl_word(std::uint32_t tag, bool barrier, bool interrupt) noexcept {
  return place(kCbFormat, ctrl::kFormatLo, ctrl::kFormatBits) | place(tag, ctrl::kTagLo, ctrl::kTagBits) |
         (barrier ? 1ull << ctrl::kBarrierBit : 0) | (interrupt ? 1ull << ctrl::kIrqBit : 0);
}
std::uint64_t xlat_word(const XlatEntry& e) noexcept {
  if (e.mode == XlatMode::kInvalid) return 0;
  return place(static_cast<std::uint64_t>(e.mode), xl::kModeLo, xl::kModeBits) |
         place(e.length_flits, xl::kLengthLo, xl::kLengthBits) | place(e.base_flits, xl::kBaseLo, xl::kBaseBits);
}
}  // namespace

// Both encoders store every one of the 16 words exactly once (reserved words and skipped
// sections as zero), with no memset first: a driver encodes straight into a ring slot that is
// usually not in cache, and a string store ahead of the field stores cost as much as the rest.
static_assert(kXlatOffset + kNumXlatEntries * kXlatEntryBytes == kCbBytes, "the words cover the CB");

void encode(const ControlBlock& cb, std::uint8_t* out) noexcept {
  store_le64(out + kCtrlOffset, ctrl_word(cb.tag, cb.barrier, cb.interrupt));
  store_le64(out + kReservedOffset, 0);
  encode_dma(out + kDmiOffset, cb.dmi);
  encode_dma(out + kDmoOffset, cb.dmo);
  const bool compute = cb.cmpt.type != ComputeType::kSkip;
  store_le64(out + kCmptOffset, compute ? static_cast<std::uint64_t>(cb.cmpt.type) & mask(4) : 0);
  store_le64(out + kCmptOffset + 8, compute ? cb.cmpt.duration_ns : 0);
  for (unsigned i = 0; i < kNumXlatEntries; ++i) store_le64(out + kXlatOffset + i * kXlatEntryBytes, xlat_word(cb.xlat[i]));
}

void encode(const DmaCb& cb, std::uint8_t* out) noexcept {
  store_le64(out + kCtrlOffset, ctrl_word(cb.tag, cb.barrier, cb.interrupt));
  store_le64(out + kReservedOffset, 0);
  const std::size_t used = cb.outbound ? kDmoOffset : kDmiOffset;
  const std::size_t skipped = cb.outbound ? kDmiOffset : kDmoOffset;
  encode_dma(out + used, cb.section);
  store_le64(out + skipped, 0);
  store_le64(out + skipped + 8, 0);
  store_le64(out + kCmptOffset, 0);
  store_le64(out + kCmptOffset + 8, 0);
  store_le64(out + kXlatOffset, xlat_word(cb.xlat[0]));
  store_le64(out + kXlatOffset + kXlatEntryBytes, xlat_word(cb.xlat[1]));
  for (unsigned i = 2; i < kNumXlatEntries; ++i) store_le64(out + kXlatOffset + i * kXlatEntryBytes, 0);
}

ControlBlock to_control_block(const DmaCb& cb) noexcept {
  ControlBlock c;
  c.tag = cb.tag;
  c.barrier = cb.barrier;
  c.interrupt = cb.interrupt;
  (cb.outbound ? c.dmo : c.dmi) = cb.section;
  c.xlat[0] = cb.xlat[0];
  c.xlat[1] = cb.xlat[1];
  return c;
}

CbDecodeResult decode_cb(const std::uint8_t* in) noexcept {
  CbDecodeResult r;
  ControlBlock& cb = r.cb;
  auto fail = [&](CbField f, std::uint64_t v) {
    r.error = CbDecodeError{f, v};
    return r;
  };
  const std::uint64_t ctrl = load_le64(in + kCtrlOffset);
  if (field(ctrl, ctrl::kFormatLo, ctrl::kFormatBits) != kCbFormat) {
    return fail(CbField::kCtrlFormat, field(ctrl, ctrl::kFormatLo, ctrl::kFormatBits));
  }
  cb.tag = static_cast<std::uint32_t>(field(ctrl, ctrl::kTagLo, ctrl::kTagBits));
  if (cb.tag < kMinTag || cb.tag > kMaxTag) return fail(CbField::kCtrlTag, cb.tag);
  if (ctrl & ~ctrl::kUsed) return fail(CbField::kCtrlReserved, ctrl);
  cb.barrier = (ctrl >> ctrl::kBarrierBit) & 1;
  cb.interrupt = (ctrl >> ctrl::kIrqBit) & 1;
  if (const std::uint64_t rsvd = load_le64(in + kReservedOffset); rsvd != 0) {
    return fail(CbField::kReservedWord, rsvd);
  }
  if (auto e = decode_dma(in + kDmiOffset, true, cb.dmi)) return r.error = e, r;
  if (auto e = decode_dma(in + kDmoOffset, false, cb.dmo)) return r.error = e, r;

  const std::uint64_t c0 = load_le64(in + kCmptOffset), c1 = load_le64(in + kCmptOffset + 8);
  const std::uint64_t ctype = field(c0, 0, 4);
  if (ctype > static_cast<std::uint64_t>(ComputeType::kTimed)) return fail(CbField::kCmptType, ctype);
  if (c0 & ~mask(4)) return fail(CbField::kCmptReserved, c0);
  if (ctype == 0 && c1 != 0) return fail(CbField::kCmptReserved, c1);
  if (c1 > kMaxComputeNs) return fail(CbField::kCmptDuration, c1);
  cb.cmpt.type = static_cast<ComputeType>(ctype);
  cb.cmpt.duration_ns = c1;

  for (unsigned i = 0; i < kNumXlatEntries; ++i) {
    const std::uint64_t w = load_le64(in + kXlatOffset + i * kXlatEntryBytes);
    const std::uint64_t mode = field(w, xl::kModeLo, xl::kModeBits);
    XlatEntry& e = cb.xlat[i];
    if (mode == static_cast<std::uint64_t>(XlatMode::kInvalid)) {
      if (w != 0) return fail(CbField::kXlatReserved, w);
      continue;
    }
    if (mode > static_cast<std::uint64_t>(XlatMode::kReadWrite)) return fail(CbField::kXlatMode, mode);
    e.mode = static_cast<XlatMode>(mode);
    e.length_flits = static_cast<std::uint32_t>(field(w, xl::kLengthLo, xl::kLengthBits));
    e.base_flits = field(w, xl::kBaseLo, xl::kBaseBits);
    if (e.length_flits > kSegmentFlits) return fail(CbField::kXlatLength, e.length_flits);
  }

  const int work = int(is_work(cb.dmi)) + int(is_work(cb.dmo)) + int(cb.cmpt.type != ComputeType::kSkip);
  if (work != 1) return fail(CbField::kSections, static_cast<std::uint64_t>(work));
  r.pipeline = is_work(cb.dmi) ? Pipeline::kDmai : is_work(cb.dmo) ? Pipeline::kDmao : Pipeline::kCompute;
  return r;
}

std::optional<CbDecodeError> validate(const ControlBlock& cb) noexcept {
  // Enumerations that encode() would mask into a different, valid value.
  if (static_cast<std::uint64_t>(cb.dmi.type) > static_cast<std::uint64_t>(DmaType::kDeviceCopy)) {
    return CbDecodeError{CbField::kDmiType, static_cast<std::uint64_t>(cb.dmi.type)};
  }
  if (static_cast<std::uint64_t>(cb.dmo.type) > static_cast<std::uint64_t>(DmaType::kDeviceCopy)) {
    return CbDecodeError{CbField::kDmoType, static_cast<std::uint64_t>(cb.dmo.type)};
  }
  if (static_cast<std::uint64_t>(cb.cmpt.type) > static_cast<std::uint64_t>(ComputeType::kTimed)) {
    return CbDecodeError{CbField::kCmptType, static_cast<std::uint64_t>(cb.cmpt.type)};
  }
  for (const XlatEntry& e : cb.xlat) {
    if (static_cast<std::uint64_t>(e.mode) > static_cast<std::uint64_t>(XlatMode::kReadWrite)) {
      return CbDecodeError{CbField::kXlatMode, static_cast<std::uint64_t>(e.mode)};
    }
  }
  const CbBytes bytes = encode(cb);
  CbDecodeResult r = decode_cb(bytes.data());
  if (r.error) return r.error;
  // encode() masks fields to their widths; a value that did not survive the round trip was out of
  // range for its field.
  if (r.cb.tag != cb.tag) return CbDecodeError{CbField::kCtrlTag, cb.tag};
  auto section_mismatch = [](const DmaSection& want, const DmaSection& got,
                             const SectionFields& f) -> std::optional<CbDecodeError> {
    if (want.type == DmaType::kSkip) return std::nullopt;  // encoded as zeros, whatever it holds
    if (want.length_flits != got.length_flits) return CbDecodeError{f.length, want.length_flits};
    if (want.last_flit_bytes != got.last_flit_bytes) {
      return CbDecodeError{f.type == CbField::kDmiType ? CbField::kDmiLastFlit : CbField::kDmoLastFlit,
                           want.last_flit_bytes};
    }
    if (!(want.device == got.device)) return CbDecodeError{f.va, want.device.flit_offset};
    if (want.type == DmaType::kImmediate && want.host_iova_flits != got.host_iova_flits) {
      return CbDecodeError{f.host, want.host_iova_flits};
    }
    if (want.type == DmaType::kDeviceCopy && !(want.source == got.source)) {
      return CbDecodeError{f.source, want.source.flit_offset};
    }
    return std::nullopt;
  };
  if (auto e = section_mismatch(cb.dmi, r.cb.dmi, kDmiFields)) return e;
  if (auto e = section_mismatch(cb.dmo, r.cb.dmo, kDmoFields)) return e;
  for (unsigned i = 0; i < kNumXlatEntries; ++i) {
    if (cb.xlat[i].mode == XlatMode::kInvalid) continue;
    if (!(cb.xlat[i] == r.cb.xlat[i])) return CbDecodeError{CbField::kXlatLength, i};
  }
  return std::nullopt;
}

XlatResult translate(const ControlBlock& cb, DeviceVa va, std::uint64_t length_flits,
                     bool write) noexcept {
  if (va.segment >= kNumXlatEntries) return {ErrorKind::kXlatFault, 0};
  const XlatEntry& e = cb.xlat[va.segment];
  if (e.mode == XlatMode::kInvalid) return {ErrorKind::kXlatFault, 0};
  if (write && e.mode != XlatMode::kReadWrite) return {ErrorKind::kXlatFault, 0};
  if (length_flits > e.length_flits || va.flit_offset > e.length_flits - length_flits) {
    return {ErrorKind::kXlatFault, 0};
  }
  return {ErrorKind::kNone, e.base_flits + va.flit_offset};
}

RbBytes encode(const ResponseBlock& rb) noexcept {
  RbBytes out{};
  const std::uint64_t w0 = place(rb.tag, rbw::kTagLo, rbw::kTagBits) |
                           place(static_cast<std::uint64_t>(rb.status), rbw::kStatusLo, rbw::kStatusBits) |
                           place(static_cast<std::uint64_t>(rb.locator), rbw::kLocatorLo, rbw::kLocatorBits) |
                           (rb.phase ? 1ull << rbw::kPhaseBit : 0) |
                           place(kRbFormat, rbw::kFormatLo, rbw::kFormatBits);
  const std::uint64_t w1 = place(static_cast<std::uint64_t>(rb.error), rbw::kErrorLo, rbw::kErrorBits) |
                           place(static_cast<std::uint64_t>(rb.field), rbw::kFieldLo, rbw::kFieldBits);
  store_le64(out.data() + 0, w0);
  store_le64(out.data() + 8, w1);
  store_le64(out.data() + 16, rb.detail);
  store_le64(out.data() + 24, rb.start_ns);
  store_le64(out.data() + 32, rb.end_ns);
  store_le64(out.data() + 40, rb.bytes);
  return out;
}

RbDecodeResult decode_rb(const std::uint8_t* in) noexcept {
  RbDecodeResult r;
  const std::uint64_t w0 = load_le64(in), w1 = load_le64(in + 8);
  if (field(w0, rbw::kFormatLo, rbw::kFormatBits) != kRbFormat) return r.error = "format", r;
  if (w0 & ~rbw::kUsed) return r.error = "reserved bits of word 0", r;
  if (w1 >> 32) return r.error = "reserved bits of word 1", r;
  if (load_le64(in + 48) != 0 || load_le64(in + 56) != 0) return r.error = "reserved words", r;
  ResponseBlock& rb = r.rb;
  rb.tag = static_cast<std::uint32_t>(field(w0, rbw::kTagLo, rbw::kTagBits));
  if (rb.tag < kMinTag || rb.tag > kMaxTag) return r.error = "tag", r;
  const std::uint64_t status = field(w0, rbw::kStatusLo, rbw::kStatusBits);
  if (status > static_cast<std::uint64_t>(RbStatus::kError)) return r.error = "status", r;
  const std::uint64_t loc = field(w0, rbw::kLocatorLo, rbw::kLocatorBits);
  if (loc >= kNumPipelines) return r.error = "locator", r;
  const std::uint64_t err = field(w1, rbw::kErrorLo, rbw::kErrorBits);
  if (err > static_cast<std::uint64_t>(ErrorKind::kQueueFault)) return r.error = "error kind", r;
  const std::uint64_t fld = field(w1, rbw::kFieldLo, rbw::kFieldBits);
  if (fld > static_cast<std::uint64_t>(CbField::kCmptDuration)) return r.error = "field", r;
  rb.status = static_cast<RbStatus>(status);
  rb.locator = static_cast<Pipeline>(loc);
  rb.phase = (w0 >> rbw::kPhaseBit) & 1;
  rb.error = static_cast<ErrorKind>(err);
  rb.field = static_cast<CbField>(fld);
  rb.detail = load_le64(in + 16);
  rb.start_ns = load_le64(in + 24);
  rb.end_ns = load_le64(in + 32);
  rb.bytes = load_le64(in + 40);
  return r;
}

static_assert(kCtrlOffset + 8 == kReservedOffset && kReservedOffset + 8 == kDmiOffset);
static_assert(kDmiOffset + 16 == kDmoOffset && kDmoOffset + 16 == kCmptOffset);
static_assert(kCmptOffset + 16 == kXlatOffset);
static_assert(kXlatOffset + kNumXlatEntries * kXlatEntryBytes == kCbBytes);
static_assert(sizeof(CbBytes) == 128 && sizeof(RbBytes) == 64);
static_assert(kSegmentBytes == 16ull << 30, "a segment spans 16 GiB");
static_assert(kNumSegments * kSegmentBytes == 128ull << 30, "8 segments span the 128 GiB device");
static_assert(dma::kVaBits == kSegmentBits + kSegmentOffsetBits);
static_assert(dma::kLengthBits == 24 && kLengthFlitsMax == mask(24));
static_assert(kMaxTag < (1u << rbw::kTagBits) && kMaxTag < (1u << ctrl::kTagBits));
static_assert(dma::kLastLo + dma::kLastBits == 64 && dma::kIovaLo + dma::kIovaBits <= dma::kLastLo);
static_assert(xl::kBaseLo + xl::kBaseBits == 64 && (1ull << xl::kLengthBits) > kSegmentFlits);
static_assert(reg::pipe(Pipeline::kDmao, reg::kQueueControl) < reg::kBar0Bytes);

}  // namespace spyre_dma::hw
