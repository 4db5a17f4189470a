// The elaborated model: root complex (with host memory behind the IOMMU), PCIe link, DMA
// controller and device memory, wired through their TLM sockets, plus the host port that applies
// the engine's register writes at their simulated instants. The controller is the SystemC
// DmaController or, with SimConfig::controller "rtl", the RTL controller of rtl_bridge/: one or
// the other exists, behind the same sockets.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>

#include <systemc>

#include "device/device_memory.hpp"
#include "device/dma_controller.hpp"
#include "host/root_complex.hpp"
#include "link/pcie_link.hpp"
#include "observe/trace_writer.hpp"
#include "sim/sim_time.hpp"
#include "spyre_dma/model/stats.hpp"
#ifdef SPYRE_DMA_HAVE_RTL
#include "rtl_controller.hpp"
#endif

namespace spyre_dma::model {

class SimTop : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(SimTop);
  // `trace_path` empty: no Perfetto trace.
  SimTop(sc_core::sc_module_name name, const SimConfig& config, refdev::Iommu& iommu,
         std::function<void(std::uint32_t)> on_interrupt, const std::string& trace_path);

  // A register write the host issued now: it reaches the device after the configured cost.
  // Writes keep their order.
  void post_write(std::uint64_t offset, std::uint64_t value, unsigned width);
  // The host spent bytes / staging_gbps copying to or from staging: later writes wait for it.
  void host_copied(std::uint64_t bytes);
  bool writes_pending() const noexcept { return !writes_.empty(); }
  // Pause the simulation once every posted write has landed.
  void pause_when_written() noexcept { pause_when_written_ = true; }

  // The controller's BAR0, whichever controller it is.
  std::uint64_t read_register(std::uint64_t offset, unsigned width) const;
  void write_register(std::uint64_t offset, std::uint64_t value, unsigned width);
  ControllerCounters controller_counters() const;
  const FaultInjector& controller_faults() const;
  // The SystemC controller, or null when the RTL one runs.
  DmaController* systemc_controller() noexcept { return controller_.get(); }
#ifdef SPYRE_DMA_HAVE_RTL
  rtl::RtlController* rtl_controller() noexcept { return rtl_.get(); }
  const rtl::RtlController* rtl_controller() const noexcept { return rtl_.get(); }
#endif

  StatsRegistry stats;
  std::unique_ptr<TraceWriter> trace;  // before the components that write into it
  RootComplex root_complex;
  PcieLink link;
  DeviceMemory device_memory;

 private:
  struct Write {
    std::uint64_t offset;
    std::uint64_t value;
    unsigned width;
  };
  void apply_writes();  // SC_METHOD

  std::unique_ptr<DmaController> controller_;
#ifdef SPYRE_DMA_HAVE_RTL
  std::unique_ptr<rtl::RtlController> rtl_;
#endif
  pcie::Ps write_cost_ps_;
  double staging_gbps_;
  pcie::Ps host_free_ps_ = 0;  // when the host's staging copies are over
  pcie::Ps link_latency_ps_;
  std::multimap<pcie::Ps, Write> writes_;
  sc_core::sc_event write_due_;
  bool pause_when_written_ = false;
};

}  // namespace spyre_dma::model
