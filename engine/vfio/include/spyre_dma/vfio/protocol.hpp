// The vfio-user protocol, as far as this project speaks it: messages, their fields, and the one
// parser both ends use. Written from the public vfio-user specification (version 0.1): a device
// server in one process, a client (the driver) in another, one UNIX stream socket between them,
// file descriptors passed with SCM_RIGHTS.
//
// Every message is a 16-byte header and a payload. All fields are little-endian (the
// specification's "native" order on every host this project runs on is little-endian; the codec
// below writes bytes explicitly, so the wire format does not depend on struct layout).
//
// Parsing never trusts a length: every field is read through Reader, which throws ProtocolError
// naming the command and the field that ran past the message, or the value that is out of range.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "spyre_dma/hw/contract.hpp"

namespace spyre_dma::vfio {

// A message that breaks the protocol: a short or oversized message, a field past its end, a value
// out of range. The message names the command and the field.
class ProtocolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class Command : std::uint16_t {
  kVersion = 1,
  kDmaMap = 2,
  kDmaUnmap = 3,
  kDeviceGetInfo = 4,
  kDeviceGetRegionInfo = 5,
  kDeviceGetRegionIoFds = 6,
  kDeviceGetIrqInfo = 7,
  kDeviceSetIrqs = 8,
  kRegionRead = 9,
  kRegionWrite = 10,
  kDmaRead = 11,
  kDmaWrite = 12,
  kDeviceReset = 13,
};
const char* to_string(Command c) noexcept;  // "VFIO_USER_REGION_READ", or "command N" for others

inline constexpr std::uint16_t kVersionMajor = 0;
inline constexpr std::uint16_t kVersionMinor = 1;
inline constexpr std::size_t kHeaderBytes = 16;
// The largest message either end accepts (header included): far above any message this project
// sends (region accesses of 8 bytes), small enough that a hostile length cannot exhaust memory.
inline constexpr std::uint32_t kMaxMessageBytes = 1u << 20;
inline constexpr std::size_t kMaxFds = 8;  // file descriptors per message

// Header flags (the specification's bit fields).
inline constexpr std::uint32_t kFlagTypeMask = 0xF;
inline constexpr std::uint32_t kFlagReply = 0x1;     // type: reply (0: command)
inline constexpr std::uint32_t kFlagNoReply = 0x10;  // a command whose sender wants no reply
inline constexpr std::uint32_t kFlagError = 0x20;    // a reply carrying an errno

struct Header {
  std::uint16_t id = 0;
  Command command = Command::kVersion;
  std::uint32_t size = kHeaderBytes;  // the whole message, header included
  std::uint32_t flags = 0;
  std::uint32_t error = 0;  // errno, when flags has kFlagError
  bool is_reply() const noexcept { return (flags & kFlagTypeMask) == kFlagReply; }
  bool wants_reply() const noexcept { return !is_reply() && (flags & kFlagNoReply) == 0; }
};

// The header of `bytes` (at least kHeaderBytes of them). ProtocolError for a message size below
// the header or above kMaxMessageBytes, or a type other than command and reply.
Header parse_header(const std::uint8_t* bytes, std::size_t n);
void write_header(const Header& h, std::uint8_t* out) noexcept;

// Reads little-endian fields from a payload, in order.
class Reader {
 public:
  Reader(Command command, const std::uint8_t* data, std::size_t n) : command_(command), data_(data), n_(n) {}
  std::uint16_t u16(const char* field);
  std::uint32_t u32(const char* field);
  std::uint64_t u64(const char* field);
  // The next n bytes.
  const std::uint8_t* bytes(std::size_t n, const char* field);
  std::size_t left() const noexcept { return n_ - at_; }
  // ProtocolError naming `field` and `value` (a value the command cannot take).
  [[noreturn]] void bad(const char* field, std::uint64_t value, const std::string& why) const;

 private:
  void need(std::size_t k, const char* field) const;
  Command command_;
  const std::uint8_t* data_;
  std::size_t n_;
  std::size_t at_ = 0;
};

// Appends little-endian fields to a payload.
class Writer {
 public:
  Writer& u16(std::uint16_t v);
  Writer& u32(std::uint32_t v);
  Writer& u64(std::uint64_t v);
  Writer& bytes(const void* p, std::size_t n);
  std::vector<std::uint8_t> take() { return std::move(out_); }

