// CopyEngineDevice: a spyre_dma::Device that runs the hardware contract (spyre_dma/hw/contract.hpp)
// on a CopyExecutor, so that the unchanged engine drives a GPU's copy engines (CudaCopyExecutor)
// or host memcpy (HostCopyExecutor). docs/backend-cuda.md describes what it shares with the other
// backends and what it bypasses.
//
// The contract's rules (register access, ring checks and queue faults, the barrier rule, CB
// admission and its RB fields, misbehaviour) come from the device core (spyre_dma/device_core/), as
// on every backend; the conformance suite holds every backend to them. What this backend decides:
//   * Device memory is the executor's region (installed = usable), reached by physical address
//     through SegmentedRegion (each of the 8 segments gets an eighth of the region).
//   * map()/unmap(): the core's IOMMU gives IOVAs; the executor is told of each mapping (the CUDA
//     executor pins it).
//   * One worker thread per pipeline fetches CBs in index order and submits each admitted copy to
//     the executor on that pipeline's lane (a CUDA stream). Up to `window` CBs per pipeline are in
//     the executor at once; they retire in index order, each with one RB (start/end from the
//     executor's timestamps). A barrier CB is submitted only once the barrier rule allows it (the
//     worker waits on the host; start_ns is the copy engine's).
//   * A copy that does not complete within `completion_timeout` retires with an Error RB
//     kCompletionTimeout; the pipeline then stops (ERROR_STATUS = kCompletionTimeout) until reset,
//     since its lane still holds the copy.
//   * COMPUTE CBs (timed placeholders) wait their duration on the host clock.
//   * CONTROL.RESET: workers stop taking CBs, wait (bounded by `completion_timeout`) for the
//     executor's lanes to drain, drop CBs not retired (no RB), the registers return to their reset
//     values. A lane that does not drain leaves STATUS.FATAL (kCompletionTimeout).
//   * Misbehaviour (set_misbehave) counts the CBs as the workers start them (after a barrier's wait).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "spyre_dma/backend/capabilities.hpp"
#include "spyre_dma/cuda/copy_executor.hpp"
#include "spyre_dma/device.hpp"
#include "spyre_dma/device_core/bar0_device.hpp"
#include "spyre_dma/device_core/misbehave.hpp"

namespace spyre_dma::cuda {

namespace detail {
class Controller;
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

class CopyEngineDevice final : public device_core::Bar0Device,
                               public backend::MemoryBackdoor,
                               public backend::MisbehaveControl {
 public:
  // Throws std::invalid_argument for a null executor, a depth that is not a power of two, a zero
  // window or max_cb_bytes, or a non-positive timeout.
  CopyEngineDevice(std::unique_ptr<CopyExecutor> executor, CopyEngineDeviceConfig config = {});
  ~CopyEngineDevice() override;  // stops the workers; waits (bounded) for the lanes to drain

  DeviceDescription describe() const override;  // backend config.name, Progress::kSelfTimed
  std::uint64_t map(void* host, std::size_t bytes, DmaAccess access) override;
  std::uint64_t map_at(void* host, std::size_t bytes, DmaAccess access, std::uint64_t iova) override;
  void unmap(std::uint64_t iova) override;
  std::uint32_t wait_for_interrupt(std::chrono::nanoseconds timeout) override;
  // The executor's clock, which its RB timestamps use.
  std::uint64_t host_time_ns() override;
  void wake_waiter() noexcept override;

  CopyExecutor& executor() noexcept;
  const CopyEngineDeviceConfig& config() const noexcept;
  // Test control: arms one contract violation (spyre_dma/device_core/misbehave.hpp), counted from
  // this call over the CBs the device starts; kind kNone disarms.
  void set_misbehave(const device_core::Misbehave& m);
  void arm_misbehave(const device_core::Misbehave& m) override { set_misbehave(m); }  // backend::MisbehaveControl
  device_core::Misbehave misbehave() const;
  // backend::MemoryBackdoor: the executor's device memory at physical device addresses.
  void backdoor_read(std::uint64_t phys, void* dst, std::size_t bytes) override;
  void backdoor_write(std::uint64_t phys, const void* src, std::size_t bytes) override;

 private:
  std::uint64_t bar0_read(std::uint64_t offset, unsigned width) override;
  void bar0_write(std::uint64_t offset, std::uint64_t value, unsigned width) override;
  std::uint64_t located(std::uint64_t phys, std::size_t bytes) const;
  std::uint64_t mapped(std::uint64_t iova, void* host, std::size_t bytes);

  std::unique_ptr<detail::Controller> state_;
};

}  // namespace spyre_dma::cuda
