// RefDevice: configuration checks and the Device interface over its Controller (see ref_device.hpp).
#include "spyre_dma/refdev/ref_device.hpp"

#include <sstream>
#include <stdexcept>

#include "controller.hpp"

namespace spyre_dma::refdev {
namespace {

RefDeviceConfig checked(RefDeviceConfig c) {
  device_core::validate(c.identity(), "RefDeviceConfig");
  return c;
}

}  // namespace

device_core::DeviceIdentity RefDeviceConfig::identity() const {
  device_core::DeviceIdentity id;
  id.capabilities = capabilities;
  id.depth = depth;
  id.max_cb_bytes = max_cb_bytes;
  id.memory_bytes = device_memory_bytes;
  id.usable_bytes = usable_bytes;
  return id;
}

RefDevice::RefDevice(RefDeviceConfig config)
    : core_(std::make_unique<detail::Controller>(checked(std::move(config)))) {}

RefDevice::~RefDevice() = default;

DeviceDescription RefDevice::describe() const {
  const RefDeviceConfig& c = core_->config();
  std::ostringstream name;
  name << c.name << ": functional reference controller, " << (c.device_memory_bytes >> 20)
       << " MiB device memory, depths COMPUTE " << c.depth[0] << " / DMAI " << c.depth[1]
       << " / DMAO " << c.depth[2];
  return DeviceDescription{"refdev", name.str(), Progress::kSelfTimed, /*host_clock=*/true};
}

std::uint64_t RefDevice::bar0_read(std::uint64_t offset, unsigned width) { return core_->read(offset, width); }
void RefDevice::bar0_write(std::uint64_t offset, std::uint64_t value, unsigned width) {
  core_->write(offset, value, width);
}

device_core::Iommu& RefDevice::device_iommu() { return core_->iommu(); }

std::uint32_t RefDevice::wait_for_interrupt(std::chrono::nanoseconds timeout) {
  return core_->wait_for_interrupt(timeout);
}

std::uint64_t RefDevice::host_time_ns() { return core_->clock_now_ns(); }

void RefDevice::wake_waiter() noexcept { core_->wake_waiter(); }

const RefDeviceConfig& RefDevice::config() const noexcept { return core_->config(); }
void RefDevice::pause() { core_->pause(); }
void RefDevice::resume() { core_->resume(); }
bool RefDevice::paused() const noexcept { return core_->paused(); }
void RefDevice::set_faults(const RefDeviceFaults& faults) { core_->set_faults(faults); }
RefDeviceFaults RefDevice::faults() const { return core_->faults(); }
void RefDevice::set_misbehave(const device_core::Misbehave& m) { core_->set_misbehave(m); }
device_core::Misbehave RefDevice::misbehave() const { return core_->misbehave(); }
RefDeviceCounters RefDevice::counters() const { return core_->counters(); }
std::uint64_t RefDevice::queue_fault_register(hw::Pipeline p) const { return core_->queue_fault_register(p); }
device_core::SparseMemory& RefDevice::memory() noexcept { return core_->memory(); }
const device_core::SparseMemory& RefDevice::memory() const noexcept { return core_->memory(); }
device_core::Iommu& RefDevice::iommu() noexcept { return core_->iommu(); }
void RefDevice::backdoor_read(std::uint64_t phys, void* dst, std::size_t bytes) {
  core_->memory().read(phys, dst, bytes);
}
const void* RefDevice::backdoor_view(std::uint64_t phys, std::size_t bytes, std::size_t& got) {
  return core_->memory().view(phys, bytes, got);
}
void RefDevice::backdoor_write(std::uint64_t phys, const void* src, std::size_t bytes) {
  core_->memory().write(phys, src, bytes);
}

}  // namespace spyre_dma::refdev
