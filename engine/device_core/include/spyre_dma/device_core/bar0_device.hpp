// Devices over the core: Bar0Device, whose BAR0 is one access routine taking the width
// (RegisterFile::read / write, or a simulator's queue of posted writes), writes the seam's four
// width-specific calls once; IommuDevice adds map(), map_at() and unmap() through the device's IOMMU.
#pragma once

#include <cstdint>

#include "spyre_dma/device.hpp"
#include "spyre_dma/device_core/iommu.hpp"

namespace spyre_dma::device_core {

class Bar0Device : public Device {
 public:
  std::uint32_t read32(std::uint64_t offset) final { return static_cast<std::uint32_t>(bar0_read(offset, 4)); }
  void write32(std::uint64_t offset, std::uint32_t value) final { bar0_write(offset, value, 4); }
  std::uint64_t read64(std::uint64_t offset) final { return bar0_read(offset, 8); }
  void write64(std::uint64_t offset, std::uint64_t value) final { bar0_write(offset, value, 8); }

 protected:
  // `width` is 4 or 8 bytes; the rules of Device's BAR0 access apply (offsets beyond BAR0 throw
  // std::out_of_range).
  virtual std::uint64_t bar0_read(std::uint64_t offset, unsigned width) = 0;
  virtual void bar0_write(std::uint64_t offset, std::uint64_t value, unsigned width) = 0;
};

// A Bar0Device that reaches host memory through nothing but its Iommu.
class IommuDevice : public Bar0Device {
 public:
  std::uint64_t map(void* host, std::size_t bytes, DmaAccess access) final {
    return device_iommu().map(host, bytes, access);
  }
  std::uint64_t map_at(void* host, std::size_t bytes, DmaAccess access, std::uint64_t iova) final {
    return device_iommu().map_at(host, bytes, access, iova);
  }
  void unmap(std::uint64_t iova) final { device_iommu().unmap(iova); }

 protected:
  virtual Iommu& device_iommu() = 0;
};

}  // namespace spyre_dma::device_core
