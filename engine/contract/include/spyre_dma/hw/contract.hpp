// The hardware contract between the DMA engine and every device backend: control-block (CB) and
// response-block (RB) wire formats, the BAR0 register map, ring rules and status codes.
//
// This header is the single source of truth for those layouts. The engine, the reference device,
// the SystemC model, the RTL test bench and the trace tools all include it; docs/programming-model.md
// explains the semantics. Everything here is little-endian on the wire; encode/decode work on byte
// arrays so that the host's own byte order never leaks into the format.
//
// What follows the public description of the device (CB sections and their offsets, 24-bit tag in
// CTRL bits 31:8, barrier in bit 32, flit units, 3-bit segment + 27-bit flit offset, 8 XLAT entries,
// 64-byte RBs with tag/status/locator) is marked "public". Everything else (register offsets, ring
// layout, error detail, the last-flit byte count, the device-copy and compute encodings) is this
// project's documented choice.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace spyre_dma::hw {

// ---------------------------------------------------------------------------------------------
// Units and address space
// ---------------------------------------------------------------------------------------------

inline constexpr std::size_t kFlitBytes = 128;  // public: CB addresses and lengths count flits
inline constexpr std::size_t kCbBytes = 128;
inline constexpr std::size_t kRbBytes = 64;
inline constexpr unsigned kSegmentBits = 3;        // public
inline constexpr unsigned kSegmentOffsetBits = 27;  // public: flit offset within a segment
inline constexpr unsigned kNumSegments = 1u << kSegmentBits;
inline constexpr std::uint64_t kSegmentFlits = 1ull << kSegmentOffsetBits;
inline constexpr std::uint64_t kSegmentBytes = kSegmentFlits * kFlitBytes;  // 16 GiB
inline constexpr unsigned kNumXlatEntries = 8;  // public; entry i translates segment i
inline constexpr std::uint32_t kMinTag = 1;      // public: tag 0 is never used
inline constexpr std::uint32_t kMaxTag = 32768;
inline constexpr std::uint32_t kLengthFlitsMax = (1u << 24) - 1;  // 24-bit length field
inline constexpr unsigned kIovaFlitBits = 57;  // host IOVA in flits: 64-bit byte addresses
inline constexpr std::uint32_t kContractVersion = 0x0001'0000;  // major 1, minor 0

// The three hardware CB pipelines (public). The value is also the RB locator.
enum class Pipeline : std::uint8_t { kCompute = 0, kDmai = 1, kDmao = 2 };
inline constexpr unsigned kNumPipelines = 3;
std::string_view to_string(Pipeline p) noexcept;

// ---------------------------------------------------------------------------------------------
// Control block: 128 bytes (offsets public)
//   0   CTRL   8 B   bits 7:0 format (kCbFormat), 31:8 tag (public), 32 barrier (public),
//                    33 interrupt on completion, 63:34 reserved (zero)
//   8   RSVD   8 B   reserved (zero)
//   16  DMI    16 B  device-memory-write section: host-to-device copy, fill, device copy
//   32  DMO    16 B  device-to-host section
//   48  CMPT   16 B  compute section
//   64  XLAT   64 B  8 translation entries of 8 B; entry i translates segment i
// DMA section (DMI or DMO):
//   word0  bits 3:0 type, 7:4 reserved, 31:8 length in flits, 61:32 device VA
//          (segment 61:59, flit offset 58:32), 63:62 reserved
//   word1  kImmediate: bits 56:0 host IOVA in flits; kMemoryFill: bits 31:0 pattern;
//          kDeviceCopy: bits 29:0 source device VA; every type: bits 63:57 last-flit byte count
//          (0 = the last flit is whole), so transfers need not be flit multiples in length;
//          all other bits reserved (zero). A SKIP section is all zero.
// Compute section: word0 bits 3:0 type, rest reserved; word1 duration in ns.
// ---------------------------------------------------------------------------------------------

inline constexpr std::uint8_t kCbFormat = 0x5C;  // marks a CB written by a contract-1 producer

inline constexpr std::size_t kCtrlOffset = 0;
inline constexpr std::size_t kReservedOffset = 8;
inline constexpr std::size_t kDmiOffset = 16;
inline constexpr std::size_t kDmoOffset = 32;
inline constexpr std::size_t kCmptOffset = 48;
inline constexpr std::size_t kXlatOffset = 64;
inline constexpr std::size_t kXlatEntryBytes = 8;

