// Time in the PCIe link model: whole picoseconds since the start of the simulation (unsigned
// 64-bit: about 213 days).
#pragma once

#include <cstdint>

namespace spyre_dma::model::pcie {

using Ps = std::uint64_t;
inline constexpr Ps kPsPerNs = 1000;

}  // namespace spyre_dma::model::pcie
