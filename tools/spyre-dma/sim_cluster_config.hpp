// The simulated cluster that rdma-bench and allreduce run on with --backend sim.
#pragma once

#include <optional>
#include <string>

#include "spyre_dma/model/sim_config.hpp"

namespace spyre_dma_cli {

// The model configuration of `config_file` (a JSON file) or else of `preset`, with network.nodes
// set to `nodes`; a back-to-back fabric, which only two NICs can have, becomes a switch for more.
// A bad file or preset is said on standard error (naming the file, key and value) and gives no
// configuration: the command then exits 2.
std::optional<spyre_dma::model::SimConfig> sim_cluster_config(const std::string& command, const std::string& preset,
                                                              const std::string& config_file, unsigned nodes);

}  // namespace spyre_dma_cli
