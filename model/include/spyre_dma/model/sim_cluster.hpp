// A simulated cluster: SimConfig::network.nodes servers (each of SimConfig::topology, with its
// devices, PCIe tree and host memory) and one RDMA NIC per node on a network (NetworkConfig), in
// one deterministic SystemC simulation. Open one engine per device (Engine::open(device(n, i)))
// and one Endpoint per node over its NIC (Endpoint(engine, nic(n))): puts and gets between the
// nodes then run through the engine's streams as they do over UCX, in simulated time.
//
// Simulated time is shared by every node: driven from one thread, the same workload gives the same
// bits and the same timestamps on every run.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "spyre_dma/model/sim_config.hpp"
#include "spyre_dma/model/sim_device.hpp"
#include "spyre_dma/model/sim_nic.hpp"

namespace spyre_dma::model {

class SimCluster {
 public:
  // std::invalid_argument unless network.nodes >= 2; otherwise as SimNode (one simulation per
  // process at a time, ConfigError for a configuration the model cannot run). The trace and the
  // waves are node 0's.
  explicit SimCluster(SimConfig config, std::string trace_path = {}, std::string wave_path = {});
  ~SimCluster();
  SimCluster(const SimCluster&) = delete;
  SimCluster& operator=(const SimCluster&) = delete;

  std::size_t nodes() const noexcept { return nics_.size(); }
  std::size_t devices_per_node() const noexcept;
  // Node `node`'s device `i`, and its NIC. They keep the simulation alive.
  const std::shared_ptr<SimDevice>& device(std::size_t node, std::size_t i) const;
  const std::shared_ptr<SimNic>& nic(std::size_t node) const { return nics_.at(node); }
  const SimConfig& config() const noexcept;

  // Runs the simulation until done() is true (checked after each NIC event, once its callbacks
  // have run) or nothing is left to simulate; returns done(). done() and the callbacks run on the
  // calling thread.
  bool run_until(const std::function<bool()>& done);
  // Runs the simulation for `ps` picoseconds of simulated time (what falls due on the way happens).
  void run_for(std::uint64_t ps);
  // Simulated time now, in picoseconds.
  std::uint64_t now_ps();
  // A fault: node `node`'s network port goes down (or up again). Transfers to or from it get no
  // answer and fail with PeerUnreachable after network.nic.timeout_us.
  void set_port_down(std::size_t node, bool down);

  // Per node: what its devices share, its NIC and its network port (SimNode::statistics).
  nlohmann::json statistics();

 private:
  std::shared_ptr<NodeSimulation> sim_;
  std::vector<std::shared_ptr<SimDevice>> devices_;
  std::vector<std::shared_ptr<SimNic>> nics_;
};

}  // namespace spyre_dma::model
