#include "sim/device_model.hpp"

namespace spyre_dma::model {

using namespace sc_core;

DeviceModel::DeviceModel(sc_module_name name, const SimConfig& config, unsigned index_in_node,
                         RootComplex::Requester& requester_at_host, RootComplex& root_complex, pcie::Ps beyond_ps,
                         TraceWriter* trace, const std::string& label, StateProbe* probe)
    : sc_module(name),
      index(index_in_node),
      requester(requester_at_host),
      link("link", config, config.link, beyond_ps, index_in_node),
      device_memory("device_memory", config.device),
      controller("controller", config, requester_at_host, link.checker()),
      root_complex_(root_complex),
      write_cost_ps_(pcie::ns_to_ps(config.host_cost.register_write_ns)),
      link_latency_ps_(pcie::ns_to_ps(config.link.latency_ns)) {
  controller.pcie.bind(link.device_side);
  controller.memory.bind(device_memory.socket);
  controller.observe(stats, trace, label.empty() ? "device" : label, probe, basename());
  // Credits and tags change with every TLP: in the trace only with its TLPs (trace_tlps).
  if (probe) link.observe(*probe, std::string(basename()) + ".link", config.trace_tlps ? controller.trace_pid() : 0);
  if (trace && config.trace_tlps) link.trace_tlps(*trace, label);
  SC_METHOD(apply_writes);
  sensitive << write_due_;
  dont_initialize();
}

void DeviceModel::post_write(std::uint64_t offset, std::uint64_t value, unsigned width) {
  const pcie::Ps now = std::max(now_ps(), host_free_ps_);
  const pcie::Ps at = now + write_cost_ps_;
  // A posted write on the downstream wire: it enters the link at the latest one link latency
  // before it lands (the rest of its cost is the host's own), and completions sent after that
  // may not overtake it.
  link.checker().posted_write(LinkDirection::kDown, std::max(now, at - std::min(at, link_latency_ps_)), at);
  const bool first = writes_.empty();
  writes_.emplace(at, Write{offset, value, width});
  if (first) write_due_.notify(delay_until(at));
}

void DeviceModel::host_copied(std::uint64_t bytes) {
  const pcie::Ps start = std::max(now_ps(), host_free_ps_);
  host_free_ps_ = root_complex_.staging_copy(start, bytes);
}

void DeviceModel::apply_writes() {
  const pcie::Ps now = now_ps();
  while (!writes_.empty() && writes_.begin()->first <= now) {
    const Write w = writes_.begin()->second;
    writes_.erase(writes_.begin());
    controller.write_register(w.offset, w.value, w.width);
  }
  if (!writes_.empty()) {
    write_due_.notify(delay_until(writes_.begin()->first));
  } else if (pause_when_written_) {
    pause_when_written_ = false;
    sc_pause();
  }
}

}  // namespace spyre_dma::model
