// Device backends the tool can open by name (--backend).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "spyre_dma/device.hpp"

namespace spyre_dma_cli {

// The names this build can open, in the order --help lists them.
const std::vector<std::string>& backend_names();

// Empty when `name` is a backend of this build, else a message naming the value.
std::string check_backend(const std::string& name);

// Opens a fresh device of that backend; throws std::invalid_argument for an unknown name.
std::shared_ptr<spyre_dma::Device> open_backend(const std::string& name);

}  // namespace spyre_dma_cli
