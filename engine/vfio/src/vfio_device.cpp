// The Device shared by every VFIO transport (see vfio_device.hpp).
#include "vfio_device.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <stdexcept>

#include "spyre_dma/device_core/register_file.hpp"
#include "spyre_dma/hex.hpp"

namespace spyre_dma::vfio {
namespace {

std::uint64_t le_value(const std::uint8_t* p, unsigned n) {
  std::uint64_t v = 0;
  for (unsigned i = 0; i < n; ++i) v |= std::uint64_t{p[i]} << (8 * i);
  return v;
}

}  // namespace

VfioDevice::VfioDevice(std::unique_ptr<Transport> transport, DeviceDescription description,
                       InterruptMode interrupts)
    : transport_(std::move(transport)), description_(std::move(description)), interrupts_(interrupts) {
  host_driven_ = description_.progress == Progress::kHostDriven;
  const std::string& peer = transport_->peer();
  wake_fd_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake_fd_) throw std::runtime_error(std::string("vfio: no eventfd: ") + std::strerror(errno));
  const DeviceInfo di = transport_->device_info();
  if ((di.flags & kDeviceFlagPci) == 0 || di.num_regions <= kBar0Region || di.num_irqs <= kMsixIrqIndex) {
    throw std::runtime_error("vfio: " + peer + " is not a PCI device with BAR0 and MSI-X");
  }
  // A function-level reset first, where the device has one, as a driver starts from a clean card
  // (a vfio-user server's fresh device takes it as CONTROL.RESET).
  if ((di.flags & kDeviceFlagReset) != 0) transport_->reset();
  const RegionInfo bar0 = transport_->region_info(kBar0Region);
  if (bar0.size < hw::reg::kBar0Bytes || (bar0.flags & (kRegionRead | kRegionWrite)) != (kRegionRead | kRegionWrite)) {
    throw std::runtime_error("vfio: " + peer + " has a BAR0 of " + std::to_string(bar0.size) +
                             " bytes; the device's registers need " + std::to_string(hw::reg::kBar0Bytes));
  }
  // This project's regions, where the other side has them (a real card has neither).
  auto vendor_region = [&](std::uint32_t index, std::uint32_t subtype) -> std::uint64_t {
    if (di.num_regions <= index) return 0;
    const RegionInfo ri = transport_->region_info(index);
    return ri.has_type && ri.type == kVendorRegionType && ri.subtype == subtype ? ri.size : 0;
  };
  if (host_driven_ && vendor_region(kClockRegion, kClockRegionSubtype) < kClockRegionBytes) {
    throw std::runtime_error("vfio: " + peer + " serves a host-driven device without its clock region");
  }
  memory_bytes_ = vendor_region(kMemoryRegion, kMemoryRegionSubtype);
  misbehave_ = vendor_region(kMisbehaveRegion, kMisbehaveRegionSubtype) >= kMisbehaveRegionBytes;
  if (interrupts_ == InterruptMode::kPolling) return;  // no vectors: waiters poll the RB rings
  if (transport_->irq_info(kMsixIrqIndex).count < hw::kNumPipelines) {
    throw std::runtime_error("vfio: " + peer + " has fewer MSI-X vectors than the device's pipelines");
  }
  std::array<int, hw::kNumPipelines> fds{};
  for (unsigned p = 0; p < hw::kNumPipelines; ++p) {
    eventfds_[p].reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!eventfds_[p]) throw std::runtime_error(std::string("vfio: no eventfd: ") + std::strerror(errno));
    fds[p] = eventfds_[p].get();
  }
  IrqSet set;
  set.flags = kIrqDataEventfd | kIrqActionTrigger;
  set.index = kMsixIrqIndex;
  set.count = hw::kNumPipelines;
  transport_->set_irqs(set, fds.data());
}

VfioDevice::~VfioDevice() {
  if (interrupts_ == InterruptMode::kPolling) return;
  try {
    IrqSet none;  // every vector released before the eventfds close
    none.flags = kIrqDataNone | kIrqActionTrigger;
    none.index = kMsixIrqIndex;
    transport_->set_irqs(none, nullptr);
  } catch (...) {
  }
}

std::uint64_t VfioDevice::read(std::uint64_t offset, unsigned width) {
  device_core::check_bar0_access(offset, width, false, "vfio");  // the contract's rule, before any message
  std::uint8_t b[8];
  transport_->region_read(kBar0Region, offset, b, width);
  return le_value(b, width);
}

