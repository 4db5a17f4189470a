// The `cuda` backend: a CopyEngineDevice on the CUDA executor.
#include "spyre_dma/cuda/cuda_copy_executor.hpp"

namespace spyre_dma::cuda {

std::shared_ptr<CopyEngineDevice> open_cuda_device(const CudaExecutorConfig& executor, CopyEngineDeviceConfig device) {
  return std::make_shared<CopyEngineDevice>(make_cuda_executor(executor), std::move(device));
}

}  // namespace spyre_dma::cuda
