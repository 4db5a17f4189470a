// The CUDA executor's entry points in a build without the CUDA toolkit (SPYRE_DMA_CUDA=OFF or
// the toolkit not found): they say so instead of failing to link.
#include "spyre_dma/cuda/cuda_copy_executor.hpp"
#include "spyre_dma/status.hpp"

namespace spyre_dma::cuda {

bool cuda_support_built() noexcept { return false; }

std::string cuda_device_unavailable_reason(int) {
  return "this build has no CUDA support (configure with the CUDA toolkit and -DSPYRE_DMA_CUDA=ON)";
}

std::unique_ptr<CopyExecutor> make_cuda_executor(const CudaExecutorConfig&) {
  throw DeviceFault("CUDA executor: " + cuda_device_unavailable_reason(0));
}

}  // namespace spyre_dma::cuda
