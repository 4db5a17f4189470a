// Conversions between SystemC time and the model's integer picoseconds.
#pragma once

#include <cstdint>
#include <numeric>
#include <systemc>

#include "pcie/link_math.hpp"
#include "pcie/timing.hpp"

namespace spyre_dma::model {

inline pcie::Ps to_ps(const sc_core::sc_time& t) { return static_cast<pcie::Ps>(t.value()); }
inline sc_core::sc_time from_ps(pcie::Ps ps) { return sc_core::sc_time::from_value(ps); }
inline sc_core::sc_time delay_until(pcie::Ps at) {
  const pcie::Ps now = to_ps(sc_core::sc_time_stamp());
  return from_ps(at > now ? at - now : 0);
}

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
