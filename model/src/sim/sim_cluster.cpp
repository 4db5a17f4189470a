// SimCluster: the nodes' devices and NICs over one NodeSimulation.
#include "spyre_dma/model/sim_cluster.hpp"

#include <stdexcept>

#include "net/nic.hpp"
#include "sim/node_simulation.hpp"
#include "base/rates.hpp"

namespace spyre_dma::model {

namespace {
SimConfig checked(SimConfig config) {
  if (config.network.nodes < 2) {
    throw std::invalid_argument("SimCluster: network.nodes is " + std::to_string(config.network.nodes) +
                                "; a cluster has 2 or more nodes (one server is a SimNode)");
  }
  return config;
}
}  // namespace

SimCluster::SimCluster(SimConfig config, std::string trace_path, std::string wave_path)
    : sim_(std::make_shared<NodeSimulation>(checked(std::move(config)), std::move(trace_path), std::move(wave_path))) {
  for (unsigned i = 0; i < sim_->size(); ++i) devices_.push_back(std::shared_ptr<SimDevice>(new SimDevice(sim_, i)));
  for (unsigned n = 0; n < sim_->nodes(); ++n) nics_.push_back(std::shared_ptr<SimNic>(new SimNic(sim_, n)));
}

SimCluster::~SimCluster() = default;

std::size_t SimCluster::devices_per_node() const noexcept { return sim_->config().topology.devices; }

const std::shared_ptr<SimDevice>& SimCluster::device(std::size_t node, std::size_t i) const {
  if (node >= nodes() || i >= devices_per_node()) {
    throw std::out_of_range("SimCluster: no device " + std::to_string(i) + " on node " + std::to_string(node) + " (" +
                            std::to_string(nodes()) + " nodes of " + std::to_string(devices_per_node()) + " devices)");
  }
  return devices_[node * devices_per_node() + i];
}

const SimConfig& SimCluster::config() const noexcept { return sim_->config(); }

bool SimCluster::run_until(const std::function<bool()>& done) {
  for (;;) {
    sim_->run_nic_callbacks();
    if (done()) return true;
    const bool more = sim_->run_to_nic_event();
    if (!more && !sim_->run_nic_callbacks()) return done();
  }
}

void SimCluster::run_for(std::uint64_t ps) {
  sim_->call([&] { sim_->run_to_time(model::now_ps() + ps); });
}

std::uint64_t SimCluster::now_ps() {
  return sim_->call([] { return model::now_ps(); });
}

void SimCluster::set_port_down(std::size_t node, bool down) {
  sim_->call([&] { sim_->network().set_port_down(static_cast<unsigned>(node), down); });
}

nlohmann::json SimCluster::statistics() {
  return sim_->call([this] {
    nlohmann::json out = nlohmann::json::array();
    for (unsigned n = 0; n < sim_->nodes(); ++n) out.push_back(sim_->server_statistics(n));
    return out;
  });
}

}  // namespace spyre_dma::model
