// The `refdev` backend in the backend registry (spyre_dma/backend/registry.hpp).
#pragma once

#include "spyre_dma/backend/registry.hpp"

namespace spyre_dma::refdev {

// Registers `refdev`: a RefDevice with the default RefDeviceConfig; its memory backdoor is the
// device's SparseMemory. It takes no settings. A configuration patch may shape the device in the
// model's keys ({"device": {"depth": {...}, "max_cb_bytes", "memory_bytes", "usable_bytes",
// "capabilities"}}, and refdev's own "honour_compute_time"); anything else (a fault plan) is
// refused: refdev injects no faults.
void register_backend(backend::Registry& registry);

}  // namespace spyre_dma::refdev
