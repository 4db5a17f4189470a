// CopyEngineDevice: the Device interface over its Controller (see copy_engine_device.hpp).
#include "spyre_dma/cuda/copy_engine_device.hpp"

#include <sstream>
#include <stdexcept>

#include "controller.hpp"

namespace spyre_dma::cuda {
namespace {
std::string hex(std::uint64_t v) {
  std::ostringstream s;
  s << std::hex << v;
  return s.str();
}
}  // namespace

CopyEngineDevice::CopyEngineDevice(std::unique_ptr<CopyExecutor> executor, CopyEngineDeviceConfig config)
    : state_(std::make_unique<detail::Controller>(std::move(executor), std::move(config))) {}

CopyEngineDevice::~CopyEngineDevice() = default;

DeviceDescription CopyEngineDevice::describe() const {
  const CopyEngineDeviceConfig& c = state_->config();
  std::ostringstream name;
  name << c.name << ": contract on a copy executor (" << state_->executor().describe() << "), "
       << (state_->executor().device_memory_bytes() >> 20) << " MiB device memory, window " << c.window
       << " CBs per pipeline";
  return DeviceDescription{c.name, name.str(), Progress::kSelfTimed, /*host_clock=*/true};
}

std::uint64_t CopyEngineDevice::bar0_read(std::uint64_t offset, unsigned width) { return state_->read(offset, width); }
void CopyEngineDevice::bar0_write(std::uint64_t offset, std::uint64_t value, unsigned width) {
  state_->write(offset, value, width);
}

std::uint64_t CopyEngineDevice::map(void* host, std::size_t bytes, DmaAccess access) {
  return mapped(state_->iommu().map(host, bytes, access), host, bytes);  // the IOMMU checks the arguments
}

std::uint64_t CopyEngineDevice::map_at(void* host, std::size_t bytes, DmaAccess access, std::uint64_t iova) {
  return mapped(state_->iommu().map_at(host, bytes, access, iova), host, bytes);
}

// What every new mapping needs besides the IOMMU's entry: its host address remembered for unmap(),
// the executor told (the CUDA one pins the memory).
std::uint64_t CopyEngineDevice::mapped(std::uint64_t iova, void* host, std::size_t bytes) {
  state_->remember_mapping(iova, host);
  state_->executor().host_mapped(host, bytes);
  return iova;
}

void CopyEngineDevice::unmap(std::uint64_t iova) {
  // The IOMMU waits for open windows (copies still running on that memory) before it removes the
  // mapping (and throws for an IOVA map() did not return); only then may the executor unpin it.
  void* host = state_->iommu_host(iova);
  state_->iommu().unmap(iova);
  state_->forget_mapping(iova);
  if (host) state_->executor().host_unmapped(host);
}

std::uint32_t CopyEngineDevice::wait_for_interrupt(std::chrono::nanoseconds timeout) {
  return state_->wait_for_interrupt(timeout);
}

std::uint64_t CopyEngineDevice::host_time_ns() { return state_->executor().now_ns(); }

void CopyEngineDevice::wake_waiter() noexcept { state_->wake_waiter(); }

CopyExecutor& CopyEngineDevice::executor() noexcept { return state_->executor(); }
const CopyEngineDeviceConfig& CopyEngineDevice::config() const noexcept { return state_->config(); }
void CopyEngineDevice::set_misbehave(const device_core::Misbehave& m) { state_->set_misbehave(m); }
device_core::Misbehave CopyEngineDevice::misbehave() const { return state_->misbehave(); }

// Physical device addresses land in the executor's region as the CBs' do (SegmentedRegion).
void CopyEngineDevice::backdoor_read(std::uint64_t phys, void* dst, std::size_t bytes) {
  state_->executor().read_device(located(phys, bytes), dst, bytes);
}
void CopyEngineDevice::backdoor_write(std::uint64_t phys, const void* src, std::size_t bytes) {
  state_->executor().write_device(located(phys, bytes), src, bytes);
}
std::uint64_t CopyEngineDevice::located(std::uint64_t phys, std::size_t bytes) const {
  const std::optional<std::uint64_t> at = state_->region().locate(phys, bytes);
  if (!at) {
    throw std::out_of_range("CopyEngineDevice: device range [0x" + hex(phys) + ", +" + std::to_string(bytes) +
                            ") lies outside the executor's memory");
  }
  return *at;
}

}  // namespace spyre_dma::cuda
