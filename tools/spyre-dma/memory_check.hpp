// The memory a command's transfers need, checked before any buffer is allocated: a size the
// device or the host cannot hold is an option error up front, not a process that grows until the
// kernel kills it. One check for every command that allocates transfer buffers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "spyre_dma/engine.hpp"

namespace spyre_dma_cli {

// `device_bytes` of device memory and about `host_bytes` of host memory (the buffers plus what a
// host-resident device backs); returns what is wrong ("--sizes: ..."), empty when both fit (the
// host's within 90% of its RAM).
std::string check_transfer_memory(std::string_view option, std::uint64_t device_bytes, double host_bytes,
                                  const spyre_dma::DeviceLimits& limits);

}  // namespace spyre_dma_cli
