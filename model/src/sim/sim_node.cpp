// SimNode: a simulated server's devices over one NodeSimulation.
#include "spyre_dma/model/sim_node.hpp"

#include "sim/node_simulation.hpp"

namespace spyre_dma::model {

SimNode::SimNode(SimConfig config, std::string trace_path, std::string wave_path)
    : sim_(std::make_shared<NodeSimulation>(std::move(config), std::move(trace_path), std::move(wave_path))) {
  for (unsigned i = 0; i < sim_->size(); ++i) devices_.push_back(std::shared_ptr<SimDevice>(new SimDevice(sim_, i)));
}

SimNode::~SimNode() = default;

const SimConfig& SimNode::config() const noexcept { return sim_->config(); }

nlohmann::json SimNode::statistics() {
  return sim_->call([this] { return sim_->server_statistics(); });
}

}  // namespace spyre_dma::model
