// VFIO's operations as the kernel's ioctls (see spyre_dma/vfio/kernel.hpp), through Syscalls.
#pragma once

#include <memory>
#include <string>

#include "spyre_dma/vfio/kernel.hpp"
#include "syscalls.hpp"
#include "vfio_device.hpp"

namespace spyre_dma::vfio {

// Runs the set-up sequence for `device` (its IOMMU group known) with `sys`. Throws
// std::runtime_error naming the call that failed.
std::unique_ptr<Transport> open_kernel_transport(Syscalls& sys, const PciDevice& device);

}  // namespace spyre_dma::vfio
