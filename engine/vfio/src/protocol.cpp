// The vfio-user codec (see spyre_dma/vfio/protocol.hpp).
#include "spyre_dma/vfio/protocol.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "spyre_dma/hex.hpp"

namespace spyre_dma::vfio {
namespace {

template <class T>
T load_le(const std::uint8_t* p) noexcept {
  T v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) v = static_cast<T>(v | (static_cast<T>(p[i]) << (8 * i)));
  return v;
}

template <class T>
void store_le(std::uint8_t* p, T v) noexcept {
  for (std::size_t i = 0; i < sizeof(T); ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

// Region capabilities (linux/vfio.h numbering), each a header (id, version, next) and its fields.
// SPARSE_MMAP: the number of areas, a reserved word, then each area's offset and size.
constexpr std::uint16_t kCapSparseMmapId = 1;
constexpr std::uint32_t kCapSparseMmapBytes = 16;  // without its areas
constexpr std::uint32_t kSparseAreaBytes = 16;
// TYPE: the type and subtype.
constexpr std::uint16_t kCapTypeId = 2;
constexpr std::uint32_t kCapTypeBytes = 16;

}  // namespace

const char* to_string(Command c) noexcept {
  switch (c) {
    case Command::kVersion: return "VFIO_USER_VERSION";
    case Command::kDmaMap: return "VFIO_USER_DMA_MAP";
    case Command::kDmaUnmap: return "VFIO_USER_DMA_UNMAP";
    case Command::kDeviceGetInfo: return "VFIO_USER_DEVICE_GET_INFO";
    case Command::kDeviceGetRegionInfo: return "VFIO_USER_DEVICE_GET_REGION_INFO";
    case Command::kDeviceGetRegionIoFds: return "VFIO_USER_DEVICE_GET_REGION_IO_FDS";
    case Command::kDeviceGetIrqInfo: return "VFIO_USER_DEVICE_GET_IRQ_INFO";
    case Command::kDeviceSetIrqs: return "VFIO_USER_DEVICE_SET_IRQS";
    case Command::kRegionRead: return "VFIO_USER_REGION_READ";
    case Command::kRegionWrite: return "VFIO_USER_REGION_WRITE";
    case Command::kDmaRead: return "VFIO_USER_DMA_READ";
    case Command::kDmaWrite: return "VFIO_USER_DMA_WRITE";
    case Command::kDeviceReset: return "VFIO_USER_DEVICE_RESET";
  }
  return "an unknown command";
}

Header parse_header(const std::uint8_t* bytes, std::size_t n) {
  if (n < kHeaderBytes) {
    throw ProtocolError("vfio-user: a message of " + std::to_string(n) + " bytes is shorter than its 16-byte header");
  }
  Header h;
  h.id = load_le<std::uint16_t>(bytes);
  h.command = static_cast<Command>(load_le<std::uint16_t>(bytes + 2));
  h.size = load_le<std::uint32_t>(bytes + 4);
  h.flags = load_le<std::uint32_t>(bytes + 8);
  h.error = load_le<std::uint32_t>(bytes + 12);
  const std::string which = "vfio-user: message " + std::to_string(h.id) + " (command " +
                            std::to_string(static_cast<unsigned>(h.command)) + ")";
  if (h.size < kHeaderBytes || h.size > kMaxMessageBytes) {
    throw ProtocolError(which + ": field msg_size is " + std::to_string(h.size) + ", outside [16, " +
                        std::to_string(kMaxMessageBytes) + "]");
  }
  if ((h.flags & kFlagTypeMask) > kFlagReply) {
    throw ProtocolError(which + ": field flags.type is " + std::to_string(h.flags & kFlagTypeMask) +
                        ", neither command (0) nor reply (1)");
  }
  return h;
}

void write_header(const Header& h, std::uint8_t* out) noexcept {
  store_le(out, h.id);
  store_le(out + 2, static_cast<std::uint16_t>(h.command));
  store_le(out + 4, h.size);
  store_le(out + 8, h.flags);
  store_le(out + 12, h.error);
}

void Reader::need(std::size_t k, const char* field) const {
  if (k > n_ - at_) {
    throw ProtocolError(std::string("vfio-user: ") + to_string(command_) + ": field " + field + " needs " +
                        std::to_string(k) + " bytes at payload offset " + std::to_string(at_) + ", but the payload has " +
                        std::to_string(n_));
  }
}
std::uint16_t Reader::u16(const char* field) {
  need(2, field);
  const auto v = load_le<std::uint16_t>(data_ + at_);
  at_ += 2;
  return v;
}
std::uint32_t Reader::u32(const char* field) {
  need(4, field);
  const auto v = load_le<std::uint32_t>(data_ + at_);
  at_ += 4;
  return v;
}
std::uint64_t Reader::u64(const char* field) {
  need(8, field);
  const auto v = load_le<std::uint64_t>(data_ + at_);
  at_ += 8;
  return v;
}
const std::uint8_t* Reader::bytes(std::size_t n, const char* field) {
  need(n, field);
  const std::uint8_t* p = data_ + at_;
  at_ += n;
  return p;
}
void Reader::bad(const char* field, std::uint64_t value, const std::string& why) const {
  throw ProtocolError(std::string("vfio-user: ") + to_string(command_) + ": field " + field + " is " + hex(value) +
                      ": " + why);
}

Writer& Writer::u16(std::uint16_t v) {
  std::uint8_t b[2];
  store_le(b, v);
  return bytes(b, 2);
}
Writer& Writer::u32(std::uint32_t v) {
  std::uint8_t b[4];
  store_le(b, v);
  return bytes(b, 4);
}
Writer& Writer::u64(std::uint64_t v) {
  std::uint8_t b[8];
  store_le(b, v);
  return bytes(b, 8);
}
Writer& Writer::bytes(const void* p, std::size_t n) {
  const auto* b = static_cast<const std::uint8_t*>(p);
  out_.insert(out_.end(), b, b + n);
  return *this;
}

std::vector<std::uint8_t> encode(const Version& v) {
  Writer w;
  w.u16(v.major).u16(v.minor).bytes(v.capabilities_json.data(), v.capabilities_json.size());
  const std::uint8_t nul = 0;
  w.bytes(&nul, 1);  // the JSON string is NUL-terminated
  return w.take();
}

Version parse_version(Reader& r) {
  Version v;
  v.major = r.u16("major");
  v.minor = r.u16("minor");
  const std::size_t n = r.left();
  const auto* p = reinterpret_cast<const char*>(r.bytes(n, "version data"));
  std::size_t len = 0;
  while (len < n && p[len] != '\0') ++len;  // up to the NUL (or the end, for a peer that sends none)
  v.capabilities_json.assign(p, len);
  return v;
}

std::vector<std::uint8_t> encode(const DmaMap& m) {
  return Writer().u32(32).u32(m.flags).u64(m.offset).u64(m.address).u64(m.size).take();
}

DmaMap parse_dma_map(Reader& r) {
  const std::uint32_t argsz = r.u32("argsz");
  if (argsz < 32) r.bad("argsz", argsz, "below the 32 bytes of struct vfio_user_dma_map");
  DmaMap m;
  m.flags = r.u32("flags");
  m.offset = r.u64("offset");
  m.address = r.u64("address");
  m.size = r.u64("size");
  if ((m.flags & ~(kDmaRead | kDmaWrite)) != 0) r.bad("flags", m.flags, "only READ (1) and WRITE (2) are defined");
  if ((m.flags & (kDmaRead | kDmaWrite)) == 0) r.bad("flags", m.flags, "a mapping the device can neither read nor write");
  if (m.size == 0) r.bad("size", 0, "an empty mapping");
  if (m.address + m.size < m.address) r.bad("size", m.size, "the range wraps past the end of the IOVA space");
  return m;
}

std::vector<std::uint8_t> encode(const DmaUnmap& m) {
  return Writer().u32(24).u32(m.flags).u64(m.address).u64(m.size).take();
}

DmaUnmap parse_dma_unmap(Reader& r) {
  const std::uint32_t argsz = r.u32("argsz");
  if (argsz < 24) r.bad("argsz", argsz, "below the 24 bytes of struct vfio_user_dma_unmap");
  DmaUnmap m;
  m.flags = r.u32("flags");
  m.address = r.u64("address");
  m.size = r.u64("size");
  if (m.flags != 0) r.bad("flags", m.flags, "no unmap flag (dirty bitmaps, unmap all) is supported");
  return m;
}

std::vector<std::uint8_t> encode(const DeviceInfo& i) {
  return Writer().u32(16).u32(i.flags).u32(i.num_regions).u32(i.num_irqs).take();
}

DeviceInfo parse_device_info(Reader& r) {
  const std::uint32_t argsz = r.u32("argsz");
  if (argsz < 16) r.bad("argsz", argsz, "below the 16 bytes of struct vfio_user_device_info");
  DeviceInfo i;
  i.flags = r.u32("flags");
  i.num_regions = r.u32("num_regions");
  i.num_irqs = r.u32("num_irqs");
  return i;
}

std::vector<std::uint8_t> encode(const RegionInfo& i) {
  // The capabilities follow the struct: TYPE first, then SPARSE_MMAP, each pointing to the next.
  const std::uint32_t type_at = kRegionInfoBytes;
  const std::uint32_t sparse_at = i.has_type ? type_at + kCapTypeBytes : type_at;
  const bool sparse = !i.sparse_areas.empty();
  const auto sparse_bytes = static_cast<std::uint32_t>(kCapSparseMmapBytes + kSparseAreaBytes * i.sparse_areas.size());
  const std::uint32_t end = sparse ? sparse_at + sparse_bytes : sparse_at;
  const bool caps = end != kRegionInfoBytes;
  const std::uint32_t argsz = caps ? end : std::max(i.argsz, kRegionInfoBytes);
  const std::uint32_t flags = caps ? i.flags | kRegionCaps : i.flags;
  Writer w;
  w.u32(argsz).u32(flags).u32(i.index).u32(caps ? kRegionInfoBytes : 0).u64(i.size).u64(i.offset);
  if (i.has_type) w.u16(kCapTypeId).u16(1).u32(sparse ? sparse_at : 0).u32(i.type).u32(i.subtype);
  if (sparse) {
    w.u16(kCapSparseMmapId).u16(1).u32(0).u32(static_cast<std::uint32_t>(i.sparse_areas.size())).u32(0);
    for (const SparseArea& a : i.sparse_areas) w.u64(a.offset).u64(a.size);
  }
  return w.take();
}

RegionInfo parse_region_info(Reader& r) {
  RegionInfo i;
  i.argsz = r.u32("argsz");
  if (i.argsz < kRegionInfoBytes) r.bad("argsz", i.argsz, "below the 32 bytes of struct vfio_region_info");
  i.flags = r.u32("flags");
  i.index = r.u32("index");
  i.cap_offset = r.u32("cap_offset");
  i.size = r.u64("size");
  i.offset = r.u64("offset");
  if ((i.flags & kRegionCaps) == 0 || i.cap_offset == 0) return i;
  // The capability chain: TYPE and SPARSE_MMAP are read; others are skipped by their next offsets.
  std::size_t at = i.cap_offset;
  for (int hops = 0; at != 0; ++hops) {
    if (hops > 16) r.bad("cap_offset", at, "the capability chain does not end");
    if (at < kRegionInfoBytes || at % 4 != 0) r.bad("cap_offset", at, "a capability must follow the 32-byte struct, 4-byte aligned");
    const std::size_t skip = at - kRegionInfoBytes;
    Reader cap = r;  // read from the start of the capability area
    cap.bytes(skip, "capability chain");
    const std::uint16_t id = cap.u16("capability id");
    cap.u16("capability version");
    const std::uint32_t next = cap.u32("capability next");
    if (id == kCapTypeId) {
      i.has_type = true;
      i.type = cap.u32("capability type");
      i.subtype = cap.u32("capability subtype");
    } else if (id == kCapSparseMmapId) {
      const std::uint32_t n = cap.u32("sparse mmap nr_areas");
      if (n > kMaxSparseAreas) cap.bad("sparse mmap nr_areas", n, "more areas than " + std::to_string(kMaxSparseAreas));
      cap.u32("sparse mmap reserved");
      i.sparse_areas.clear();
      for (std::uint32_t k = 0; k < n; ++k) {
        SparseArea a;
        a.offset = cap.u64("sparse mmap area offset");
        a.size = cap.u64("sparse mmap area size");
        if (a.size > i.size || a.offset > i.size - a.size) {
          cap.bad("sparse mmap area offset", a.offset, "the area of " + std::to_string(a.size) +
                                                          " bytes lies outside the region's " + std::to_string(i.size));
        }
        i.sparse_areas.push_back(a);
      }
    }
    if (next != 0 && next <= at) r.bad("capability next", next, "a capability must point forwards");
    at = next;
  }
  return i;
}

std::vector<std::uint8_t> encode(const IrqInfo& i) { return Writer().u32(16).u32(i.flags).u32(i.index).u32(i.count).take(); }

IrqInfo parse_irq_info(Reader& r) {
  const std::uint32_t argsz = r.u32("argsz");
  if (argsz < 16) r.bad("argsz", argsz, "below the 16 bytes of struct vfio_irq_info");
  IrqInfo i;
  i.flags = r.u32("flags");
  i.index = r.u32("index");
  i.count = r.u32("count");
  return i;
}

std::vector<std::uint8_t> encode(const IrqSet& s) {
  return Writer().u32(20).u32(s.flags).u32(s.index).u32(s.start).u32(s.count).take();
}

IrqSet parse_irq_set(Reader& r) {
  const std::uint32_t argsz = r.u32("argsz");
  if (argsz < 20) r.bad("argsz", argsz, "below the 20 bytes of struct vfio_irq_set");
  IrqSet s;
  s.flags = r.u32("flags");
  s.index = r.u32("index");
  s.start = r.u32("start");
  s.count = r.u32("count");
  const std::uint32_t data = s.flags & (kIrqDataNone | kIrqDataBool | kIrqDataEventfd);
  const std::uint32_t action = s.flags & (kIrqActionMask | kIrqActionUnmask | kIrqActionTrigger);
  if ((data & (data - 1)) != 0 || data == 0) r.bad("flags", s.flags, "exactly one DATA_ flag is needed");
  if ((action & (action - 1)) != 0 || action == 0) r.bad("flags", s.flags, "exactly one ACTION_ flag is needed");
  if ((s.flags & ~(kIrqDataNone | kIrqDataBool | kIrqDataEventfd | kIrqActionMask | kIrqActionUnmask |
                   kIrqActionTrigger)) != 0) {
    r.bad("flags", s.flags, "undefined bits are set");
  }
  if (s.start + s.count < s.start) r.bad("count", s.count, "start + count wraps");
  return s;
}

std::vector<std::uint8_t> encode(const RegionAccess& a) {
  Writer w;
  w.u64(a.offset).u32(a.region).u32(a.count);
  if (!a.data.empty()) w.bytes(a.data.data(), a.data.size());
  return w.take();
}

RegionAccess parse_region_access(Reader& r, bool with_data) {
  RegionAccess a;
  a.offset = r.u64("offset");
  a.region = r.u32("region");
  a.count = r.u32("count");
  if (a.count > kMaxMessageBytes) r.bad("count", a.count, "larger than a message");
  if (with_data) {
    const std::uint8_t* p = r.bytes(a.count, "data");
    a.data.assign(p, p + a.count);
  }
  return a;
}

}  // namespace spyre_dma::vfio
