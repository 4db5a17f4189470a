// Offset decode of the register map and the identity registers (see register_map.hpp and
// register_file.hpp).
#include <sstream>
#include <stdexcept>

#include "spyre_dma/device_core/register_file.hpp"
#include "spyre_dma/device_core/register_map.hpp"

namespace spyre_dma::device_core {
namespace {

namespace reg = hw::reg;

constexpr std::uint64_t kGlobalEnd = 0x120;  // past FATAL_DETAIL
constexpr std::uint64_t kPipeEnd = reg::kPipeBase + hw::kNumPipelines * reg::kPipeStride;
constexpr std::uint8_t kNone = 0xFF;

// Per 4-byte word of an address range: the register index and the half it is, or kNone.
struct Slot {
  std::uint8_t reg = kNone;
  std::uint8_t half = 0;
};
template <std::size_t Words>
struct Decoder {
  std::array<Slot, Words> slots{};
};

template <std::size_t Words>
constexpr Decoder<Words> make_decoder(std::size_t first, std::size_t last) {
  Decoder<Words> d;
  for (std::size_t i = first; i < last; ++i) {
    const RegisterSpec& s = kRegisterMap[i];
    for (unsigned h = 0; h < s.width / 4; ++h) {
      d.slots[s.offset / 4 + h] = Slot{static_cast<std::uint8_t>(i), static_cast<std::uint8_t>(h)};
    }
  }
  return d;
}

constexpr auto kGlobal = make_decoder<kGlobalEnd / 4>(0, kNumGlobalRegs);
constexpr auto kPipe = make_decoder<reg::kPipeStride / 4>(kFirstPipeReg, kNumRegs);

}  // namespace

std::optional<RegisterAt> register_at(std::uint64_t offset) noexcept {
  if (offset % 4 != 0) return std::nullopt;
  Slot s;
  hw::Pipeline p = hw::Pipeline::kCompute;
  if (offset < kGlobalEnd) {
    s = kGlobal.slots[offset / 4];
  } else if (offset >= reg::kPipeBase && offset < kPipeEnd) {
    p = static_cast<hw::Pipeline>((offset - reg::kPipeBase) / reg::kPipeStride);
    s = kPipe.slots[(offset - reg::kPipeBase) % reg::kPipeStride / 4];
  }
  if (s.reg == kNone) return std::nullopt;
  return RegisterAt{static_cast<Reg>(s.reg), p, s.half};
}

std::uint64_t identity_value(const DeviceIdentity& id, Reg r) noexcept {
  switch (r) {
    case Reg::kCapabilities: return id.capabilities;
    case Reg::kDepthCompute: return id.depth[0];
    case Reg::kDepthDmai: return id.depth[1];
    case Reg::kDepthDmao: return id.depth[2];
    case Reg::kMaxCbBytes: return id.max_cb_bytes;
    case Reg::kDeviceMemBytes: return id.memory_bytes;
    case Reg::kDeviceMemUsable: return id.usable_bytes;
    default: return 0;
  }
}

void validate(const DeviceIdentity& id, std::string_view who) {
  const std::string w(who);
  for (unsigned p = 0; p < hw::kNumPipelines; ++p) {
    if (!hw::is_power_of_two(id.depth[p])) {
      throw std::invalid_argument(w + ": depth of " + std::string(hw::to_string(static_cast<hw::Pipeline>(p))) +
                                  " must be a power of two, not " + std::to_string(id.depth[p]));
    }
  }
  if (id.memory_bytes == 0) throw std::invalid_argument(w + ": device memory of 0 bytes");
  if (id.usable_bytes > id.memory_bytes) {
    throw std::invalid_argument(w + ": usable bytes " + std::to_string(id.usable_bytes) + " exceed the " +
                                std::to_string(id.memory_bytes) + " bytes of device memory");
  }
  if (id.max_cb_bytes == 0) throw std::invalid_argument(w + ": max_cb_bytes is zero");
}

void check_bar0_access(std::uint64_t offset, unsigned width, bool write, std::string_view who) {
  if (offset < reg::kBar0Bytes && reg::kBar0Bytes - offset >= width) return;
  std::ostringstream msg;
  msg << who << ": " << (write ? "write" : "read") << width * 8 << " at offset 0x" << std::hex << offset
      << " lies beyond BAR0 (0x" << reg::kBar0Bytes << " bytes)";
  throw std::out_of_range(msg.str());
}

}  // namespace spyre_dma::device_core
