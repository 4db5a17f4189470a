// The BAR0 register map of the contract as one table: every register's offset, width, access rule,
// write mask and value after reset, once for every backend. docs/programming-model.md (section 10)
// shows the same registers; a unit test (testbench/unit/device_core) holds the two together.
//
// Offsets and bit names stay in spyre_dma/hw/contract.hpp (hw::reg), which the engine uses; this
// table adds what a device needs to apply the access rules: which registers a host may write and
// how, which ones the device owns, what reset does to each. RegisterFile (register_file.hpp) is
// the one routine that applies it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "spyre_dma/hw/contract.hpp"

namespace spyre_dma::device_core {

// Every register, global ones first, then the registers each pipeline has once.
enum class Reg : std::uint8_t {
  kId,
  kVersion,
  kCapabilities,
  kDepthCompute,
  kDepthDmai,
  kDepthDmao,
  kMaxCbBytes,
  kNumTags,
  kDeviceMemBytes,
  kDeviceMemUsable,
  kTimestampNs,
  kControl,
  kStatus,
  kFatalCause,
  kFatalDetail,
  kCbRingBase,  // the first per-pipeline register
  kCbRingSize,
  kCbPi,
  kCbCi,
  kRbRingBase,
  kRbRingSize,
  kRbPi,
  kRbCi,
  kIrqEnable,
  kIrqVector,
  kErrorStatus,
  kQueueControl,
};
inline constexpr std::size_t kNumRegs = 27;
inline constexpr std::size_t kFirstPipeReg = static_cast<std::size_t>(Reg::kCbRingBase);
inline constexpr std::size_t kNumGlobalRegs = kFirstPipeReg;
inline constexpr std::size_t kNumPipeRegs = kNumRegs - kFirstPipeReg;

inline constexpr bool per_pipeline(Reg r) noexcept { return static_cast<std::size_t>(r) >= kFirstPipeReg; }

// What a host write does.
enum class Access : std::uint8_t {
  kReadOnly,     // ignored (and counted as a bad access)
  kReadWrite,    // stores value & write_mask
  kWrite1Clear,  // any nonzero value clears the register; zero changes nothing
};

// Where a read's value comes from.
enum class Source : std::uint8_t {
  kConstant,  // the contract's own constant (reset_value)
  kIdentity,  // what this device is: depths, memory, capabilities (DeviceIdentity)
  kStored,    // the register's storage: written by the host (RW, W1C) or by the device (RO)
  kClock,     // the device clock (TIMESTAMP_NS)
  kStatus,    // composed from CONTROL.ENABLE and the device's condition (compose_status)
};

struct RegisterSpec {
  Reg id;
  std::string_view name;  // as docs/programming-model.md writes it
  std::uint64_t offset;   // global: the BAR0 offset; per pipeline: the offset within its block
  unsigned width;         // bytes: 4 or 8
  Access access;
  Source source;
  std::uint64_t write_mask;   // kReadWrite: the bits a host write sets
  std::uint64_t reset_value;  // kConstant: the value; kStored: the value after power-on and reset
};

// clang-format off
inline constexpr std::array<RegisterSpec, kNumRegs> kRegisterMap = {{
  // id                    name                 offset                        width access               source             write_mask            reset_value
  {Reg::kId,              "ID",                hw::reg::kId,                  4, Access::kReadOnly,    Source::kConstant, 0, (std::uint64_t{hw::kPciDeviceSpyrePf} << 16) | hw::kPciVendorIbm},
  {Reg::kVersion,         "VERSION",           hw::reg::kVersion,             4, Access::kReadOnly,    Source::kConstant, 0, hw::kContractVersion},
  {Reg::kCapabilities,    "CAPABILITIES",      hw::reg::kCapabilities_64,     8, Access::kReadOnly,    Source::kIdentity, 0, 0},
  {Reg::kDepthCompute,    "DEPTH_COMPUTE",     hw::reg::kDepthCompute,        4, Access::kReadOnly,    Source::kIdentity, 0, 0},
  {Reg::kDepthDmai,       "DEPTH_DMAI",        hw::reg::kDepthDmai,           4, Access::kReadOnly,    Source::kIdentity, 0, 0},
  {Reg::kDepthDmao,       "DEPTH_DMAO",        hw::reg::kDepthDmao,           4, Access::kReadOnly,    Source::kIdentity, 0, 0},
  {Reg::kMaxCbBytes,      "MAX_CB_BYTES",      hw::reg::kMaxCbBytes,          4, Access::kReadOnly,    Source::kIdentity, 0, 0},
  {Reg::kNumTags,         "NUM_TAGS",          hw::reg::kNumTags,             4, Access::kReadOnly,    Source::kConstant, 0, hw::kMaxTag},
  {Reg::kDeviceMemBytes,  "DEVICE_MEM_BYTES",  hw::reg::kDeviceMemBytes_64,   8, Access::kReadOnly,    Source::kIdentity, 0, 0},
  {Reg::kDeviceMemUsable, "DEVICE_MEM_USABLE", hw::reg::kDeviceMemUsable_64,  8, Access::kReadOnly,    Source::kIdentity, 0, 0},
  {Reg::kTimestampNs,     "TIMESTAMP_NS",      hw::reg::kTimestampNs_64,      8, Access::kReadOnly,    Source::kClock,    0, 0},
  {Reg::kControl,         "CONTROL",           hw::reg::kControl,             4, Access::kReadWrite,   Source::kStored,   hw::kControlEnable, 0},
  {Reg::kStatus,          "STATUS",            hw::reg::kStatus,              4, Access::kReadOnly,    Source::kStatus,   0, 0},
  {Reg::kFatalCause,      "FATAL_CAUSE",       hw::reg::kFatalCause,          4, Access::kReadOnly,    Source::kStored,   0, 0},
  {Reg::kFatalDetail,     "FATAL_DETAIL",      hw::reg::kFatalDetail_64,      8, Access::kReadOnly,    Source::kStored,   0, 0},
  {Reg::kCbRingBase,      "CB_RING_BASE",      hw::reg::kCbRingBase_64,       8, Access::kReadWrite,   Source::kStored,   ~std::uint64_t{0}, 0},
  {Reg::kCbRingSize,      "CB_RING_SIZE",      hw::reg::kCbRingSize,          4, Access::kReadWrite,   Source::kStored,   0xFFFF'FFFF, 0},
  {Reg::kCbPi,            "CB_PI",             hw::reg::kCbPi,                4, Access::kReadWrite,   Source::kStored,   0xFFFF'FFFF, 0},
  {Reg::kCbCi,            "CB_CI",             hw::reg::kCbCi,                4, Access::kReadOnly,    Source::kStored,   0, 0},
  {Reg::kRbRingBase,      "RB_RING_BASE",      hw::reg::kRbRingBase_64,       8, Access::kReadWrite,   Source::kStored,   ~std::uint64_t{0}, 0},
  {Reg::kRbRingSize,      "RB_RING_SIZE",      hw::reg::kRbRingSize,          4, Access::kReadWrite,   Source::kStored,   0xFFFF'FFFF, 0},
  {Reg::kRbPi,            "RB_PI",             hw::reg::kRbPi,                4, Access::kReadOnly,    Source::kStored,   0, 0},
  {Reg::kRbCi,            "RB_CI",             hw::reg::kRbCi,                4, Access::kReadWrite,   Source::kStored,   0xFFFF'FFFF, 0},
  {Reg::kIrqEnable,       "IRQ_ENABLE",        hw::reg::kIrqEnable,           4, Access::kReadWrite,   Source::kStored,   1, 0},
  {Reg::kIrqVector,       "IRQ_VECTOR",        hw::reg::kIrqVector,           4, Access::kReadWrite,   Source::kStored,   0xFFFF'FFFF, 0},
  {Reg::kErrorStatus,     "ERROR_STATUS",      hw::reg::kErrorStatus,         4, Access::kWrite1Clear, Source::kStored,   0, 0},
  {Reg::kQueueControl,    "QUEUE_CONTROL",     hw::reg::kQueueControl,        4, Access::kReadWrite,   Source::kStored,   hw::kQueueEnable, 0},
}};
// clang-format on

inline constexpr const RegisterSpec& spec(Reg r) noexcept { return kRegisterMap[static_cast<std::size_t>(r)]; }

// The BAR0 offset of a register (of pipeline p, for a per-pipeline one).
inline constexpr std::uint64_t offset_of(Reg r, hw::Pipeline p = hw::Pipeline::kCompute) noexcept {
  return per_pipeline(r) ? hw::reg::pipe(p, spec(r).offset) : spec(r).offset;
}

// What a 4-byte aligned BAR0 offset addresses: a register (of a pipeline), and which 4-byte half
// of it (0: the low half, or the whole of a 32-bit register; 1: the high half of a 64-bit one).
struct RegisterAt {
  Reg reg;
  hw::Pipeline pipeline;
  unsigned half;
};
// nullopt for an unassigned or misaligned offset.
std::optional<RegisterAt> register_at(std::uint64_t offset) noexcept;

// STATUS from CONTROL.ENABLE and the device's condition: READY while enabled, not resetting and
// not fatal; RESETTING and FATAL as they are. The bits combine (a device resetting after a fatal
// fault reads RESETTING | FATAL until the reset clears FATAL).
inline constexpr std::uint32_t compose_status(bool enabled, bool resetting, bool fatal) noexcept {
  return (enabled && !resetting && !fatal ? std::uint32_t{hw::kStatusReady} : 0u) |
         (resetting ? std::uint32_t{hw::kStatusResetting} : 0u) | (fatal ? std::uint32_t{hw::kStatusFatal} : 0u);
}

}  // namespace spyre_dma::device_core
