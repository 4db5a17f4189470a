// CB admission: every check a device makes of a fetched CB before it touches any memory
// (docs/programming-model.md, sections 3.7, 4 and 13), in one order and with one set of RB fields
// for every backend:
//   1. decode (kMalformedCb, the decoder's field and raw value);
//   2. pipeline: the work belongs on the queue it came from (field kPipeline, detail = the pipeline
//      the work belongs to);
//   3. byte count of a DMA section above MAX_CB_BYTES (field kDmiLength / kDmoLength, detail = the
//      length in flits);
//   4. XLAT of the device range (kXlatFault, detail = the encoded device VA, field = the VA field);
//   5. device memory bounds of the physical range (kDeviceMemoryFault, detail = the physical byte
//      address);
//   6. the host range through the IOMMU (kIommuFault, field = the host IOVA field, detail = the
//      byte IOVA) for a copy to or from the host, or XLAT and bounds of the source for a device copy.
// What passes is a CbWork: the physical ranges, the host window and what to do, for the backend's
// data path to carry out.
#pragma once

#include <cstdint>
#include <optional>

#include "spyre_dma/device_core/iommu.hpp"
#include "spyre_dma/hw/contract.hpp"

namespace spyre_dma::device_core {

// What the RB reports about a CB (tag, locator, phase and timestamps come from the pipeline).
struct CbOutcome {
  hw::RbStatus status = hw::RbStatus::kGood;
  hw::ErrorKind error = hw::ErrorKind::kNone;
  hw::CbField field = hw::CbField::kNone;
  std::uint64_t detail = 0;
  std::uint64_t bytes = 0;

  static CbOutcome fail(hw::ErrorKind e, hw::CbField f, std::uint64_t d) noexcept {
    return CbOutcome{hw::RbStatus::kError, e, f, d, 0};
  }
  static CbOutcome done(std::uint64_t bytes) noexcept {
    return CbOutcome{hw::RbStatus::kGood, hw::ErrorKind::kNone, hw::CbField::kNone, 0, bytes};
  }
  bool good() const noexcept { return status == hw::RbStatus::kGood; }
};

// The CTRL bits as the raw CB carries them, so that even a malformed CB is answered under its own
// tag (CTRL bits 31:8, possibly outside 1..kMaxTag) and honours its barrier and interrupt bits.
struct CbControl {
  std::uint32_t tag = 0;
  bool barrier = false;
  bool interrupt = false;
};
inline CbControl control_bits(const std::uint8_t* raw) noexcept {
  const std::uint64_t ctrl = hw::load_le64(raw + hw::kCtrlOffset);
  return CbControl{static_cast<std::uint32_t>((ctrl >> 8) & 0xFF'FFFFu), ((ctrl >> 32) & 1u) != 0,
                   ((ctrl >> 33) & 1u) != 0};
}

// The device VA as it travels in the CB and in RB details (segment in bits 29:27, flit offset
// below).
inline std::uint64_t encode_va(hw::DeviceVa va) noexcept {
  return (std::uint64_t(va.segment) << hw::kSegmentOffsetBits) | va.flit_offset;
}

// Where a backend keeps device memory: whether the physical range [phys, phys + bytes) exists,
// and where it lies in the backend's own store.
class DeviceMemoryLayout {
 public:
  virtual std::optional<std::uint64_t> locate(std::uint64_t phys, std::uint64_t bytes) const noexcept = 0;

 protected:
  ~DeviceMemoryLayout() = default;
};

// Device memory as one flat range of `bytes` (refdev, the model): an address is itself.
class FlatMemory final : public DeviceMemoryLayout {
 public:
  explicit FlatMemory(std::uint64_t bytes) noexcept : bytes_(bytes) {}
  std::optional<std::uint64_t> locate(std::uint64_t phys, std::uint64_t n) const noexcept override {
    if (n > bytes_ || phys > bytes_ - n) return std::nullopt;
    return phys;
  }

 private:
  std::uint64_t bytes_;
};

// Checks 1 to 3, which need no translation. nullopt: go on with check_work().
std::optional<CbOutcome> admit(const hw::CbDecodeResult& decoded, hw::Pipeline queue,
                               std::uint64_t max_cb_bytes) noexcept;

// What an admitted CB does, with its ranges checked.
struct CbWork {
  enum class Kind : std::uint8_t { kHostToDevice, kDeviceToHost, kFill, kDeviceCopy, kCompute };
  Kind kind = Kind::kCompute;
  std::uint64_t bytes = 0;
  std::uint64_t device = 0;       // the device range, where DeviceMemoryLayout::locate put it
  std::uint64_t device_phys = 0;  // the same range's physical byte address
  std::uint64_t source = 0;       // kDeviceCopy: the source range, located
  std::uint64_t source_phys = 0;
  std::uint64_t iova = 0;         // host copies: the byte IOVA
  std::uint32_t pattern = 0;      // kFill
  std::uint64_t compute_ns = 0;   // kCompute
  Iommu::Window window;           // host copies: pins the host range while the copy runs
};
struct CheckedCb {
  std::optional<CbOutcome> rejected;
  CbWork work;
};

// Checks 4 to 6 of an admitted CB. `iommu` null: the host range is not checked here (a data path
// that translates each request itself); otherwise the returned window pins it.
CheckedCb check_work(const hw::ControlBlock& cb, const DeviceMemoryLayout& memory, Iommu* iommu) noexcept;

// The host side of a copy, for errors found while it runs: its field and byte IOVA (0 if none).
hw::CbField host_iova_field(const hw::ControlBlock& cb) noexcept;
std::uint64_t host_iova(const hw::ControlBlock& cb) noexcept;

}  // namespace spyre_dma::device_core
