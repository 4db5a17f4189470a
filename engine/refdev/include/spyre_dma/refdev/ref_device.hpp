// The software reference device: the DMA controller of spyre_dma/hw/contract.hpp implemented
// functionally (no timing model) behind spyre_dma::Device.
//
// It is the golden model later backends (SystemC, RTL) are compared with, and the backend for users
// without SystemC. Everything the engine sees goes through the Device interface: BAR0 registers,
// map()/unmap() (an Iommu), RBs written into host memory and wait_for_interrupt().
//
// The contract's rules (register access, ring checks and queue faults, the barrier rule, CB
// admission and its RB fields, misbehaviour) come from the device core (spyre_dma/device_core/), as
// on every backend; the conformance suite holds every backend to them. What refdev itself decides:
//   * One worker thread per pipeline. A doorbell (CB_PI write) is numbered and published under the
//     doorbell order's short lock; it notifies the worker only when the worker sleeps. An idle
//     worker spins `idle_spin` before it sleeps.
//   * A worker fetches while CONTROL.ENABLE, QUEUE_CONTROL.enable, ERROR_STATUS == 0, no reset, no
//     fatal error, not paused, not hung and CB_CI != CB_PI. CB_CI advances as soon as a CB is
//     copied out of its slot. queue_fault_register() names the register of the last queue fault.
//   * RB write: waits (rechecking periodically) while the RB ring is full; the RB is published with
//     the core's publish_rb (word 0 last, with a release store), then RB_PI advances.
//   * Interrupt: after an RB, when IRQ_ENABLE bit 0 or the CB's interrupt bit is set, the pipeline's
//     bit is or-ed into a pending mask that wait_for_interrupt() returns and clears.
//   * CONTROL.RESET is synchronous: workers stop at the next safe point (a copy in progress
//     completes; a CB waiting for a barrier, RB space or its compute time is abandoned), CBs not yet
//     retired get no RB, the registers return to their reset values, pending interrupts and FATAL
//     clear, device memory is kept.
//   * FATAL: an internal failure (host memory exhausted for device pages) sets STATUS.FATAL,
//     FATAL_CAUSE = kDeviceMemoryFault and FATAL_DETAIL = the physical address; all pipelines stop
//     until reset.
//   * Test controls: pause(), set_faults() (a hang, an error every n CBs), set_misbehave() (the
//     core's misbehaviour kinds, fired once at the n-th CB started; reset undoes what it broke).
//     Misaligned and unassigned register accesses count in RefDeviceCounters::bad_register_accesses.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "spyre_dma/backend/capabilities.hpp"
#include "spyre_dma/device.hpp"
#include "spyre_dma/device_core/bar0_device.hpp"
#include "spyre_dma/hw/contract.hpp"
#include "spyre_dma/device_core/iommu.hpp"
#include "spyre_dma/device_core/register_file.hpp"
#include "spyre_dma/device_core/misbehave.hpp"
#include "spyre_dma/device_core/sparse_memory.hpp"

namespace spyre_dma::refdev {

namespace detail {
class Controller;
}

struct RefDeviceConfig {
  std::uint64_t device_memory_bytes = 128ull << 30;  // installed (DEVICE_MEM_BYTES)
  std::uint64_t usable_bytes = 112ull << 30;         // reported as DEVICE_MEM_USABLE
  // CB ring depth per pipeline, indexed by hw::Pipeline; powers of two.
  std::array<std::uint32_t, hw::kNumPipelines> depth{256, 1024, 1024};
  std::uint32_t max_cb_bytes = 64u << 20;
  bool honour_compute_time = false;  // true: a COMPUTE CB sleeps its duration
  std::uint64_t capabilities =
      hw::kCapFill | hw::kCapDeviceCopy | hw::kCapCompute | hw::kCapTimestamps;
  std::chrono::nanoseconds idle_spin{std::chrono::microseconds(10)};  // before a worker sleeps
  std::string name = "refdev";

