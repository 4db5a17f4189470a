// The card on a real machine, through the kernel's VFIO (vfio-pci): the same Device as vfio-user
// (spyre_dma/vfio/client.hpp), its operations carried by ioctls instead of messages.
//
// Set-up, in the kernel's order: the container (/dev/vfio/vfio, API version, the type-1 IOMMU),
// the card's IOMMU group (/dev/vfio/<group>, which must be viable: every device of the group bound
// to vfio-pci), the group into the container, the IOMMU type, the device file descriptor, its
// info. BAR0 is mapped when the kernel allows it (else read and written through the device file);
// host memory is mapped into the IOMMU at IOVAs this side picks, page by page; MSI-X vectors
// arrive on eventfds. Each failure is a std::runtime_error naming the call, the file and what to do
// (load vfio-pci, enable the IOMMU, fix the group's permissions, free the device from its holder).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "spyre_dma/device.hpp"
#include "spyre_dma/hw/contract.hpp"
#include "spyre_dma/vfio/options.hpp"

namespace spyre_dma::vfio {

// A PCI device as sysfs shows it.
struct PciDevice {
  std::string address;  // "0000:3b:00.0"
  std::uint16_t vendor = 0;
  std::uint16_t device = 0;
  std::string driver;        // "vfio-pci", "" when unbound
  int iommu_group = -1;      // -1: no IOMMU group (the IOMMU is off)
};

// Every PCI device under `sysfs` (/sys on a real machine) whose IDs match (0: any); by default the
// vendor's (the card's physical and virtual functions).
std::vector<PciDevice> list_pci_devices(std::uint16_t vendor = hw::kPciVendorIbm, std::uint16_t device = 0,
                                        const std::string& sysfs = "/sys");

// One device by `selector`: a PCI address ("0000:3b:00.0" or "3b:00.0"), or IDs "vendor:device"
// in hex ("1014:06a7", the first such device). Throws std::runtime_error naming the selector and
// listing what was found.
PciDevice select_pci_device(const std::string& selector, const std::string& sysfs = "/sys");

// Opens the card at `selector` through VFIO. Throws std::runtime_error (see above).
std::shared_ptr<Device> open_card(const std::string& selector, const std::string& sysfs = "/sys",
                                  InterruptMode interrupts = InterruptMode::kEventfds);

}  // namespace spyre_dma::vfio