enum class DmaType : std::uint8_t {
  kSkip = 0,         // public: section unused
  kImmediate = 1,    // public: copy between host IOVA and device VA (direction from the section)
  kMemoryFill = 2,   // public: DMI only; replicates a 32-bit pattern over the device range
  kDeviceCopy = 3,   // project: DMI only; device VA to device VA, both through XLAT
};

enum class ComputeType : std::uint8_t {
  kSkip = 0,
  kTimed = 1,  // a placeholder kernel: takes duration_ns on the compute unit, touches no memory
};

enum class XlatMode : std::uint8_t { kInvalid = 0, kReadOnly = 1, kReadWrite = 2 };

// Device virtual address: segment (3 bits) and flit offset (27 bits), public.
struct DeviceVa {
  std::uint8_t segment = 0;
  std::uint32_t flit_offset = 0;
};

// One XLAT entry translates one segment for this CB: device VA (s, off) -> physical flit
// (base_flits + off), allowed only when off + length <= length_flits and the mode permits it.
//   bits 1:0 mode, 29:2 length in flits (at most one segment), 63:30 physical base in flits
struct XlatEntry {
  XlatMode mode = XlatMode::kInvalid;
  std::uint64_t base_flits = 0;    // 34 bits
  std::uint32_t length_flits = 0;  // 28 bits, <= kSegmentFlits
};

struct DmaSection {
  DmaType type = DmaType::kSkip;
  DeviceVa device;              // destination for DMI, source for DMO
  std::uint32_t length_flits = 0;
  std::uint8_t last_flit_bytes = 0;  // 0: the last flit is whole; else 1..127 bytes of it move
  std::uint64_t host_iova_flits = 0;  // kImmediate: the host side, in flits
  std::uint32_t fill_pattern = 0;     // kMemoryFill
  DeviceVa source;                    // kDeviceCopy: the device source

  // Bytes this section moves, from length and last-flit count.
  std::uint64_t byte_count() const noexcept {
    if (length_flits == 0) return 0;
    const std::uint64_t full = std::uint64_t(length_flits) * kFlitBytes;
    return last_flit_bytes == 0 ? full : full - kFlitBytes + last_flit_bytes;
  }
};

// The longest TIMED duration a CB may carry (48 bits of nanoseconds, about 78 hours): every
// device's clock can add it to its own time without overflow (the model's counts picoseconds in
// 64 bits), so a longer one is refused by the decoder rather than wrapping a device's time.
inline constexpr std::uint64_t kMaxComputeNs = (std::uint64_t{1} << 48) - 1;

struct ComputeSection {
  ComputeType type = ComputeType::kSkip;
  std::uint64_t duration_ns = 0;
};

struct ControlBlock {
  std::uint32_t tag = 0;  // 1..kMaxTag
  bool barrier = false;
  bool interrupt = false;
  DmaSection dmi;
  DmaSection dmo;
  ComputeSection cmpt;
  std::array<XlatEntry, kNumXlatEntries> xlat{};
};

// Field-wise equality (C++17 has no defaulted comparison).
bool operator==(const DeviceVa& a, const DeviceVa& b) noexcept;
inline bool operator!=(const DeviceVa& a, const DeviceVa& b) noexcept { return !(a == b); }
bool operator==(const XlatEntry& a, const XlatEntry& b) noexcept;
inline bool operator!=(const XlatEntry& a, const XlatEntry& b) noexcept { return !(a == b); }
bool operator==(const DmaSection& a, const DmaSection& b) noexcept;
inline bool operator!=(const DmaSection& a, const DmaSection& b) noexcept { return !(a == b); }
bool operator==(const ComputeSection& a, const ComputeSection& b) noexcept;
inline bool operator!=(const ComputeSection& a, const ComputeSection& b) noexcept { return !(a == b); }
bool operator==(const ControlBlock& a, const ControlBlock& b) noexcept;
inline bool operator!=(const ControlBlock& a, const ControlBlock& b) noexcept { return !(a == b); }

using CbBytes = std::array<std::uint8_t, kCbBytes>;
using RbBytes = std::array<std::uint8_t, kRbBytes>;

