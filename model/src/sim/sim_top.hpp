// The elaborated model of a server: the root complex (host memory behind each device's IOMMU
// domain), the PCIe tree of TopologyConfig (switches and their uplinks) and the devices, each with
// its own link, DMA controller and memory (DeviceModel), wired through their TLM sockets.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <systemc>

#include "host/root_complex.hpp"
#include "link/pcie_link.hpp"
#include "link/pcie_switch.hpp"
#include "net/nic.hpp"
#include "observe/state_probe.hpp"
#include "observe/trace_writer.hpp"
#include "sim/device_model.hpp"
#include "spyre_dma/model/wave_writer.hpp"

namespace spyre_dma::model {

class SimTop : public sc_core::sc_module {
 public:
  // `iommus`: one per device (topology.devices of them), each device's domain. on_interrupt(device,
  // vector) runs at the simulated instant one of a device's MSI-X messages takes effect.
  // `trace_path` empty: no Perfetto trace; `wave_path` empty: no waveform of the model's state.
  // `network` (null: a single server): the cluster's network, on which this server is node
  // `node` with a NIC (nic), whose events go to nic_notify (Nic's `notify`).
  SimTop(sc_core::sc_module_name name, const SimConfig& config, const std::vector<device_core::Iommu*>& iommus,
         std::function<void(unsigned, std::uint32_t)> on_interrupt, const std::string& trace_path,
         const std::string& wave_path = {}, Network* network = nullptr, unsigned node = 0,
         std::function<void(std::function<void()>)> nic_notify = {});
  // Writes the rest of the model's state and closes the waveform (an error writing it is said on
  // stderr: nothing may throw here).
  ~SimTop() override;

  std::size_t size() const noexcept { return devices.size(); }
  DeviceModel& device(std::size_t i) { return *devices.at(i); }

  std::unique_ptr<TraceWriter> trace;  // before the components that write into it
  std::unique_ptr<WaveWriter> wave;
  // The model's state over time, into wave and trace (null when neither is written).
  std::unique_ptr<StateProbe> probe;
  RootComplex root_complex;
  // Switch k's uplink is uplinks[k]. Leaf switches first (switch k holds devices k x
  // devices_per_switch on), then the parents (topology.switches_per_root_port > 1).
  std::vector<std::unique_ptr<PcieSwitch>> switches;
  std::vector<std::unique_ptr<PcieLink>> uplinks;
  std::vector<std::unique_ptr<DeviceModel>> devices;
  // The node's RDMA NIC in a cluster (null in a single server): on the first switch's downstream
  // port where the server has switches, else on a root port of its own.
  std::unique_ptr<Nic> nic;

 private:
  // Binds `link` to a root port of its own (RootComplex::add_port, then the socket).
  void bind_root_port(PcieLink& link);
  void add_nic(const SimConfig& config, Network& network, unsigned node,
               std::function<void(std::function<void()>)> notify);
};

}  // namespace spyre_dma::model
