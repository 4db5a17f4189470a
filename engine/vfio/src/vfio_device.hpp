// The Device every VFIO transport shares: BAR0 as region 0, DMA mappings at IOVAs this side
// picks, MSI-X interrupts on one eventfd per pipeline, and (from a device server) the memory and
// clock regions of a test bench. What differs between a real card and a device server is only how
// each operation travels: the Transport, the kernel's VFIO ioctls (kernel_transport.cpp) or
// vfio-user messages (user_transport.cpp).
#pragma once

#include <poll.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "channel.hpp"
#include "spyre_dma/backend/capabilities.hpp"
#include "spyre_dma/device.hpp"
#include "spyre_dma/device_core/iommu.hpp"
#include "spyre_dma/hw/contract.hpp"
#include "spyre_dma/vfio/options.hpp"
#include "spyre_dma/vfio/protocol.hpp"

namespace spyre_dma::vfio {

// The operations of VFIO's device and IOMMU API, as one transport carries them. Errors throw:
// std::invalid_argument for what the other side refused as invalid, std::runtime_error otherwise,
// each naming peer().
class Transport {
 public:
  virtual ~Transport() = default;
  // The other side, for messages: "the server at /run/x.sock", "the card at 0000:3b:00.0".
  virtual const std::string& peer() const = 0;
  virtual DeviceInfo device_info() = 0;
  virtual RegionInfo region_info(std::uint32_t index) = 0;
  virtual IrqInfo irq_info(std::uint32_t index) = 0;
  // With kIrqDataEventfd, `fds` holds set.count eventfds.
  virtual void set_irqs(const IrqSet& set, const int* fds) = 0;
  virtual void region_read(std::uint32_t region, std::uint64_t offset, std::uint8_t* dst, std::uint32_t n) = 0;
  // `posted`: no wait for the write to be applied (a PCIe posted write; later reads still see it).
  // `timeout`: how long an acknowledged write may take (zero: the transport's default).
  virtual void region_write(std::uint32_t region, std::uint64_t offset, const std::uint8_t* src, std::uint32_t n,
                            bool posted, std::chrono::nanoseconds timeout) = 0;
  // [iova, iova + bytes) of the device's IOVA space becomes [host, host + bytes); flags are
  // kDmaRead / kDmaWrite (the device reads / writes it).
  virtual void dma_map(std::uint64_t iova, void* host, std::size_t bytes, std::uint32_t flags) = 0;
  virtual void dma_unmap(std::uint64_t iova, std::size_t bytes) = 0;
  virtual void reset() = 0;
  // A descriptor that reports a hang-up when the other side is gone (-1: none): an interrupt wait
  // then ends at once instead of at its timeout.
  virtual int hangup_fd() const { return -1; }
  // Interrupts the other side left in memory both share instead of on their eventfds (a mask of
  // 1 << pipeline; 0 where there is no such memory), and the word that the caller is about to
  // sleep on the eventfds (true: then the other side signals them too) or has woken (false).
  virtual std::uint32_t take_interrupts() noexcept { return 0; }
  virtual void sleeping_on_interrupts(bool /*sleeping*/) noexcept {}
};

class VfioDevice final : public Device,
                         public backend::MemoryBackdoor,
                         public backend::SimulatedClock,
                         public backend::MisbehaveControl {
 public:
  // Sets the device up: a device reset where it offers one, BAR0 (region 0, readable and
  // writable, the contract's size), this
  // project's regions where the other side has them, MSI-X through eventfds (unless polling). A host-driven
  // description needs the clock region. Throws std::runtime_error naming the peer.
  VfioDevice(std::unique_ptr<Transport> transport, DeviceDescription description,
             InterruptMode interrupts = InterruptMode::kEventfds);
  ~VfioDevice() override;

  DeviceDescription describe() const override { return description_; }
  std::uint32_t read32(std::uint64_t offset) override { return static_cast<std::uint32_t>(read(offset, 4)); }
  std::uint64_t read64(std::uint64_t offset) override { return read(offset, 8); }
  void write32(std::uint64_t offset, std::uint32_t value) override { write(kBar0Region, offset, value, 4, true); }
  void write64(std::uint64_t offset, std::uint64_t value) override { write(kBar0Region, offset, value, 8, true); }
  std::uint64_t map(void* host, std::size_t bytes, DmaAccess access) override;
  void unmap(std::uint64_t iova) override;
  std::uint32_t wait_for_interrupt(std::chrono::nanoseconds timeout) override;
  void wake_waiter() noexcept override;
  void host_copied(std::uint64_t bytes) override;

  void backdoor_read(std::uint64_t phys, void* dst, std::size_t bytes) override;
  void backdoor_write(std::uint64_t phys, const void* src, std::size_t bytes) override;
  double now_ns() override;
  void arm_misbehave(const device_core::Misbehave& misbehave) override;

  bool has_memory() const noexcept { return memory_bytes_ != 0; }
  bool has_clock() const noexcept { return host_driven_; }
  bool has_misbehave() const noexcept { return misbehave_; }
  Transport& transport() noexcept { return *transport_; }

 private:
  std::uint64_t read(std::uint64_t offset, unsigned width);
  void write(std::uint32_t region, std::uint64_t offset, std::uint64_t value, unsigned width, bool posted,
             std::chrono::nanoseconds timeout = std::chrono::nanoseconds::zero());
  // The interrupts signalled so far, waiting up to `timeout` for the first.
  std::uint32_t collect(std::chrono::nanoseconds timeout);
  void take_wake_up(const pollfd& wake) noexcept;  // clears the wake-up eventfd where poll() saw it

  std::unique_ptr<Transport> transport_;
  DeviceDescription description_;
  bool host_driven_ = false;
  InterruptMode interrupts_;
  std::uint64_t memory_bytes_ = 0;  // of the memory region (0: no backdoor)
  bool misbehave_ = false;          // the misbehaviour region is there
  device_core::Iommu iovas_;        // this side's IOVA space, under the device's IOMMU rules
  std::mutex mu_;
  std::map<std::uint64_t, std::uint64_t> mapped_;  // IOVA -> bytes
  std::array<UniqueFd, hw::kNumPipelines> eventfds_;
  UniqueFd wake_fd_;  // wake_waiter() writes it; every interrupt wait polls it
};

}  // namespace spyre_dma::vfio
