#include "sim_cluster_config.hpp"

#include <fmt/format.h>

#include "spyre_dma/model/config_loader.hpp"

namespace spyre_dma_cli {

std::optional<spyre_dma::model::SimConfig> sim_cluster_config(const std::string& command, const std::string& preset,
                                                              const std::string& config_file, unsigned nodes) {
  try {
    spyre_dma::model::SimConfig c =
        config_file.empty() ? spyre_dma::model::preset(preset) : spyre_dma::model::load_config(config_file);
    c.network.nodes = nodes;
    if (nodes != 2 && c.network.fabric == "back_to_back") c.network.fabric = "switch";
    spyre_dma::model::validate(c, config_file.empty() ? "preset " + preset : config_file);
    return c;
  } catch (const spyre_dma::model::ConfigError& e) {
    fmt::print(stderr, "spyre-dma: error: {}: {}\n", command, e.what());
    return std::nullopt;
  }
}

}  // namespace spyre_dma_cli
