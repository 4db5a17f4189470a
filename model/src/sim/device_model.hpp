// One device of the simulated server: its PCIe link, its DMA controller (with the data path
// SimConfig::data_path names) and its memory, wired through their TLM sockets, and the host side's
// register writes to it, applied at their simulated instants.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include <systemc>

#include "device/controller.hpp"
#include "device/device_memory.hpp"
#include "host/root_complex.hpp"
#include "link/pcie_link.hpp"
#include "observe/state_probe.hpp"
#include "observe/trace_writer.hpp"
#include "base/rates.hpp"
#include "spyre_dma/model/stats.hpp"

namespace spyre_dma::model {

class DeviceModel : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(DeviceModel);
  // `requester`: this device at the root complex. `beyond_ps`: the unloaded round trip of the
  // switches between its link and the root complex (see PcieLink). `label` names its tracks in
  // `trace` (null: no trace); "" for the one device of a single-device server. `probe` (null:
  // none) gets its state as levels under the module's name (controller and link observe()).
  DeviceModel(sc_core::sc_module_name name, const SimConfig& config, unsigned index,
              RootComplex::Requester& requester, RootComplex& root_complex, pcie::Ps beyond_ps, TraceWriter* trace,
              const std::string& label, StateProbe* probe = nullptr);

  // A register write the host issued now: it reaches the device after the configured cost.
  // Writes keep their order.
  void post_write(std::uint64_t offset, std::uint64_t value, unsigned width);
  // The host spent bytes / staging_gbps copying to or from staging (and host memory time; see
  // RootComplex::staging_copy): later writes wait for it.
  void host_copied(std::uint64_t bytes);
  bool writes_pending() const noexcept { return !writes_.empty(); }
  const RootComplex& root_complex() const noexcept { return root_complex_; }
  pcie::Ps host_free_ps() const noexcept { return host_free_ps_; }  // its host staging copies end
  // Pause the simulation once every posted write has landed.
  void pause_when_written() noexcept { pause_when_written_ = true; }

  const unsigned index;
  StatsRegistry stats;
  RootComplex::Requester& requester;
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

  RootComplex& root_complex_;
  pcie::Ps write_cost_ps_;
  pcie::Ps host_free_ps_ = 0;  // when the host's staging copies for this device are over
  pcie::Ps link_latency_ps_;
  std::multimap<pcie::Ps, Write> writes_;
  sc_core::sc_event write_due_;
  bool pause_when_written_ = false;
};

}  // namespace spyre_dma::model
