// The `cuda` backend in the backend registry (spyre_dma/backend/registry.hpp).
#pragma once

#include "spyre_dma/backend/registry.hpp"

namespace spyre_dma::cuda {

// Registers `cuda`: a CopyEngineDevice on the CUDA executor (setting executor=cuda, the default;
// unavailable in a build without the CUDA toolkit or on a machine without a usable GPU, with the
// reason) or on the host memcpy executor (executor=host, available everywhere). Settings:
// executor, cuda-memory (device memory, bytes),
// cuda-device (the CUDA device ordinal). Its memory backdoor reaches the executor's region.
void register_backend(backend::Registry& registry);

}  // namespace spyre_dma::cuda
