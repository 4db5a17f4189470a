// The `rtl` backend in the backend registry (spyre_dma/backend/registry.hpp), and the RTL data path
// in the model's data path registry (spyre_dma/model/data_path.hpp).
#pragma once

#include "spyre_dma/backend/registry.hpp"

namespace spyre_dma::rtl {

// Makes data_path "rtl" available to every SimDevice of this process (idempotent). A program that
// opens the model with SimConfig::data_path = kRtl without the registry calls this first.
void register_data_path();

// Registers `rtl` (the model's settings; its wave is a .vcd or .fst of the RTL's signals) and the data
// path it runs.
void register_backend(backend::Registry& registry);

}  // namespace spyre_dma::rtl