void VfioDevice::write(std::uint32_t region, std::uint64_t offset, std::uint64_t value, unsigned width, bool posted,
                       std::chrono::nanoseconds timeout) {
  if (region == kBar0Region) device_core::check_bar0_access(offset, width, true, "vfio");
  std::uint8_t b[8];
  for (unsigned i = 0; i < width; ++i) b[i] = static_cast<std::uint8_t>(value >> (8 * i));
  transport_->region_write(region, offset, b, width, posted, timeout);
}

std::uint64_t VfioDevice::map(void* host, std::size_t bytes, DmaAccess access) {
  const std::uint64_t iova = iovas_.map(host, bytes, access);  // this side picks, under the device's rules
  const auto bits = static_cast<unsigned>(access);
  const std::uint32_t flags = (bits & static_cast<unsigned>(DmaAccess::kDeviceReads) ? kDmaRead : 0) |
                              (bits & static_cast<unsigned>(DmaAccess::kDeviceWrites) ? kDmaWrite : 0);
  try {
    transport_->dma_map(iova, host, bytes, flags);
  } catch (...) {
    iovas_.unmap(iova);
    throw;
  }
  std::lock_guard<std::mutex> lock(mu_);
  mapped_[iova] = bytes;
  return iova;
}

void VfioDevice::unmap(std::uint64_t iova) {
  std::uint64_t bytes = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = mapped_.find(iova);
    if (it == mapped_.end()) throw std::invalid_argument("vfio: unmap of " + hex(iova) + ", which map() did not return");
    bytes = it->second;
    mapped_.erase(it);
  }
  iovas_.unmap(iova);
  transport_->dma_unmap(iova, bytes);  // returns once the device can no longer reach the bytes
}

std::uint32_t VfioDevice::wait_for_interrupt(std::chrono::nanoseconds timeout) {
  if (host_driven_) {
    // The server runs the device until an interrupt or the timeout; the interrupts are on their
    // eventfds before its reply leaves.
    const auto ns = static_cast<std::uint64_t>(std::max<std::int64_t>(timeout.count(), 0));
    write(kClockRegion, kClockWaitOffset, ns, 8, false, timeout + std::chrono::seconds(30));
    return collect(std::chrono::nanoseconds::zero());
  }
  return collect(timeout);
}

void VfioDevice::wake_waiter() noexcept {
  // An eventfd counts: a write before the wait's poll() is seen by it.
  const std::uint64_t one = 1;
  (void)!::write(wake_fd_.get(), &one, sizeof one);
}

void VfioDevice::host_copied(std::uint64_t bytes) {
  if (host_driven_) write(kClockRegion, kClockHostCopiedOffset, bytes, 8, true);
}

void VfioDevice::take_wake_up(const pollfd& wake) noexcept {
  // One read clears every wake_waiter() since the last.
  if ((wake.revents & POLLIN) == 0) return;
  std::uint64_t count = 0;
  (void)!::read(wake_fd_.get(), &count, sizeof count);
}