// Which CB field a decoder or a device rejected. Stable numbers: they travel in RBs.
enum class CbField : std::uint16_t {
  kNone = 0,
  kCtrlFormat = 1,
  kCtrlTag = 2,
  kCtrlReserved = 3,
  kReservedWord = 4,
  kDmiType = 5,
  kDmiLength = 6,
  kDmiLastFlit = 7,
  kDmiDeviceVa = 8,
  kDmiHostIova = 9,
  kDmiReserved = 10,
  kDmoType = 11,
  kDmoLength = 12,
  kDmoLastFlit = 13,
  kDmoDeviceVa = 14,
  kDmoHostIova = 15,
  kDmoReserved = 16,
  kCmptType = 17,
  kCmptReserved = 18,
  kXlatMode = 19,
  kXlatLength = 20,
  kXlatReserved = 21,
  kSections = 22,  // no section, or more than one, describes work
  kPipeline = 23,  // the described work does not belong on the queue the CB came from
  kDmiSource = 24,
  kCmptDuration = 25,  // a TIMED duration above kMaxComputeNs
};
std::string_view to_string(CbField f) noexcept;

// The pipeline a valid CB belongs on: DMI work -> DMAI, DMO work -> DMAO, CMPT work -> COMPUTE.
// Exactly one section describes work (the others are SKIP).
struct CbDecodeError {
  CbField field = CbField::kNone;
  std::uint64_t value = 0;  // the offending raw value
};

// Encodes a CB. Preconditions are checked by validate(); encode() itself writes whatever it is
// given into the fields (masked to their widths), which lets tests build malformed CBs on purpose.
CbBytes encode(const ControlBlock& cb) noexcept;
// The same into `out` (kCbBytes, every byte written): how a driver writes a CB straight into its
// ring slot, without an image to copy.
void encode(const ControlBlock& cb, std::uint8_t* out) noexcept;

// The CB a driver issues for a copy or a fill: one DMA section, DMI (host to device, device to
// device, fill) or DMO (device to host), the other two sections SKIP, and XLAT entries 0 and 1
// (the rest invalid). Its encode() writes the bytes encode() writes for the same CB as a
// ControlBlock (to_control_block), without a 312-byte structure to clear and read back for
// every CB of a submission.
struct DmaCb {
  std::uint32_t tag = 0;
  bool barrier = false;
  bool interrupt = false;
  bool outbound = false;  // the section is DMO (device to host); else DMI
  DmaSection section;
  std::array<XlatEntry, 2> xlat{};
};
ControlBlock to_control_block(const DmaCb& cb) noexcept;
void encode(const DmaCb& cb, std::uint8_t* out) noexcept;

// Decodes and validates. On failure returns the first offending field; a device answers such a CB
// with an Error RB naming that field and touches no memory.
struct CbDecodeResult {
  ControlBlock cb;
  std::optional<CbDecodeError> error;
  Pipeline pipeline = Pipeline::kDmai;  // meaningful only without error
};
CbDecodeResult decode_cb(const std::uint8_t* bytes) noexcept;

// Checks a structured CB against the contract (the same rules decode_cb applies).
std::optional<CbDecodeError> validate(const ControlBlock& cb) noexcept;

// ---------------------------------------------------------------------------------------------
// Response block: 64 bytes
//   0   word0  bits 23:0 tag, 27:24 status, 31:28 locator (pipeline), 32 phase,
//              39:33 reserved, 47:40 format (kRbFormat), 63:48 reserved
//   8   word1  bits 15:0 error kind, 31:16 offending CB field, 63:32 reserved
//   16  word2  error detail: offending address or value
//   24  word3  device timestamp when the CB started, ns
//   32  word4  device timestamp when the CB retired, ns
//   40  word5  bytes moved
//   48  word6, 56 word7: reserved (zero)
// ---------------------------------------------------------------------------------------------

inline constexpr std::uint8_t kRbFormat = 0xA5;

enum class RbStatus : std::uint8_t { kGood = 0, kRetry = 1, kAbend = 2, kError = 3 };  // public
std::string_view to_string(RbStatus s) noexcept;

enum class ErrorKind : std::uint16_t {
  kNone = 0,
  kMalformedCb = 1,       // detail: raw value of `field`
  kXlatFault = 2,         // device VA outside its XLAT entry, or a write through a RO entry
  kIommuFault = 3,        // host IOVA not mapped (or not for this access); detail: the IOVA
  kDeviceMemoryFault = 4, // physical device address beyond the device memory
  kPcieError = 5,         // poisoned TLP, UR or CA completion
  kCompletionTimeout = 6, // a read completion never came
  kReset = 7,             // aborted by a device reset (status Abend)
  kQueueFault = 8,        // ring misconfigured (base unmapped, size invalid); detail: the register
};
std::string_view to_string(ErrorKind k) noexcept;

