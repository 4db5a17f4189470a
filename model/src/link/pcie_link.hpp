// The PCIe link between the device and the root complex, at TLP level: each direction is its own
// serializer (TLP framing, headers and the DLLP/SKP overhead of the pcie-bench arithmetic, exact
// over a run), flow-control credits of the receiving side with their update latency, the one-way
// latency, and optional LCRC errors that cost a replay. Requests come from the device through
// `device_side` (the device is the bus master both ways) and go on to the root complex through
// `host_side`; read completions come back as the return of the read's b_transport, and the link
// charges them on the downstream serializer.
//
// Loosely timed with temporal decoupling: a b_transport's annotated delay says when the requester
// hands the TLP over, and on return when the requester is done with it (a posted write: once it
// left the wire; a read: once its last completion arrived). Requests may come out of time order
// from decoupled initiators; the serializers fill the earliest free gap, so the schedule does not
// depend on the order of calls within a quantum.
//
// In burst fidelity one transaction stands for every TLP of a transfer; the same arithmetic is
// applied to the run as a whole (see docs/model.md for the read formula and its agreement bound).
#pragma once

#include <array>
#include <cstdint>
#include <random>
#include <string>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include "link/protocol_checker.hpp"
#include "pcie/link_math.hpp"
#include "pcie/timing.hpp"
#include "sim/debug_hooks.hpp"
#include "spyre_dma/model/sim_config.hpp"

namespace spyre_dma::model {

struct LinkCounters {
  std::uint64_t mwr = 0, mrd = 0, cpld = 0, cpl = 0;  // TLPs (burst mode: the TLPs stood for)
  std::uint64_t up_bytes = 0, down_bytes = 0;         // wire bytes incl. framing
  std::uint64_t payload_up = 0, payload_down = 0;
  std::uint64_t credit_stalls = 0;  // TLPs that waited for credits
  pcie::Ps credit_stall_ps = 0;
  std::uint64_t replays = 0;
  std::uint64_t transactions = 0;   // b_transport calls
};

class TraceWriter;
class StateProbe;

class PcieLink : public sc_core::sc_module {
 public:
  tlm_utils::simple_target_socket<PcieLink> device_side;
  tlm_utils::simple_initiator_socket<PcieLink> host_side;

  // `link`: this hop's own parameters (a device's link, or a switch's uplink). `beyond_ps`: the
  // unloaded round trip the hops between its host end and the root complex add to a read (the
  // burst formula's). `salt` sets its own LCRC draws apart from other links' with the same seed.
  // `shared`: a switch's uplink, whose calendars hold several devices' traffic booked a CB ahead
  // each, so they keep a longer history (a short one would give up gaps that are still ahead).
  PcieLink(sc_core::sc_module_name name, const SimConfig& config, const LinkConfig& link, pcie::Ps beyond_ps = 0,
           std::uint64_t salt = 0, bool shared = false);

  const pcie::LinkParams& params() const noexcept { return params_; }
  const LinkCounters& counters() const noexcept { return counters_; }
  ProtocolChecker& checker() noexcept { return checker_; }
  pcie::Ps latency_ps() const noexcept { return latency_ps_; }
  pcie::Ps up_busy_ps() const noexcept { return up_.busy_ps() + up_requests_.busy_ps(); }
  pcie::Ps down_busy_ps() const noexcept { return down_.busy_ps(); }
  // Drops serializer and credit history before `ps` (nothing can be booked before now anyway).
  void prune(pcie::Ps ps);
  // One span per TLP on an "up" and a "down" track (large: every TLP of the run); `owner` names
  // the link's device or switch where a server has several ("": the one device).
  void trace_tlps(TraceWriter& trace, const std::string& owner = {});
  // Peer-to-peer traffic that crosses this link on its way between two endpoints below the root
  // complex (a NIC writing into a device's memory): the run of MWr TLPs (or of CplD answering a
  // peer's read) carrying `len` bytes from `addr`, `down` towards the device or up, leaving from
  // `earliest`. Returns when its last TLP has arrived at the far end. It takes the wire time from
  // the device's own traffic; the receiving endpoint's credits are not modelled for it.
  pcie::Ps carry(bool down, std::uint64_t addr, std::uint64_t len, pcie::Ps earliest);
  // The credits in use in the root complex's receive buffers (posted header and data, non-posted
  // header) as levels of `probe` in `scope`; in the trace as counters of `trace_pid` (0: none).
  void observe(StateProbe& probe, const std::string& scope, int trace_pid);

 private:
  void b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
  void read(tlm::tlm_generic_payload& gp, pcie::Ps t0, sc_core::sc_time& delay);
  void write(tlm::tlm_generic_payload& gp, pcie::Ps t0, sc_core::sc_time& delay);
  struct Direction {
    pcie::WireClock& clock;
    pcie::Serializer& wire;
    std::uint64_t& wire_bytes;
    int track;
  };
  pcie::Ps send(Direction& dir, pcie::Ps earliest, std::uint64_t wire_bytes, const char* what);
  // One TLP on the upstream (device to host) or downstream wire.
  pcie::Ps send_up(pcie::Ps earliest, std::uint64_t wire_bytes, const char* what);
  // A read request upstream, in a lane of its own (see up_requests_).
  pcie::Ps send_request_up(pcie::Ps earliest, std::uint64_t wire_bytes, const char* what);
  pcie::Ps send_down(pcie::Ps earliest, std::uint64_t wire_bytes, const char* what);
  // A TLP holds credits of `pool` from `from` until they are back: to the checker and the probe.
  void credits_held(ProtocolChecker::Pool pool, pcie::Ps from, pcie::Ps until, std::uint32_t header,
                    std::uint32_t data);
  std::uint32_t replays_for(std::uint64_t tlps);
  // To the next component (the root complex, or a switch), the first TLP there at `first`, the
  // last at `arrival`. Returns when that component took it out of its receive buffer.
  pcie::Ps forward(tlm::tlm_generic_payload& gp, pcie::Ps first, pcie::Ps arrival);

  LinkConfig link_;
  pcie::LinkParams params_;
  pcie::Ps latency_ps_;
  pcie::Ps credit_update_ps_;
  pcie::Ps replay_ps_;
  pcie::Ps service_ps_;  // the root complex's unloaded service time of one read (burst reads)
  pcie::WireClock up_clock_, down_clock_;
  pcie::Serializer up_, down_;
  // The device's read requests (MRd) upstream. Its request arbiter puts a read request between
  // two writes, so a request waits for at most the TLP on the wire; but the model books a CB's
  // writes (and, through tag reuse, its requests) ahead of time, so on one calendar a request
  // booked after a D2H CB's writes would queue behind all of them, and a run of future requests
  // would fragment the writes' calendar. Requests serialize among themselves here; their wire
  // time (an MRd header per up to MRRS bytes read, under 1% of the data they fetch) is not taken
  // from the writes.
  pcie::Serializer up_requests_;
  pcie::CreditPool posted_, nonposted_;  // the root complex's receive buffers
  ProtocolChecker checker_;
  DebugHooks hooks_;
  std::uint64_t mwr_overhead_, cpld_overhead_;  // wire bytes of a TLP beyond its payload
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> uniform_{0.0, 1.0};
  LinkCounters counters_;
  TraceWriter* trace_ = nullptr;
  int trace_pid_ = 0, up_track_ = 0, down_track_ = 0;
  StateProbe* probe_ = nullptr;
  std::array<int, 3> levels_{};  // posted header, posted data, non-posted header
};

}  // namespace spyre_dma::model