  // What the identity registers report.
  device_core::DeviceIdentity identity() const;
};

// Test controls: fault injection, settable at any time.
struct RefDeviceFaults {
  // Stop answering, like a dead card: no CB is fetched and no RB written while set. A CB already
  // fetched holds its RB; clearing `hang` lets it through (reset drops it).
  bool hang = false;
  // Every n-th CB that decodes and checks out (counted from the last set_faults(), over all
  // pipelines) gets an Error RB kPcieError (detail = its host IOVA, else 0) and touches nothing.
  // 0: off.
  std::uint32_t error_every_n = 0;
};

// Test observations. A snapshot; counters run from construction (reset does not clear them).
struct RefDeviceCounters {
  std::array<std::uint64_t, hw::kNumPipelines> cbs_executed{};  // CBs retired with an RB
  std::array<std::uint64_t, hw::kNumPipelines> error_rbs{};     // of those, status Error
  std::array<std::uint64_t, hw::kNumPipelines> queue_faults{};
  std::uint64_t bytes_moved = 0;        // bytes of Good DMA CBs
  std::uint64_t injected_errors = 0;    // by error_every_n
  std::uint64_t misbehaviours = 0;      // by set_misbehave (0 or 1 per call)
  std::uint64_t interrupts = 0;         // raises
  std::uint64_t resets = 0;
  std::uint64_t bad_register_accesses = 0;
  std::uint64_t total_cbs() const noexcept { return cbs_executed[0] + cbs_executed[1] + cbs_executed[2]; }
  std::uint64_t total_errors() const noexcept { return error_rbs[0] + error_rbs[1] + error_rbs[2]; }
};

class RefDevice final : public device_core::IommuDevice,
                        public backend::MemoryBackdoor,
                        public backend::MisbehaveControl {
 public:
  // Throws std::invalid_argument for an identity device_core::validate refuses (a depth that is not
  // a power of two, zero memory, usable bytes above the memory size, max_cb_bytes of zero).
  explicit RefDevice(RefDeviceConfig config = {});
  ~RefDevice() override;  // stops and joins the workers promptly, whatever they wait for

  DeviceDescription describe() const override;  // backend "refdev", Progress::kSelfTimed
  std::uint32_t wait_for_interrupt(std::chrono::nanoseconds timeout) override;
  // The clock of its TIMESTAMP_NS and RB timestamps (the host's steady clock since it opened).
  std::uint64_t host_time_ns() override;
  void wake_waiter() noexcept override;

  const RefDeviceConfig& config() const noexcept;

  // --- Test controls (not part of the Device interface) -----------------------------------------
  // pause(): workers fetch no further CB (one already fetched completes, its RB included); doorbells
  // are still accepted and recorded, so a test can time pure submission. resume() restarts them.
  void pause();
  void resume();
  bool paused() const noexcept;
  void set_faults(const RefDeviceFaults& faults);
  RefDeviceFaults faults() const;
  // Arms one contract violation (spyre_dma/device_core/misbehave.hpp), its at_cb counted from this
  // call; kind kNone disarms. With several pipelines busy at once, which CB is the n-th fetched
  // depends on thread timing: tests that need one exact CB run one op at a time.
  void set_misbehave(const device_core::Misbehave& m);
  void arm_misbehave(const device_core::Misbehave& m) override { set_misbehave(m); }  // backend::MisbehaveControl
  device_core::Misbehave misbehave() const;
  RefDeviceCounters counters() const;
  // The register whose value caused the pipeline's last queue fault (an hw::reg offset within the
  // pipeline block: kCbRingSize, kCbRingBase_64, kRbRingSize, kRbRingBase_64 or kCbPi).
  std::uint64_t queue_fault_register(hw::Pipeline p) const;
  // Backdoor access for checks (and for preloading device memory): the device's own memory and
  // IOMMU.
  device_core::SparseMemory& memory() noexcept;
  const device_core::SparseMemory& memory() const noexcept;
  device_core::Iommu& iommu() noexcept;
  // backend::MemoryBackdoor: memory() as the registry's capability.
  void backdoor_read(std::uint64_t phys, void* dst, std::size_t bytes) override;
  const void* backdoor_view(std::uint64_t phys, std::size_t bytes, std::size_t& got) override;
  void backdoor_write(std::uint64_t phys, const void* src, std::size_t bytes) override;

 private:
  std::uint64_t bar0_read(std::uint64_t offset, unsigned width) override;
  void bar0_write(std::uint64_t offset, std::uint64_t value, unsigned width) override;
  device_core::Iommu& device_iommu() override;

  std::unique_ptr<detail::Controller> core_;
};

}  // namespace spyre_dma::refdev
