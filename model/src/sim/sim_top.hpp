// The elaborated model: root complex (with host memory behind the IOMMU), PCIe link, DMA
// controller (with the data path SimConfig::data_path names) and device memory, wired through their
// TLM sockets, plus the host side that applies the engine's register writes at their simulated
// instants.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>

#include <systemc>

#include "device/device_memory.hpp"
#include "device/controller.hpp"
#include "host/root_complex.hpp"
#include "link/pcie_link.hpp"
#include "observe/trace_writer.hpp"
#include "sim/sim_time.hpp"
#include "spyre_dma/model/stats.hpp"

namespace spyre_dma::model {

class SimTop : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(SimTop);
  // `trace_path` empty: no Perfetto trace.
  SimTop(sc_core::sc_module_name name, const SimConfig& config, device_core::Iommu& iommu,
         std::function<void(std::uint32_t)> on_interrupt, const std::string& trace_path);

  // A register write the host issued now: it reaches the device after the configured cost.
  // Writes keep their order.
  void post_write(std::uint64_t offset, std::uint64_t value, unsigned width);
  // The host spent bytes / staging_gbps copying to or from staging: later writes wait for it.
  void host_copied(std::uint64_t bytes);
  bool writes_pending() const noexcept { return !writes_.empty(); }
  // Pause the simulation once every posted write has landed.
  void pause_when_written() noexcept { pause_when_written_ = true; }


  StatsRegistry stats;
  std::unique_ptr<TraceWriter> trace;  // before the components that write into it
  RootComplex root_complex;
  PcieLink link;
  DeviceMemory device_memory;
  Controller controller;

 private:
  struct Write {
    std::uint64_t offset;
    std::uint64_t value;
    unsigned width;
  };
  void apply_writes();  // SC_METHOD

  pcie::Ps write_cost_ps_;
  double staging_gbps_;
  pcie::Ps host_free_ps_ = 0;  // when the host's staging copies are over
  pcie::Ps link_latency_ps_;
  std::multimap<pcie::Ps, Write> writes_;
  sc_core::sc_event write_due_;
  bool pause_when_written_ = false;
};

}  // namespace spyre_dma::model
