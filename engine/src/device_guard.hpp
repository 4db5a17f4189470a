// The device as the engine reaches it. A device call that throws (a simulator whose simulation
// stopped, a transport whose peer went away) leaves the device failed: from then on it answers
// as a card that has dropped off the bus does (register reads return all ones, writes go nowhere,
// no interrupt comes), so the exception reaches no engine thread, and the engine, which asks
// failed() on its completion path and in reset(), fails everything once with kDeviceFault and the
// first error's words. map() keeps its own refusals (its callers handle them), throws DeviceFault
// once the device has failed (a map that fails otherwise is followed by one register read to tell
// a refusal from a failed device); unmap() of a failed device does nothing.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "spyre_dma/device.hpp"

namespace spyre_dma::detail {

class DeviceGuard final : public Device {
 public:
  explicit DeviceGuard(std::shared_ptr<Device> inner) : inner_(std::move(inner)) {}

  const std::shared_ptr<Device>& inner() const noexcept { return inner_; }
  bool failed() const noexcept { return failed_.load(std::memory_order_acquire); }
  // The first error, as "<call>: <what>" (empty while the device works).
  std::string failure() const;

  DeviceDescription describe() const override { return inner_->describe(); }
  std::uint32_t read32(std::uint64_t offset) override;
  void write32(std::uint64_t offset, std::uint32_t value) override;
  std::uint64_t read64(std::uint64_t offset) override;
  void write64(std::uint64_t offset, std::uint64_t value) override;
  std::uint64_t map(void* host, std::size_t bytes, DmaAccess access) override;
  void unmap(std::uint64_t iova) override;
  std::uint32_t wait_for_interrupt(std::chrono::nanoseconds timeout) override;
  void wake_waiter() noexcept override { inner_->wake_waiter(); }
  void host_copied(std::uint64_t bytes) override;
  std::uint64_t host_time_ns() override;

 private:
  void fail(const char* call) noexcept;  // in a catch block: records the exception in flight
  // One call of the inner device; a failed device, or a call that throws, answers `dead`.
  template <class R, class Call>
  R attempt(const char* name, R dead, Call&& call) noexcept;

  std::shared_ptr<Device> inner_;
  std::atomic<bool> failed_{false};
  mutable std::mutex mu_;
  std::string failure_;
};

}  // namespace spyre_dma::detail
