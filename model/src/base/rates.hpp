// Rates in the model's integer picoseconds (simulated time itself, to_ps, from_ps and delay_until, is
// public: spyre_dma/model/sim_time.hpp).
#pragma once

#include <cstdint>
#include <numeric>
#include <systemc>

#include "pcie/link_math.hpp"
#include "pcie/timing.hpp"
#include "spyre_dma/model/sim_time.hpp"

namespace spyre_dma::model {


// The time per byte of a bandwidth given in GB/s (10^9 bytes per second = bytes per ns):
// 1000 / gbps ps per byte, as an exact ratio with a millionth of a GB/s resolution.
inline pcie::PsPerByte rate_for_gbps(double gbps) {
  const auto micro = static_cast<std::uint64_t>(gbps * 1e6 + 0.5);
  pcie::PsPerByte r;
  r.num = 1'000'000'000ull;  // 1000 ps x 10^6
  r.den = micro ? micro : 1;
  const std::uint64_t g = std::gcd(r.num, r.den);
  r.num /= g;
  r.den /= g;
  return r;
}

}  // namespace spyre_dma::model
