// Simulated time as the model counts it: integer picoseconds, and the conversions to and from
// SystemC time that every process of the model (and a data path plugged into it) uses.
#pragma once

#include <cstdint>

#include <systemc>

namespace spyre_dma::model {

using Ps = std::uint64_t;  // picoseconds of simulated time

inline Ps to_ps(const sc_core::sc_time& t) { return static_cast<Ps>(t.value()); }
inline sc_core::sc_time from_ps(Ps ps) { return sc_core::sc_time::from_value(ps); }
// The delay from now to `at` (zero when `at` has passed): what a b_transport call issued at `at`
// carries.
inline sc_core::sc_time delay_until(Ps at) {
  const Ps now = to_ps(sc_core::sc_time_stamp());
  return from_ps(at > now ? at - now : 0);
}

}  // namespace spyre_dma::model