struct ResponseBlock {
  std::uint32_t tag = 0;
  RbStatus status = RbStatus::kGood;
  Pipeline locator = Pipeline::kDmai;
  bool phase = false;
  ErrorKind error = ErrorKind::kNone;
  CbField field = CbField::kNone;
  std::uint64_t detail = 0;
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  std::uint64_t bytes = 0;
};

bool operator==(const ResponseBlock& a, const ResponseBlock& b) noexcept;
inline bool operator!=(const ResponseBlock& a, const ResponseBlock& b) noexcept { return !(a == b); }

RbBytes encode(const ResponseBlock& rb) noexcept;

struct RbDecodeResult {
  ResponseBlock rb;
  // Why the bytes are not a well-formed RB: a foreign format byte, a status, locator or error
  // kind outside the enumerations, a tag outside 1..kMaxTag, nonzero reserved bits.
  std::optional<std::string_view> error;
};
RbDecodeResult decode_rb(const std::uint8_t* bytes) noexcept;

// XLAT translation of a device VA range through the CB's own table, as every device does it:
// entry `va.segment` must be valid, va.flit_offset + length_flits must fit its length, and a
// write needs a read-write entry. On success returns kNone and the physical flit address.
struct XlatResult {
  ErrorKind error = ErrorKind::kNone;
  std::uint64_t phys_flits = 0;
};
XlatResult translate(const ControlBlock& cb, DeviceVa va, std::uint64_t length_flits,
                     bool write) noexcept;

// Only the phase bit, for polling a ring slot without decoding all of it.
inline bool rb_phase(const std::uint8_t* bytes) noexcept { return (bytes[4] & 1u) != 0; }

// ---------------------------------------------------------------------------------------------
// Rings (host memory, reached by the device only through IOVAs)
//   CB ring: `size` slots of 128 B; RB ring: `size` slots of 64 B; size a power of two,
//   1..the pipeline's depth; base 4 KiB aligned.
//   Indices are free-running 32-bit counters; slot = index & (size - 1).
//   CB ring: the engine writes slots then the producer index (the doorbell); full when
//   pi - ci == size, empty when pi == ci. The device fetches in index order and retires CBs of a
//   pipeline in index order, writing one RB per CB in retirement order.
//   RB ring: the device writes the RB, then advances RB_PI; the phase bit of an RB written at
//   index i is ((i / size) & 1) == 0, so a zeroed ring reads as empty and the engine can poll
//   host memory without reading registers. The engine returns slots through RB_CI; the device
//   never writes a slot while rb_pi - rb_ci == size.
// ---------------------------------------------------------------------------------------------

inline bool expected_phase(std::uint32_t index, std::uint32_t size) noexcept {
  return ((index / size) & 1u) == 0;
}
inline bool ring_full(std::uint32_t pi, std::uint32_t ci, std::uint32_t size) noexcept {
  return pi - ci >= size;
}
inline bool ring_empty(std::uint32_t pi, std::uint32_t ci) noexcept { return pi == ci; }
inline bool is_power_of_two(std::uint64_t v) noexcept { return v != 0 && (v & (v - 1)) == 0; }

