// The software reference device: the DMA controller of spyre_dma/hw/contract.hpp implemented
// functionally (no timing model) behind spyre_dma::Device.
//
// It is the golden model later backends (SystemC, RTL) are compared with, and the backend for users
// without SystemC. Everything the engine sees goes through the Device interface: BAR0 registers,
// map()/unmap() (an Iommu), RBs written into host memory and wait_for_interrupt().
//
// Behaviour (what the contract leaves to the device, fixed here):
//   * One worker thread per pipeline. A doorbell (CB_PI write) is an atomic store plus, under a short
//     lock, a record of the doorbell's global sequence number (for barriers); it notifies the worker
//     only when the worker sleeps. An idle worker spins `idle_spin` before it sleeps.
//   * A worker fetches while CONTROL.ENABLE, QUEUE_CONTROL.enable, ERROR_STATUS == 0, no reset, no
//     fatal error, not paused, not hung and CB_CI != CB_PI. Before each fetch it checks the rings:
//     a size that is not a power of two or exceeds the depth, a base that is not 4 KiB aligned, an
//     overrun (CB_PI - CB_CI > size) or a CB fetch the IOMMU refuses sets ERROR_STATUS = kQueueFault
//     and stops that pipeline without consuming the CB (no RB: its tag is unknown). Any nonzero
//     write to ERROR_STATUS clears it and the pipeline retries at CB_CI. queue_fault_register()
//     names the register at fault.
//   * CB_CI advances as soon as a CB is copied out of its slot: the slot may be reused at once.
//   * Every fetched CB gets exactly one RB (unless reset, hung or destroyed first), in index order.
//     Checks come before any memory is touched: decode (kMalformedCb with the field and raw value),
//     pipeline (field kPipeline, detail = the pipeline the work belongs to), byte count over
//     max_cb_bytes (field kDmiLength / kDmoLength, detail = length in flits), XLAT (kXlatFault,
//     detail = the encoded device VA, field = the VA or source field), device memory bounds
//     (kDeviceMemoryFault, detail = the physical byte address), IOMMU (kIommuFault, detail = the
//     byte IOVA, field = the host IOVA field). An RB for a CB whose CTRL is malformed carries the raw
//     CTRL bits 31:8 as tag (possibly outside 1..kMaxTag); match it by ring position.
//   * RB write: waits (rechecking periodically) while RB_PI - RB_CI == RB size; words 1..7 are
//     written first, then word 0 (tag, status, phase) with a release store, then RB_PI advances.
//     The engine must read word 0 with acquire semantics (or fence after seeing the phase). An RB
//     slot the IOMMU refuses sets ERROR_STATUS = kQueueFault; the RB is written once it is cleared.
//   * Interrupt: after an RB, when IRQ_ENABLE bit 0 or the CB's interrupt bit is set, the pipeline's
//     bit is or-ed into a pending mask that wait_for_interrupt() returns and clears.
//   * Barrier: a CB with BARRIER starts only after every CB handed by an earlier doorbell (on any
//     pipeline) has retired; RB start_ns is taken after that wait.
//   * CONTROL.RESET (write) is synchronous: workers stop at the next safe point (a copy in progress
//     completes; a CB waiting for a barrier, RB space or its compute time is abandoned), CBs not yet
//     retired get no RB, every per-pipeline register (rings, indices, IRQ, ERROR_STATUS,
//     QUEUE_CONTROL) returns to zero, pending interrupts and FATAL clear, device memory is kept.
//     CONTROL keeps the ENABLE bit of the value written with RESET.
//   * Disabling a queue or the device stops fetching only; a CB already fetched completes and its
//     RB is written once there is room.
//   * FATAL: an internal failure (host memory exhausted for device pages) sets STATUS.FATAL,
//     FATAL_CAUSE = kDeviceMemoryFault and FATAL_DETAIL = the physical address; all pipelines stop
//     until reset.
//   * Misbehave (a test control, set_misbehave()): the device breaks the ring contract once, at
//     the n-th CB it fetches, as spyre_dma/refdev/misbehave.hpp describes; CONTROL.RESET undoes
//     what it broke (a stopped pipeline, frozen registers) and it does not fire again.
//   * Register access: 32-bit accesses must be 4-byte aligned; a 32-bit access to either half of a
//     64-bit register reads or writes that half; a 64-bit access to a 32-bit register covers it and
//     the next one. Misaligned and unassigned offsets read 0 and ignore writes (counted in
//     RefDeviceCounters::bad_register_accesses); offsets at or beyond BAR0 throw std::out_of_range.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "spyre_dma/device.hpp"
#include "spyre_dma/hw/contract.hpp"
#include "spyre_dma/refdev/iommu.hpp"
#include "spyre_dma/refdev/misbehave.hpp"
#include "spyre_dma/refdev/sparse_memory.hpp"

namespace spyre_dma::refdev {

namespace detail {
class DeviceCore;
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

class RefDevice final : public Device {
 public:
  // Throws std::invalid_argument for a depth that is not a power of two, zero memory, usable
  // bytes above the memory size or max_cb_bytes of zero.
  explicit RefDevice(RefDeviceConfig config = {});
  ~RefDevice() override;  // stops and joins the workers promptly, whatever they wait for

  DeviceDescription describe() const override;  // backend "refdev", Progress::kSelfTimed
  std::uint32_t read32(std::uint64_t offset) override;
  void write32(std::uint64_t offset, std::uint32_t value) override;
  std::uint64_t read64(std::uint64_t offset) override;
  void write64(std::uint64_t offset, std::uint64_t value) override;
  std::uint64_t map(void* host, std::size_t bytes, DmaAccess access) override;
  void unmap(std::uint64_t iova) override;
  std::uint32_t wait_for_interrupt(std::chrono::nanoseconds timeout) override;

  const RefDeviceConfig& config() const noexcept;

  // --- Test controls (not part of the Device interface) -----------------------------------------
  // pause(): workers fetch no further CB (one already fetched completes, its RB included); doorbells
  // are still accepted and recorded, so a test can time pure submission. resume() restarts them.
  void pause();
  void resume();
  bool paused() const noexcept;
  void set_faults(const RefDeviceFaults& faults);
  RefDeviceFaults faults() const;
  // Arms one contract violation (spyre_dma/refdev/misbehave.hpp), its at_cb counted from this
  // call; kind kNone disarms. With several pipelines busy at once, which CB is the n-th fetched
  // depends on thread timing: tests that need one exact CB run one op at a time.
  void set_misbehave(const Misbehave& m);
  Misbehave misbehave() const;
  RefDeviceCounters counters() const;
  // The register whose value caused the pipeline's last queue fault (an hw::reg offset within the
  // pipeline block: kCbRingSize, kCbRingBase_64, kRbRingSize, kRbRingBase_64 or kCbPi).
  std::uint64_t queue_fault_register(hw::Pipeline p) const;
  // Backdoor access for checks (and for preloading device memory): the device's own memory and
  // IOMMU.
  SparseMemory& memory() noexcept;
  const SparseMemory& memory() const noexcept;
  Iommu& iommu() noexcept;

 private:
  std::unique_ptr<detail::DeviceCore> core_;
};

}  // namespace spyre_dma::refdev
