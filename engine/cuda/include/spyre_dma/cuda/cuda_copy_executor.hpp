// The CUDA copy executor: device memory is one cudaMalloc'd region, each lane is a CUDA stream
// (created non-blocking), a command is cudaMemcpyAsync (H2D, D2H, D2D) or, for fills, an H2D copy
// of one pattern block followed by doubling D2D copies on the same stream, bracketed by two CUDA
// events whose times (cudaEventElapsedTime from an event recorded at start-up) are the RB
// timestamps. Host memory the engine maps is pinned with cudaHostRegister; where the driver
// refuses (a page already registered by an overlapping mapping), the copy runs from pageable
// memory, which CUDA also accepts.
//
// Always declared; implemented on CUDA when the build found the toolkit (cuda_support_built()),
// else every constructor throws DeviceFault saying so. cudart errors never escape as crashes:
// construction throws spyre_dma::DeviceFault (no device, no driver) or OutOfMemory (cudaMalloc),
// naming the call and cudaGetErrorString; a failing copy completes with ErrorKind kPcieError and
// detail = the cudaError_t, and describe_last_error() names the call.
#pragma once

#include <memory>
#include <string>

#include "spyre_dma/cuda/copy_engine_device.hpp"
#include "spyre_dma/cuda/copy_executor.hpp"

namespace spyre_dma::cuda {

struct CudaExecutorConfig {
  int device = 0;                              // CUDA device ordinal
  std::uint64_t device_memory_bytes = 4ull << 30;  // the cudaMalloc'd region
  bool pin_host_mappings = true;               // cudaHostRegister what the engine maps
};

// Whether this build has the CUDA executor.
bool cuda_support_built() noexcept;

// Empty when a CUDA device is usable now (this build has CUDA, the driver loads, the ordinal
// exists), else why not: the reason tests print when they skip.
std::string cuda_device_unavailable_reason(int device = 0);

// Throws as described above.
std::unique_ptr<CopyExecutor> make_cuda_executor(const CudaExecutorConfig& config = {});

// A CopyEngineDevice on the CUDA executor: the `cuda` backend.
std::shared_ptr<CopyEngineDevice> open_cuda_device(const CudaExecutorConfig& executor = {},
                                                   CopyEngineDeviceConfig device = {});

}  // namespace spyre_dma::cuda