// ---------------------------------------------------------------------------------------------
// BAR0 register map (4 MiB BAR; offsets in bytes; 32-bit registers unless named _64)
// ---------------------------------------------------------------------------------------------
namespace reg {
// Identification and capabilities (read-only).
inline constexpr std::uint64_t kId = 0x0000;                  // device id << 16 | vendor id
inline constexpr std::uint64_t kVersion = 0x0004;             // kContractVersion
inline constexpr std::uint64_t kCapabilities_64 = 0x0008;     // Capability bits
inline constexpr std::uint64_t kDepthCompute = 0x0010;        // max CB ring size per pipeline
inline constexpr std::uint64_t kDepthDmai = 0x0014;
inline constexpr std::uint64_t kDepthDmao = 0x0018;
inline constexpr std::uint64_t kMaxCbBytes = 0x001C;          // largest byte count one CB may move
inline constexpr std::uint64_t kNumTags = 0x0020;             // kMaxTag
inline constexpr std::uint64_t kDeviceMemBytes_64 = 0x0028;   // installed device memory
inline constexpr std::uint64_t kDeviceMemUsable_64 = 0x0030;  // usable (ECC reserve removed)
inline constexpr std::uint64_t kTimestampNs_64 = 0x0038;      // the device's clock

// Global control and status.
inline constexpr std::uint64_t kControl = 0x0100;      // ControlBits
inline constexpr std::uint64_t kStatus = 0x0104;       // StatusBits (read-only)
inline constexpr std::uint64_t kFatalCause = 0x0108;   // ErrorKind of a fatal fault (read-only)
inline constexpr std::uint64_t kFatalDetail_64 = 0x0110;

// Per-pipeline blocks: kPipeBase + pipeline * kPipeStride + one of the offsets below.
inline constexpr std::uint64_t kPipeBase = 0x1000;
inline constexpr std::uint64_t kPipeStride = 0x100;
inline constexpr std::uint64_t kCbRingBase_64 = 0x00;  // IOVA, 4 KiB aligned
inline constexpr std::uint64_t kCbRingSize = 0x08;     // slots, power of two <= depth
inline constexpr std::uint64_t kCbPi = 0x0C;           // producer index: the doorbell
inline constexpr std::uint64_t kCbCi = 0x10;           // consumer index: CBs fetched (read-only)
inline constexpr std::uint64_t kRbRingBase_64 = 0x18;  // IOVA, 4 KiB aligned
inline constexpr std::uint64_t kRbRingSize = 0x20;     // slots, power of two
inline constexpr std::uint64_t kRbPi = 0x24;           // RBs written (read-only)
inline constexpr std::uint64_t kRbCi = 0x28;           // RBs consumed by the engine
inline constexpr std::uint64_t kIrqEnable = 0x2C;      // 1: raise the vector after each RB
inline constexpr std::uint64_t kIrqVector = 0x30;      // MSI-X vector number
inline constexpr std::uint64_t kErrorStatus = 0x34;    // ErrorKind of a queue fault; write 1 clears
inline constexpr std::uint64_t kQueueControl = 0x38;   // bit 0: enable (fetch CBs)

inline constexpr std::uint64_t pipe(Pipeline p, std::uint64_t offset) noexcept {
  return kPipeBase + static_cast<std::uint64_t>(p) * kPipeStride + offset;
}
inline constexpr std::uint64_t kBar0Bytes = 4ull << 20;
}  // namespace reg

// Both rings start on a 4 KiB boundary, so that no fetch or RB write of a ring crosses a page (and
// so the 4 KiB rule of PCIe). A device that finds a base off that boundary raises a queue fault
// before it touches the ring.
inline constexpr std::uint64_t kRingAlignment = 4096;
inline constexpr bool ring_base_aligned(std::uint64_t iova) noexcept { return iova % kRingAlignment == 0; }

enum ControlBits : std::uint32_t {
  kControlEnable = 1u << 0,
  kControlReset = 1u << 1,  // self-clearing: aborts in-flight CBs, clears rings and indices
};
enum StatusBits : std::uint32_t {
  kStatusReady = 1u << 0,
  kStatusResetting = 1u << 1,
  kStatusFatal = 1u << 2,
};
enum Capability : std::uint64_t {
  kCapFill = 1ull << 0,
  kCapDeviceCopy = 1ull << 1,
  kCapCompute = 1ull << 2,
  kCapTimestamps = 1ull << 3,  // RB start/end carry the device clock
};
inline constexpr std::uint32_t kQueueEnable = 1u << 0;

inline constexpr std::uint32_t kPciVendorIbm = 0x1014;
inline constexpr std::uint32_t kPciDeviceSpyrePf = 0x06a7;

// ---------------------------------------------------------------------------------------------
// Little-endian helpers shared by encoders, decoders and ring code.
// ---------------------------------------------------------------------------------------------
// On a little-endian host these are plain 8-byte copies (one load or store); elsewhere the
// bytes are assembled one by one. Either way the wire format is little-endian.
inline std::uint64_t load_le64(const std::uint8_t* p) noexcept {
  std::uint64_t v = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  std::memcpy(&v, p, sizeof v);
#else
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
#endif
  return v;
}
inline void store_le64(std::uint8_t* p, std::uint64_t v) noexcept {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  std::memcpy(p, &v, sizeof v);
#else
  for (int i = 0; i < 8; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
#endif
}

// Address helpers.
inline constexpr bool flit_aligned(std::uint64_t bytes) noexcept { return bytes % kFlitBytes == 0; }
inline constexpr std::uint64_t flits_for(std::uint64_t bytes) noexcept {
  return (bytes + kFlitBytes - 1) / kFlitBytes;
}

}  // namespace spyre_dma::hw
