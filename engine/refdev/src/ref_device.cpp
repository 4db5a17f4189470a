// RefDevice: configuration checks and the Device interface over DeviceCore (see ref_device.hpp).
#include "spyre_dma/refdev/ref_device.hpp"

#include <sstream>
#include <stdexcept>

#include "device_core.hpp"

namespace spyre_dma::refdev {
namespace {

RefDeviceConfig checked(RefDeviceConfig c) {
  for (unsigned p = 0; p < hw::kNumPipelines; ++p) {
    if (!hw::is_power_of_two(c.depth[p])) {
      throw std::invalid_argument("RefDeviceConfig: depth of " +
                                  std::string(hw::to_string(static_cast<hw::Pipeline>(p))) +
                                  " must be a power of two, not " + std::to_string(c.depth[p]));
    }
  }
  if (c.device_memory_bytes == 0) throw std::invalid_argument("RefDeviceConfig: device_memory_bytes is zero");
  if (c.usable_bytes > c.device_memory_bytes) {
    throw std::invalid_argument("RefDeviceConfig: usable_bytes exceeds device_memory_bytes");
  }
  if (c.max_cb_bytes == 0) throw std::invalid_argument("RefDeviceConfig: max_cb_bytes is zero");
  return c;
}

}  // namespace

RefDevice::RefDevice(RefDeviceConfig config)
    : core_(std::make_unique<detail::DeviceCore>(checked(std::move(config)))) {}

RefDevice::~RefDevice() = default;

DeviceDescription RefDevice::describe() const {
  const RefDeviceConfig& c = core_->config();
  std::ostringstream name;
  name << c.name << ": functional reference controller, " << (c.device_memory_bytes >> 20)
       << " MiB device memory, depths COMPUTE " << c.depth[0] << " / DMAI " << c.depth[1]
       << " / DMAO " << c.depth[2];
  return DeviceDescription{"refdev", name.str(), Progress::kSelfTimed};
}

std::uint32_t RefDevice::read32(std::uint64_t offset) { return core_->read32(offset); }
void RefDevice::write32(std::uint64_t offset, std::uint32_t value) { core_->write32(offset, value); }
std::uint64_t RefDevice::read64(std::uint64_t offset) { return core_->read64(offset); }
void RefDevice::write64(std::uint64_t offset, std::uint64_t value) { core_->write64(offset, value); }

std::uint64_t RefDevice::map(void* host, std::size_t bytes, DmaAccess access) {
  return core_->iommu().map(host, bytes, access);
}
void RefDevice::unmap(std::uint64_t iova) { core_->iommu().unmap(iova); }

std::uint32_t RefDevice::wait_for_interrupt(std::chrono::nanoseconds timeout) {
  return core_->wait_for_interrupt(timeout);
}

const RefDeviceConfig& RefDevice::config() const noexcept { return core_->config(); }
void RefDevice::pause() { core_->pause(); }
void RefDevice::resume() { core_->resume(); }
bool RefDevice::paused() const noexcept { return core_->paused(); }
void RefDevice::set_faults(const RefDeviceFaults& faults) { core_->set_faults(faults); }
RefDeviceFaults RefDevice::faults() const { return core_->faults(); }
void RefDevice::set_misbehave(const Misbehave& m) { core_->set_misbehave(m); }
Misbehave RefDevice::misbehave() const { return core_->misbehave(); }
RefDeviceCounters RefDevice::counters() const { return core_->counters(); }
std::uint64_t RefDevice::queue_fault_register(hw::Pipeline p) const { return core_->queue_fault_register(p); }
SparseMemory& RefDevice::memory() noexcept { return core_->memory(); }
const SparseMemory& RefDevice::memory() const noexcept { return core_->memory(); }
Iommu& RefDevice::iommu() noexcept { return core_->iommu(); }

}  // namespace spyre_dma::refdev