std::uint32_t VfioDevice::collect(std::chrono::nanoseconds timeout) {
  // A zero-timeout collect leaves a wake-up to the wait it is meant for (poll() ignores fd -1).
  const int wake_fd = timeout > std::chrono::nanoseconds::zero() ? wake_fd_.get() : -1;
  if (interrupts_ == InterruptMode::kPolling) {
    // No interrupt will come: wait one polling interval (or less), watching only for a hang-up
    // and for wake_waiter().
    std::array<pollfd, 2> watch{{{transport_->hangup_fd(), POLLRDHUP, 0}, {wake_fd, POLLIN, 0}}};
    const auto wait = std::clamp<std::chrono::nanoseconds>(timeout, std::chrono::nanoseconds::zero(), kPollInterval);
    const timespec ts{0, static_cast<long>(wait.count())};
    if (::ppoll(watch.data(), watch.size(), &ts, nullptr) > 0 &&
        (watch[0].revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0) {
      throw std::runtime_error("vfio: " + transport_->peer() + " closed the connection");
    }
    take_wake_up(watch[1]);
    return 0;
  }
  // The pipelines' vectors, then the hang-up, then wake_waiter()'s eventfd.
  constexpr unsigned kHangup = hw::kNumPipelines, kWake = hw::kNumPipelines + 1;
  std::array<pollfd, hw::kNumPipelines + 2> fds{};
  for (unsigned p = 0; p < hw::kNumPipelines; ++p) fds[p] = {eventfds_[p].get(), POLLIN, 0};
  fds[kHangup] = {transport_->hangup_fd(), POLLRDHUP, 0};  // a negative fd is ignored
  fds[kWake] = {wake_fd, POLLIN, 0};
  // Interrupts left in shared memory first; to sleep, the word goes out and they are taken once
  // more (the other side signals the eventfds from then on, see doorbell_log.hpp).
  std::uint32_t in_memory = transport_->take_interrupts();
  const bool sleep = in_memory == 0 && timeout > std::chrono::nanoseconds::zero();
  if (sleep) {
    transport_->sleeping_on_interrupts(true);
    in_memory = transport_->take_interrupts();
  }
  const auto ms = in_memory != 0 ? std::chrono::milliseconds(0)
                                 : std::chrono::duration_cast<std::chrono::milliseconds>(timeout + std::chrono::microseconds(999));
  int ready = 0;
  do {
    ready = ::poll(fds.data(), fds.size(), static_cast<int>(std::clamp<std::int64_t>(ms.count(), 0, 1 << 30)));
  } while (ready < 0 && errno == EINTR);
  if (sleep) transport_->sleeping_on_interrupts(false);
  in_memory |= transport_->take_interrupts();
  if (ready < 0) throw std::runtime_error(std::string("vfio: waiting for interrupts failed: ") + std::strerror(errno));
  if ((fds[kHangup].revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0) {
    throw std::runtime_error("vfio: " + transport_->peer() + " closed the connection");
  }
  take_wake_up(fds[kWake]);
  std::uint32_t mask = in_memory;
  for (unsigned p = 0; p < hw::kNumPipelines; ++p) {
    std::uint64_t count = 0;
    if (::read(eventfds_[p].get(), &count, sizeof count) == static_cast<ssize_t>(sizeof count) && count != 0) {
      mask |= 1u << p;
    }
  }
  return mask;
}

void VfioDevice::backdoor_read(std::uint64_t phys, void* dst, std::size_t bytes) {
  if (!has_memory()) throw std::logic_error("vfio: " + transport_->peer() + " offers no memory region");
  auto* out = static_cast<std::uint8_t*>(dst);
  for (std::size_t done = 0; done < bytes;) {
    const auto n = static_cast<std::uint32_t>(std::min<std::size_t>(bytes - done, kMaxMemoryAccess));
    transport_->region_read(kMemoryRegion, phys + done, out + done, n);
    done += n;
  }
}

void VfioDevice::backdoor_write(std::uint64_t phys, const void* src, std::size_t bytes) {
  if (!has_memory()) throw std::logic_error("vfio: " + transport_->peer() + " offers no memory region");
  const auto* in = static_cast<const std::uint8_t*>(src);
  for (std::size_t done = 0; done < bytes;) {
    const auto n = static_cast<std::uint32_t>(std::min<std::size_t>(bytes - done, kMaxMemoryAccess));
    transport_->region_write(kMemoryRegion, phys + done, in + done, n, false, {});  // acknowledged: DMA sees it
    done += n;
  }
}

void VfioDevice::arm_misbehave(const device_core::Misbehave& m) {
  if (!misbehave_) throw std::logic_error("vfio: " + transport_->peer() + " offers no misbehaviour region");
  const std::uint64_t fields[4] = {static_cast<std::uint64_t>(m.kind), m.at_cb, m.rogue_iova, m.rogue_device_offset};
  std::uint8_t b[kMisbehaveRegionBytes];
  for (unsigned i = 0; i < 4; ++i) {
    for (unsigned k = 0; k < 8; ++k) b[8 * i + k] = static_cast<std::uint8_t>(fields[i] >> (8 * k));
  }
  transport_->region_write(kMisbehaveRegion, 0, b, kMisbehaveRegionBytes, false, {});  // armed before the next CB
}

double VfioDevice::now_ns() {
  if (!host_driven_) return 0.0;
  std::uint8_t b[8];
  transport_->region_read(kClockRegion, kClockNowOffset, b, 8);
  const std::uint64_t bits = le_value(b, 8);
  double v = 0;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

}  // namespace spyre_dma::vfio
