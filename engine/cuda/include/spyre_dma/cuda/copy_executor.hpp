// The copy-executor seam of the CUDA backend: what CopyEngineDevice (copy_engine_device.hpp)
// needs from whatever moves the bytes. CopyEngineDevice does everything the hardware contract
// asks of a device (registers, rings, CB decode, XLAT, IOMMU, ordering, RBs, timeouts) and hands
// each CB that passes its checks to an executor as one CopyCommand on the lane of its pipeline.
//
// Two executors exist: HostCopyExecutor (memcpy on host threads; always built, the unit tests'
// executor) and CudaCopyExecutor (cudaMemcpyAsync on one CUDA stream per lane; built when the
// CUDA toolkit is found).
//
// Contract for implementations:
//   * Commands of one lane run in submission order; lanes are independent of each other.
//   * poll() never blocks; it reports a command done once it and every earlier command of its
//     lane are done (completion is in order per lane).
//   * Timestamps are nanoseconds on the executor's own clock (now_ns()), nonzero.
//   * Nothing throws out of submit()/poll() for a failed copy: a failure is a completion with an
//     ErrorKind and a detail (for CUDA: the cudaError_t); describe_last_error() says more.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "spyre_dma/hw/contract.hpp"

namespace spyre_dma::cuda {

enum class CopyKind : std::uint8_t {
  kHostToDevice,    // host -> device memory
  kDeviceToHost,    // device memory -> host
  kDeviceToDevice,  // device memory -> device memory
  kFill,            // replicate a 32-bit pattern over device memory (byte i = pattern >> 8*(i%4))
};

struct CopyCommand {
  CopyKind kind = CopyKind::kHostToDevice;
  std::uint64_t device_offset = 0;  // byte offset into device memory: destination, or D2H source
  std::uint64_t source_offset = 0;  // kDeviceToDevice: the source's byte offset
  std::uint8_t* host = nullptr;     // kHostToDevice source / kDeviceToHost destination
  std::uint64_t bytes = 0;
  std::uint32_t pattern = 0;        // kFill
};

struct CopyCompletion {
  hw::ErrorKind error = hw::ErrorKind::kNone;
  std::uint64_t detail = 0;  // for an error: what the executor names (cudaError_t for CUDA)
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
};

using Ticket = std::uint64_t;

class CopyExecutor {
 public:
  virtual ~CopyExecutor() = default;
  CopyExecutor() = default;
  CopyExecutor(const CopyExecutor&) = delete;
  CopyExecutor& operator=(const CopyExecutor&) = delete;

  // One line: what runs the copies ("CUDA device 0: NVIDIA H200, ...").
  virtual std::string describe() const = 0;
  // Bytes of device memory behind offsets 0..device_memory_bytes() (one contiguous region).
  virtual std::uint64_t device_memory_bytes() const = 0;

  // Host memory the device was given (Device::map) and taken back (Device::unmap). The CUDA
  // executor pins it (cudaHostRegister) so that copies from it run as DMA, as registered memory
  // does on the card; an executor that needs nothing ignores them. Never throws.
  virtual void host_mapped(void* host, std::size_t bytes) noexcept = 0;
  virtual void host_unmapped(void* host) noexcept = 0;

  // Queues `command` on `lane` (0..kNumPipelines-1). Returns its ticket (increasing per lane).
  virtual Ticket submit(unsigned lane, const CopyCommand& command) = 0;
  // The completion of `ticket` on `lane`, or nullopt while it runs. Each ticket is reported once.
  virtual std::optional<CopyCompletion> poll(unsigned lane, Ticket ticket) = 0;
  // Waits until everything queued on `lane` has ended or `timeout` passes; true when drained.
  // Used by reset and shutdown so no copy still touches host memory the engine frees.
  virtual bool drain(unsigned lane, std::chrono::nanoseconds timeout) = 0;
  // The executor's clock, ns (the timebase of CopyCompletion).
  virtual std::uint64_t now_ns() = 0;

  // Backdoor access to device memory for checks (blocking; not timed). Throw std::out_of_range
  // outside device memory, spyre_dma::DeviceFault when the executor fails.
  virtual void read_device(std::uint64_t offset, void* dst, std::size_t bytes) = 0;
  virtual void write_device(std::uint64_t offset, const void* src, std::size_t bytes) = 0;

  // The last error the executor met, with its origin ("cudaMemcpyAsync: invalid argument"), or "".
  virtual std::string describe_last_error() const = 0;
};

}  // namespace spyre_dma::cuda