 private:
  std::vector<std::uint8_t> out_;
};

// --- Payloads ----------------------------------------------------------------------------------

// VFIO_USER_VERSION, both ways: the version and a JSON object of capabilities.
struct Version {
  std::uint16_t major = kVersionMajor;
  std::uint16_t minor = kVersionMinor;
  std::string capabilities_json;  // {"capabilities": {...}}
};
std::vector<std::uint8_t> encode(const Version& v);
Version parse_version(Reader& r);

// VFIO_USER_DMA_MAP: [address, address + size) of the client's IOVA space is the file's bytes
// from `offset` (the file descriptor travels with the message).
inline constexpr std::uint32_t kDmaRead = 1u << 0;   // the device may read it
inline constexpr std::uint32_t kDmaWrite = 1u << 1;  // the device may write it
struct DmaMap {
  std::uint32_t flags = 0;
  std::uint64_t offset = 0;
  std::uint64_t address = 0;
  std::uint64_t size = 0;
};
std::vector<std::uint8_t> encode(const DmaMap& m);
DmaMap parse_dma_map(Reader& r);

struct DmaUnmap {
  std::uint32_t flags = 0;
  std::uint64_t address = 0;
  std::uint64_t size = 0;
};
std::vector<std::uint8_t> encode(const DmaUnmap& m);
DmaUnmap parse_dma_unmap(Reader& r);

// VFIO_USER_DEVICE_GET_INFO's reply (the command carries argsz alone).
inline constexpr std::uint32_t kDeviceFlagReset = 1u << 0;
inline constexpr std::uint32_t kDeviceFlagPci = 1u << 1;
struct DeviceInfo {
  std::uint32_t flags = 0;
  std::uint32_t num_regions = 0;
  std::uint32_t num_irqs = 0;
};
std::vector<std::uint8_t> encode(const DeviceInfo& i);
DeviceInfo parse_device_info(Reader& r);

// VFIO_USER_DEVICE_GET_REGION_INFO, both ways (the command fills index and argsz). A capability
// chain may follow in the reply, at cap_offset from the payload's start.
inline constexpr std::uint32_t kRegionRead = 1u << 0;
inline constexpr std::uint32_t kRegionWrite = 1u << 1;
inline constexpr std::uint32_t kRegionMmap = 1u << 2;
inline constexpr std::uint32_t kRegionCaps = 1u << 3;
inline constexpr std::uint32_t kRegionInfoBytes = 32;
// One area of a region the client may map (VFIO_REGION_INFO_CAP_SPARSE_MMAP), at `offset` from
// the start of the file descriptor that came with the reply.
struct SparseArea {
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
};
inline constexpr std::size_t kMaxSparseAreas = 16;  // more in one reply is refused
struct RegionInfo {
  std::uint32_t argsz = kRegionInfoBytes;
  std::uint32_t flags = 0;
  std::uint32_t index = 0;
  std::uint32_t cap_offset = 0;
  std::uint64_t size = 0;
  std::uint64_t offset = 0;
  // VFIO_REGION_INFO_CAP_TYPE, when present: a device-specific region's type and subtype.
  bool has_type = false;
  std::uint32_t type = 0;
  std::uint32_t subtype = 0;
  // VFIO_REGION_INFO_CAP_SPARSE_MMAP, when present: the areas the client may map.
  std::vector<SparseArea> sparse_areas;
};
std::vector<std::uint8_t> encode(const RegionInfo& i);
RegionInfo parse_region_info(Reader& r);

// VFIO_USER_DEVICE_GET_IRQ_INFO, both ways.
struct IrqInfo {
  std::uint32_t flags = 0;
  std::uint32_t index = 0;
  std::uint32_t count = 0;
};
std::vector<std::uint8_t> encode(const IrqInfo& i);
IrqInfo parse_irq_info(Reader& r);

// VFIO_USER_DEVICE_SET_IRQS (eventfds travel with the message, one per vector when the data is
// eventfds).
inline constexpr std::uint32_t kIrqDataNone = 1u << 0;
inline constexpr std::uint32_t kIrqDataBool = 1u << 1;
inline constexpr std::uint32_t kIrqDataEventfd = 1u << 2;
inline constexpr std::uint32_t kIrqActionMask = 1u << 3;
inline constexpr std::uint32_t kIrqActionUnmask = 1u << 4;
inline constexpr std::uint32_t kIrqActionTrigger = 1u << 5;
struct IrqSet {
  std::uint32_t flags = 0;
  std::uint32_t index = 0;
  std::uint32_t start = 0;
  std::uint32_t count = 0;
};
std::vector<std::uint8_t> encode(const IrqSet& s);
IrqSet parse_irq_set(Reader& r);

// VFIO_USER_REGION_READ / _WRITE, both ways: a write's command and a read's reply carry `count`
// bytes of data.
struct RegionAccess {
  std::uint64_t offset = 0;
  std::uint32_t region = 0;
  std::uint32_t count = 0;
  std::vector<std::uint8_t> data;
};
std::vector<std::uint8_t> encode(const RegionAccess& a);
// `with_data`: the message carries the data (a write's command, a read's reply).
RegionAccess parse_region_access(Reader& r, bool with_data);

// PCI region and interrupt indices (linux/vfio.h numbering).
inline constexpr std::uint32_t kBar0Region = 0;
inline constexpr std::uint32_t kNumPciRegions = 9;  // BAR0-5, ROM, config space, VGA
inline constexpr std::uint32_t kMsixIrqIndex = 2;
inline constexpr std::uint32_t kNumPciIrqs = 5;  // INTx, MSI, MSI-X, ERR, REQ

}  // namespace spyre_dma::vfio

