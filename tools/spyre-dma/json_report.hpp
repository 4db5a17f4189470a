// The demo's --json output: the resolved options, the device limits and every sweep point.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "spyre_dma/spyre_dma.hpp"
#include "sweep.hpp"

namespace spyre_dma_cli {

nlohmann::json device_json(const spyre_dma::Engine& engine, const spyre_dma::DeviceDescription& device);
nlohmann::json results_json(const std::vector<PointResult>& results);

// Writes `doc` (pretty-printed) to `path`; throws std::runtime_error naming the path on failure.
void write_json_file(const std::string& path, const nlohmann::json& doc);

}  // namespace spyre_dma_cli
