#include "sim/sim_top.hpp"

#include <stdexcept>

#include "spyre_dma/model/config_loader.hpp"
#ifdef SPYRE_DMA_HAVE_RTL
#include "spyre_dma/rtl/wave.hpp"
#endif

namespace spyre_dma::model {

using namespace sc_core;

SimTop::SimTop(sc_module_name name, const SimConfig& config, refdev::Iommu& iommu,
               std::function<void(std::uint32_t)> on_interrupt, const std::string& trace_path)
    : sc_module(name),
      trace(trace_path.empty() ? nullptr : std::make_unique<TraceWriter>(trace_path, to_json(config))),
      root_complex("root_complex", config, iommu, std::move(on_interrupt)),
      link("link", config),
      device_memory("device_memory", config.device),
      write_cost_ps_(pcie::ns_to_ps(config.host_cost.register_write_ns)),
      staging_gbps_(config.host_cost.staging_gbps),
      link_latency_ps_(pcie::ns_to_ps(config.link.latency_ns)) {
  if (config.controller == Controller::kRtl) {
#ifdef SPYRE_DMA_HAVE_RTL
    rtl_ = std::make_unique<rtl::RtlController>("controller", config, iommu, root_complex, link.checker(),
                                                rtl::wave_file());
    rtl_->pcie.bind(link.device_side);
    rtl_->memory.bind(device_memory.socket);
    rtl_->observe(stats, trace.get());
#else
    throw std::invalid_argument("controller \"rtl\": this build has no RTL controller (configure with "
                                "-DSPYRE_DMA_RTL=ON; it needs Verilator)");
#endif
  } else {
    controller_ = std::make_unique<DmaController>("controller", config, iommu, root_complex, link.checker());
    controller_->pcie.bind(link.device_side);
    controller_->memory.bind(device_memory.socket);
    controller_->observe(stats, trace.get());
  }
  link.host_side.bind(root_complex.socket);
  if (trace && config.trace_tlps) link.trace_tlps(*trace);
  SC_METHOD(apply_writes);
  sensitive << write_due_;
  dont_initialize();
}

std::uint64_t SimTop::read_register(std::uint64_t offset, unsigned width) const {
#ifdef SPYRE_DMA_HAVE_RTL
  if (rtl_) return rtl_->read_register(offset, width);
#endif
  return controller_->read_register(offset, width);
}

void SimTop::write_register(std::uint64_t offset, std::uint64_t value, unsigned width) {
#ifdef SPYRE_DMA_HAVE_RTL
  if (rtl_) return rtl_->write_register(offset, value, width);
#endif
  controller_->write_register(offset, value, width);
}

ControllerCounters SimTop::controller_counters() const {
#ifdef SPYRE_DMA_HAVE_RTL
  if (rtl_) return rtl_->counters();
#endif
  return controller_->counters();
}

const FaultInjector& SimTop::controller_faults() const {
#ifdef SPYRE_DMA_HAVE_RTL
  if (rtl_) return rtl_->faults();
#endif
  return controller_->faults();
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
    write_register(w.offset, w.value, w.width);
  }
  if (!writes_.empty()) {
    write_due_.notify(delay_until(writes_.begin()->first));
  } else if (pause_when_written_) {
    pause_when_written_ = false;
    sc_pause();
  }
}

}  // namespace spyre_dma::model
