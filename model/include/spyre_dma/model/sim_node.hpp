// A simulated server: SimConfig::topology.devices devices behind the PCIe tree the topology
// describes, sharing the root complex and host memory, in one deterministic SystemC simulation.
// Each device is a SimDevice: open one engine per device (Engine::open(node.device(i))). Simulated
// time is shared: a wait on any device advances every device, and interrupts of the others stay
// pending for their own waits, so a workload driven from one thread gives the same results on
// every run.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "spyre_dma/model/sim_config.hpp"
#include "spyre_dma/model/sim_device.hpp"

namespace spyre_dma::model {

class SimNode {
 public:
  // Throws std::logic_error while another simulated server lives in this process, and ConfigError
  // (or std::invalid_argument) for a configuration the model cannot run. `trace_path`: one
  // Perfetto trace of every device (empty: none); `wave_path`: one waveform of every device's state
  // (SimDevice).
  explicit SimNode(SimConfig config, std::string trace_path = {}, std::string wave_path = {});
  ~SimNode();

  std::size_t size() const noexcept { return devices_.size(); }
  // Device i (0-based). The simulation lives while the node or any of its devices does.
  const std::shared_ptr<SimDevice>& device(std::size_t i) const { return devices_.at(i); }
  const SimConfig& config() const noexcept;

  // What the devices share: host memory time booked, and each switch's uplink (busy time per
  // direction, credit stalls, writes held for ordering), with the topology. Each device's own
  // statistics come from its SimDevice.
  nlohmann::json statistics();

 private:
  std::shared_ptr<NodeSimulation> sim_;
  std::vector<std::shared_ptr<SimDevice>> devices_;
};

}  // namespace spyre_dma::model
