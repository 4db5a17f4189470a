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
// Traffic both ways (docs/model-pcie.md, "Traffic in both directions"): a read request leaves on
// the upstream wire behind the posted writes its device queued before it (pcie/posted_order.hpp),
// in the same calendar as the writes; and the receiver of each direction sends its ACK and
// UpdateFC DLLPs back on the other wire, at the spec's intervals, where they take time from
// that wire's own TLPs.
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
#include "pcie/posted_order.hpp"
#include "pcie/timing.hpp"
#include "base/debug_hooks.hpp"
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
  std::uint64_t dllps_up = 0, dllps_down = 0;  // ACK and UpdateFC DLLPs each wire carried
  std::uint64_t request_holds = 0;  // read requests held behind a posted write queued before them
  pcie::Ps request_hold_ps = 0;
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
  // Wire time booked: TLPs, the requests' time and the DLLPs each wire carried.
  pcie::Ps up_busy_ps() const noexcept { return up_.busy_ps(); }
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
  // The time of what goes out between a wire's TLPs (DLLPs, read requests), not yet taken from
  // them. Each of those goes between two TLPs and the TLPs after it go later by its time; but the
  // model books TLPs ahead of the kernel, out of time order, and a small booking in the middle of
  // them would split their gaps into pieces too short for a TLP, wasting more time than it takes.
  // So the next TLP the wire books takes it on, if it goes out within kDebtWindowPs of it (the
  // data paths' run-ahead: the TLPs of that stretch are booked in any order); past that the wire
  // had room for it and it cost nothing.
  struct WireDebt {
    pcie::Ps ps = 0;
    pcie::Ps since = 0;  // when the oldest of it went out
  };
  static constexpr pcie::Ps kDebtWindowPs = 2'000'000;
  // One wire, and where the DLLPs its receiver owes for its TLPs go: one ACK and one UpdateFC per
  // ack_limit_symbols and fc_update_symbols symbol times of TLPs received, sent on the other wire
  // in batches of kDllpBatch (an ACK acknowledges every TLP before it, so ACKs coalesce).
  struct Direction {
    pcie::WireClock& clock;
    pcie::Serializer& wire;
    std::uint64_t& wire_bytes;
    int track;
    WireDebt& debt;
    double& dllps_owed;        // due for this wire's TLPs and not yet sent
    std::uint64_t& dllps_sent;  // counted on the wire that carries them
    WireDebt& reverse;
    int reverse_track;
  };
  static constexpr unsigned kDllpBatch = 8;
  // One TLP (or a burst's run of them) on a wire from `earliest`; returns when it has fully left
  // (`busy`: its wire time).
  pcie::Ps send(Direction& dir, pcie::Ps earliest, std::uint64_t wire_bytes, const char* what,
                pcie::Ps* busy = nullptr);
  // One TLP on the upstream (device to host) or downstream wire.
  pcie::Ps send_up(pcie::Ps earliest, std::uint64_t wire_bytes, const char* what);
  pcie::Ps send_down(pcie::Ps earliest, std::uint64_t wire_bytes, const char* what);
  // A read request (or a burst's run of them) upstream: timed on the requests' lane, its wire
  // time owed by the writes (see requests_).
  pcie::Ps send_request(pcie::Ps earliest, std::uint64_t wire_bytes, const char* what);
  static void owe(WireDebt& debt, pcie::Ps at, pcie::Ps d);
  Direction up() noexcept;
  Direction down() noexcept;
  // The DLLPs `dir`'s receiver owes for `busy` ps of TLPs that arrive from `arrival` on.
  void acknowledge(Direction& dir, pcie::Ps busy, pcie::Ps arrival);
  // The posted writes a requester queued on the upstream wire (reads wait behind them).
  pcie::PostedOrder& posted_up(std::uint16_t requester);
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
  // The device's read requests upstream. Its arbiter puts a request between two TLPs, behind the
  // posted writes queued before it (posted_up_), so a request waits for those and at most the TLP
  // on the wire; the TLPs after it go later by its time. The model books a CB's writes ahead of
  // the kernel, so on the writes' calendar a request would wait for every write booked ahead of
  // it, queued after it or not. Requests are timed here, serialized among themselves, and their
  // wire time is owed by the writes (WireDebt). (A burst's run of requests the same way: it
  // stands for requests spread over the whole CB.)
  pcie::Serializer requests_;
  WireDebt up_debt_, down_debt_;
  std::vector<pcie::PostedOrder> posted_up_;  // by requester
  // DLLPs owed for each wire's TLPs; how many fall due per ps of TLPs received (0: none, without
  // link.dllp_overhead); the wire time of one batch, at the raw rate (a DLLP is no TLP).
  double dllps_owed_up_ = 0, dllps_owed_down_ = 0;
  double dllps_per_ps_ = 0;
  pcie::Ps dllp_batch_ps_ = 0;
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
