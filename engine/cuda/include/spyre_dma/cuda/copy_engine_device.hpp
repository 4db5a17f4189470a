// CopyEngineDevice: a spyre_dma::Device that runs the hardware contract (spyre_dma/hw/contract.hpp)
// on a CopyExecutor, so that the unchanged engine drives a GPU's copy engines (CudaCopyExecutor)
// or host memcpy (HostCopyExecutor). docs/backend-cuda.md describes what it shares with the other
// backends and what it bypasses.
//
// Behaviour (the contract's rules; where the contract leaves a choice, fixed here):
//   * BAR0: identification, capabilities (fill, device copy, compute, timestamps), depths, MAX_CB,
//     device memory (the executor's region: installed = usable), CONTROL/STATUS, and per pipeline
//     the ring registers, CB_PI (the doorbell), CB_CI, RB_PI, RB_CI, IRQ_ENABLE, IRQ_VECTOR,
//     ERROR_STATUS and QUEUE_CONTROL. Unassigned offsets read 0 and ignore writes; offsets beyond
//     BAR0 throw std::out_of_range.
//   * map()/unmap(): an IOMMU (refdev::Iommu, the same one refdev uses) gives IOVAs; the executor
//     is told of each mapping (the CUDA executor pins it).
//   * One runner thread per pipeline. On a doorbell it fetches CBs in index order through the
//     IOMMU, decodes them (hw::decode_cb), checks pipeline, length, XLAT, device memory bounds and
//     the host IOVA, and submits the copy to the executor on that pipeline's lane (a CUDA stream).
//     Up to `window` CBs per pipeline are in the executor at once; they retire in index order,
//     each with one RB (tag, status, error, start/end from the executor's timestamps, bytes).
//   * A CB that fails a check gets an Error RB naming the field (as refdev does) in its turn.
//   * Barrier: a CB with BARRIER is submitted only after every CB handed over by an earlier
//     doorbell, on any pipeline, has retired (the runner waits on the host; the copy engines then
//     start it, so start_ns is taken after the wait).
//   * A copy that does not complete within `completion_timeout` retires with an Error RB
//     kCompletionTimeout; the pipeline then stops (ERROR_STATUS = kCompletionTimeout) until reset,
//     since its lane still holds the copy.
//   * COMPUTE CBs (timed placeholders) wait their duration on the host clock.
//   * CONTROL.RESET: runners stop taking CBs, wait (bounded by `completion_timeout`) for the
//     executor's lanes to drain, drop CBs not retired (no RB), clear the pipeline registers.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "spyre_dma/cuda/copy_executor.hpp"
#include "spyre_dma/device.hpp"

namespace spyre_dma::cuda {

namespace detail {
class DeviceState;
}

struct CopyEngineDeviceConfig {
  std::array<std::uint32_t, hw::kNumPipelines> depth{256, 1024, 1024};  // powers of two
  std::uint32_t max_cb_bytes = 64u << 20;
  // CBs of one pipeline in the executor at once (queued on its stream): enough that the copy
  // engine never waits for the host between CBs.
  std::uint32_t window = 16;
  std::chrono::nanoseconds completion_timeout{std::chrono::seconds(30)};
  std::string name = "cuda";
};

class CopyEngineDevice final : public Device {
 public:
  // Throws std::invalid_argument for a null executor, a depth that is not a power of two, a zero
  // window or max_cb_bytes, or a non-positive timeout.
  CopyEngineDevice(std::unique_ptr<CopyExecutor> executor, CopyEngineDeviceConfig config = {});
  ~CopyEngineDevice() override;  // stops the runners; waits (bounded) for the lanes to drain

  DeviceDescription describe() const override;  // backend config.name, Progress::kSelfTimed
  std::uint32_t read32(std::uint64_t offset) override;
  void write32(std::uint64_t offset, std::uint32_t value) override;
  std::uint64_t read64(std::uint64_t offset) override;
  void write64(std::uint64_t offset, std::uint64_t value) override;
  std::uint64_t map(void* host, std::size_t bytes, DmaAccess access) override;
  void unmap(std::uint64_t iova) override;
  std::uint32_t wait_for_interrupt(std::chrono::nanoseconds timeout) override;

  CopyExecutor& executor() noexcept;
  const CopyEngineDeviceConfig& config() const noexcept;

 private:
  std::unique_ptr<detail::DeviceState> state_;
};

}  // namespace spyre_dma::cuda
