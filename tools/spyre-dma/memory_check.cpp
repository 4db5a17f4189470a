#include "memory_check.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include "size_spec.hpp"

namespace spyre_dma_cli {

std::string check_transfer_memory(std::string_view option, std::uint64_t device_bytes, double host_bytes,
                                  const spyre_dma::DeviceLimits& limits) {
  if (device_bytes > limits.device_memory_usable) {
    return fmt::format("{}: {} exceeds the device's usable memory ({})", option, format_size(device_bytes),
                       format_size(limits.device_memory_usable));
  }
  const double host_ram = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  if (host_ram > 0 && host_bytes > 0.9 * host_ram) {
    return fmt::format("{}: needs about {:.1f} GiB of host memory, this machine has {:.1f} GiB", option,
                       host_bytes / (1u << 30), host_ram / (1u << 30));
  }
  return {};
}

}  // namespace spyre_dma_cli
