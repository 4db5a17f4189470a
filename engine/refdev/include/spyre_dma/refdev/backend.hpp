// The `refdev` backend in the backend registry (spyre_dma/backend/registry.hpp).
#pragma once

#include "spyre_dma/backend/registry.hpp"

namespace spyre_dma::refdev {

// Registers `refdev`: a RefDevice with the default RefDeviceConfig; its memory backdoor is the
// device's SparseMemory. It takes no settings and no configuration patch (it injects no faults).
void register_backend(backend::Registry& registry);

}  // namespace spyre_dma::refdev