namespace spyre_dma::vfio {

// --- This project's additions, inside the protocol's own extension points ------------------------
//
// The server's VERSION reply carries, beside "capabilities", an object "spyre_dma" describing the
// device it serves: {"backend": "sim", "name": "...", "progress": "self-timed" | "host-driven"}.
// A peer that does not know the key ignores it, as the specification asks.
//
// Three device-specific regions follow the PCI ones, each found by its VFIO_REGION_INFO_CAP_TYPE
// (vendor type kVendorRegionType); a region the served device cannot offer has size 0.
//
// The clock region (index kClockRegion), for a device whose time advances only while its host
// waits (Progress::kHostDriven: sim, rtl):
//   offset 0,  an 8-byte write: the device runs until an interrupt or for at most that many
//              nanoseconds of wall time (Device::wait_for_interrupt); the interrupts it raised are
//              signalled on their eventfds before the write's reply leaves;
//   offset 8,  an 8-byte write: the host copied that many bytes through staging (host_copied);
//   offset 16, an 8-byte read: the device's simulated time in nanoseconds, an IEEE-754 double's
//              bits (the SimulatedClock capability; 0 without one).
// The memory region (index kMemoryRegion): the device's memory behind its back (the
// MemoryBackdoor capability of test benches and scoreboards), offset = physical device address,
// reads and writes of up to kMaxMemoryAccess bytes.
// The misbehaviour region (index kMisbehaveRegion, the MisbehaveControl capability): a 32-byte
// write at offset 0 arms a misbehaviour (device_core::Misbehave): kind, at_cb, rogue_iova and
// rogue_device_offset, 8 bytes each.
// The doorbell region (index kDoorbellRegion), for a client that maps it: one page both processes
// map (its REGION_INFO reply carries the SPARSE_MMAP capability with the whole page, and two file
// descriptors: the page's memory, then the server's wake-up eventfd), holding a log of BAR0
// writes in the order the client made them. The layout and its rules are DoorbellLog's
// (doorbell_log.hpp); reads and writes of the region through messages are refused.
inline constexpr std::uint32_t kVendorRegionType = 0x8000'0000u | hw::kPciVendorIbm;  // PCI vendor type | vendor
inline constexpr std::uint32_t kClockRegion = kNumPciRegions;
inline constexpr std::uint32_t kMemoryRegion = kNumPciRegions + 1;
inline constexpr std::uint32_t kMisbehaveRegion = kNumPciRegions + 2;
inline constexpr std::uint32_t kDoorbellRegion = kNumPciRegions + 3;
inline constexpr std::uint32_t kNumRegions = kNumPciRegions + 4;
inline constexpr std::uint32_t kClockRegionSubtype = 1;
inline constexpr std::uint32_t kMemoryRegionSubtype = 2;
inline constexpr std::uint32_t kMisbehaveRegionSubtype = 3;
inline constexpr std::uint32_t kDoorbellRegionSubtype = 4;
inline constexpr std::uint64_t kDoorbellRegionBytes = 4096;
inline constexpr std::uint64_t kMisbehaveRegionBytes = 32;
inline constexpr std::uint64_t kClockWaitOffset = 0;
inline constexpr std::uint64_t kClockHostCopiedOffset = 8;
inline constexpr std::uint64_t kClockNowOffset = 16;
inline constexpr std::uint64_t kClockRegionBytes = 24;
inline constexpr std::uint32_t kMaxMemoryAccess = 512u << 10;

}  // namespace spyre_dma::vfio
