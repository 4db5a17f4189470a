#include "sim/sim_top.hpp"

#include <stdexcept>

#include "spyre_dma/model/config_loader.hpp"

namespace spyre_dma::model {

using namespace sc_core;

SimTop::SimTop(sc_module_name name, const SimConfig& config, device_core::Iommu& iommu,
               std::function<void(std::uint32_t)> on_interrupt, const std::string& trace_path)
    : sc_module(name),
      trace(trace_path.empty() ? nullptr : std::make_unique<TraceWriter>(trace_path, to_json(config))),
      root_complex("root_complex", config, iommu, std::move(on_interrupt)),
      link("link", config),
      device_memory("device_memory", config.device),
      controller("controller", config, iommu, root_complex, link.checker()),
      write_cost_ps_(pcie::ns_to_ps(config.host_cost.register_write_ns)),
      staging_gbps_(config.host_cost.staging_gbps),
      link_latency_ps_(pcie::ns_to_ps(config.link.latency_ns)) {
  controller.pcie.bind(link.device_side);
  controller.memory.bind(device_memory.socket);
  controller.observe(stats, trace.get());
  link.host_side.bind(root_complex.socket);
  if (trace && config.trace_tlps) link.trace_tlps(*trace);
  SC_METHOD(apply_writes);
  sensitive << write_due_;
  dont_initialize();
}

void SimTop::post_write(std::uint64_t offset, std::uint64_t value, unsigned width) {
  const pcie::Ps now = std::max(to_ps(sc_time_stamp()), host_free_ps_);
  const pcie::Ps at = now + write_cost_ps_;
  // A posted write on the downstream wire: it enters the link at the latest one link latency
  // before it lands (the rest of its cost is the host's own), and completions sent after that
  // may not overtake it.
  link.checker().posted_write(LinkDirection::kDown, std::max(now, at - std::min(at, link_latency_ps_)), at);
  const bool first = writes_.empty();
  writes_.emplace(at, Write{offset, value, width});
  if (first) write_due_.notify(delay_until(at));
}

void SimTop::host_copied(std::uint64_t bytes) {
  if (staging_gbps_ <= 0) return;
  // 1 GB/s is one byte per ns.
  const pcie::Ps start = std::max(to_ps(sc_time_stamp()), host_free_ps_);
  host_free_ps_ = start + pcie::ns_to_ps(static_cast<double>(bytes) / staging_gbps_);
}

void SimTop::apply_writes() {
  const pcie::Ps now = to_ps(sc_time_stamp());
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
