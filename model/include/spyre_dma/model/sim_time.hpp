// Simulated time as the model counts it: integer picoseconds, and the conversions to and from
// SystemC time that every process of the model (and a data path plugged into it) uses.
#pragma once

#include <cstdint>

#include <systemc>

namespace spyre_dma::model {

using Ps = std::uint64_t;  // picoseconds of simulated time

inline Ps to_ps(const sc_core::sc_time& t) { return static_cast<Ps>(t.value()); }
inline sc_core::sc_time from_ps(Ps ps) { return ps == 0 ? sc_core::SC_ZERO_TIME : sc_core::sc_time::from_value(ps); }
// The kernel's time. Read from the simulation context, inline: sc_time_stamp() is a call into the
// SystemC library, and a TLP reads the clock several times on its way.
inline Ps now_ps() { return to_ps(sc_core::sc_get_curr_simcontext()->time_stamp()); }
// The delay from now to `at` (zero when `at` has passed): what a b_transport call issued at `at`
// carries.
inline sc_core::sc_time delay_until(Ps at) {
  const Ps now = now_ps();
  return from_ps(at > now ? at - now : 0);
}

}  // namespace spyre_dma::model
