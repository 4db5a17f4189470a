// A PCIe switch: downstream ports (devices' links, or the uplinks of switches below it) and one
// upstream port, whose link (a PcieLink: the uplink, with its own serializers, credits and
// latency) every downstream port shares. TLPs cross the switch cut-through, forward_ns after they
// reach it: a run of TLPs (burst fidelity) goes on as it arrives, not once it has all arrived.
//
// Posted writes from one downstream port never pass each other on the uplink, nor do its read
// requests pass them (PCIe ordering, pcie/posted_order.hpp): a write that arrived later leaves
// later, even where the uplink's calendar has an earlier gap, and a read leaves behind every write
// of its port that arrived before it.
// A downstream link's posted credits come back when the switch has passed the TLP on, so a busy
// uplink holds back the devices below it once their links' credits are spent.
// Read completions come down as they arrive: the downstream link starts carrying a read's
// completions once the first is through the switch, and cannot finish before the last is.
#pragma once

#include <cstdint>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/multi_passthrough_target_socket.h>
#include <tlm_utils/simple_initiator_socket.h>

#include "pcie/link_math.hpp"
#include "pcie/posted_order.hpp"
#include "pcie/ps.hpp"
#include "spyre_dma/model/sim_config.hpp"

namespace spyre_dma::model {

class PcieSwitch : public sc_core::sc_module {
 public:
  tlm_utils::multi_passthrough_target_socket<PcieSwitch> downstream;  // each port: one link below
  tlm_utils::simple_initiator_socket<PcieSwitch> upstream;            // to the uplink's device side

  // `below`: the links on the downstream ports (how fast they carry completions on); `above`: the
  // uplink.
  PcieSwitch(sc_core::sc_module_name name, const LinkConfig& below, const LinkConfig& above, double forward_ns);

  std::uint64_t tlps_up() const noexcept { return tlps_up_; }      // transactions forwarded up
  std::uint64_t ordering_holds() const noexcept { return holds_; }  // TLPs held behind an earlier write

 private:
  void b_transport(int port, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
  // The posted writes of one downstream port, by when each began to arrive (writes are booked out
  // of time order: an RB after the next CB's data).
  pcie::PostedOrder& order(int port);

  pcie::LinkParams below_, above_;
  pcie::PsPerByte below_rate_, above_rate_;
  pcie::Ps forward_ps_;
  std::vector<pcie::PostedOrder> order_;
  std::uint64_t tlps_up_ = 0, holds_ = 0;
};

}  // namespace spyre_dma::model
