#include "link/pcie_switch.hpp"

#include <algorithm>

#include "pcie/timing.hpp"
#include "base/rates.hpp"
#include "base/tlp.hpp"

namespace spyre_dma::model {

using namespace sc_core;
using pcie::Ps;

PcieSwitch::PcieSwitch(sc_module_name name, const LinkConfig& below, const LinkConfig& above, double forward_ns)
    : sc_module(name),
      downstream("downstream"),
      upstream("upstream"),
      below_(pcie::link_params(below)),
      above_(pcie::link_params(above)),
      below_rate_(pcie::tlp_ps_per_byte(below_)),
      above_rate_(pcie::tlp_ps_per_byte(above_)),
      forward_ps_(pcie::ns_to_ps(forward_ns)) {
  downstream.register_b_transport(this, &PcieSwitch::b_transport);
}

pcie::PostedOrder& PcieSwitch::order(int port) {
  if (order_.size() <= static_cast<std::size_t>(port)) order_.resize(port + 1);
  pcie::PostedOrder& o = order_[port];
  o.prune(now_ps());  // nothing arrives before now any more
  return o;
}

void PcieSwitch::b_transport(int port, tlm::tlm_generic_payload& gp, sc_time& delay) {
  TlpExtension* ext = gp.get_extension<TlpExtension>();
  const Ps arrival = now_ps() + to_ps(delay);  // the last TLP is here
  const Ps first = ext->first_ps ? std::min<Ps>(ext->first_ps, arrival) : arrival;
  const std::uint64_t addr = gp.get_address(), len = gp.get_data_length();
  ++tlps_up_;
  if (gp.is_write()) {
    const bool run = ext->burst && !ext->msi;
    const pcie::WireBytes w = run ? pcie::write_wire(above_, addr, len)
                                  : pcie::WireBytes{pcie::tlp_overhead_bytes(above_, pcie::TlpType::kMWr) + len, 0, 1, 0};
    const Ps d = above_rate_.ceil_ps(w.upstream);
    const Ps last_tlp = d / std::max<std::uint64_t>(1, w.upstream_tlps);
    // Cut-through: it starts once its first TLP is through, and cannot end before its last is.
    Ps earliest = std::max(first, arrival + last_tlp - std::min(arrival + last_tlp, d)) + forward_ps_;
    pcie::PostedOrder& o = order(port);
    const Ps ahead = o.clear_at(first);  // the writes of this port that arrived before this one
    if (ahead > earliest + d) {
      earliest = ahead - d;
      ++holds_;
    }
    sc_time up = delay_until(earliest);
    upstream->b_transport(gp, up);
    const Ps sent = now_ps() + to_ps(up);
    o.add(first, sent);
    ext->taken_ps = sent;  // out of this switch's receive buffer
    return;
  }
  // A read request: on up behind the writes of its port that arrived before it, its completions
  // back down as they arrive from the uplink.
  const Ps ahead = order(port).clear_at(arrival);
  if (ahead > arrival + forward_ps_) ++holds_;
  sc_time up = delay_until(std::max(arrival + forward_ps_, ahead));
  upstream->b_transport(gp, up);
  const Ps last = now_ps() + to_ps(up);  // the last completion is at this switch
  if (ext->drop_completion || ext->status != CompletionStatus::kSuccess) {
    ext->ready_ps = last + forward_ps_;
    return;
  }
  const pcie::WireBytes above = pcie::read_wire(above_, addr, len), below = pcie::read_wire(below_, addr, len);
  const Ps d_above = above_rate_.ceil_ps(above.downstream), d_below = below_rate_.ceil_ps(below.downstream);
  const Ps first_in = last - std::min(last, d_above) + d_above / std::max<std::uint64_t>(1, above.downstream_tlps);
  ext->ready_ps = std::max(first_in, last - std::min(last, d_below)) + forward_ps_;
}

}  // namespace spyre_dma::model
