#include "device_guard.hpp"

#include <algorithm>
#include <exception>
#include <thread>

#include "spyre_dma/status.hpp"

namespace spyre_dma::detail {

std::string DeviceGuard::failure() const {
  std::lock_guard lock(mu_);
  return failure_;
}

void DeviceGuard::fail(const char* call) noexcept {
  std::string what;
  try {
    throw;
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
    what = "an exception that is not a std::exception";
  }
  try {
    std::lock_guard lock(mu_);
    if (failure_.empty()) failure_ = std::string(call) + ": " + what;
  } catch (...) {  // no memory for the words: the failure stands without them
  }
  failed_.store(true, std::memory_order_release);
}

namespace {
constexpr std::uint32_t kAllOnes32 = ~std::uint32_t{0};
constexpr std::uint64_t kAllOnes64 = ~std::uint64_t{0};
}  // namespace

// Calls that return nothing pass `true` for `dead` and return it.
template <class R, class Call>
R DeviceGuard::attempt(const char* name, R dead, Call&& call) noexcept {
  if (failed()) return dead;
  try {
    return call();
  } catch (...) {
    fail(name);
    return dead;
  }
}

std::uint32_t DeviceGuard::read32(std::uint64_t offset) {
  return attempt("read32", kAllOnes32, [&] { return inner_->read32(offset); });
}

void DeviceGuard::write32(std::uint64_t offset, std::uint32_t value) {
  (void)attempt("write32", true, [&] { inner_->write32(offset, value); return true; });
}

std::uint64_t DeviceGuard::read64(std::uint64_t offset) {
  return attempt("read64", kAllOnes64, [&] { return inner_->read64(offset); });
}

void DeviceGuard::write64(std::uint64_t offset, std::uint64_t value) {
  (void)attempt("write64", true, [&] { inner_->write64(offset, value); return true; });
}

std::uint64_t DeviceGuard::map(void* host, std::size_t bytes, DmaAccess access) {
  if (failed()) throw DeviceFault("the device failed (" + failure() + "): nothing can be mapped");
  try {
    return inner_->map(host, bytes, access);
  } catch (const std::invalid_argument&) {
    throw;  // the caller's request, whatever the device's state
  } catch (const std::exception&) {
    // A refusal (the IOVA space full) or a device that has failed under the call (a transport
    // whose peer went away): one register read tells which, and a failed device fails as a device.
    (void)read32(hw::reg::kVersion);
    if (failed()) throw DeviceFault("the device failed (" + failure() + "): nothing can be mapped");
    throw;
  }
}

void DeviceGuard::unmap(std::uint64_t iova) {
  if (!failed()) inner_->unmap(iova);
}

std::uint32_t DeviceGuard::wait_for_interrupt(std::chrono::nanoseconds timeout) {
  // A call that throws answers 0: the caller's next step finds the failure.
  if (!failed()) return attempt("wait_for_interrupt", 0u, [&] { return inner_->wait_for_interrupt(timeout); });
  // No interrupt comes from a failed device; a short sleep keeps a polling thread from spinning.
  std::this_thread::sleep_for(std::clamp<std::chrono::nanoseconds>(timeout, std::chrono::nanoseconds::zero(),
                                                                    std::chrono::milliseconds(1)));
  return 0;
}

void DeviceGuard::host_copied(std::uint64_t bytes) {
  (void)attempt("host_copied", true, [&] { inner_->host_copied(bytes); return true; });
}

std::uint64_t DeviceGuard::host_time_ns() {
  if (failed()) return 0;
  return attempt("host_time_ns", std::uint64_t{0}, [&] { return inner_->host_time_ns(); });
}

}  // namespace spyre_dma::detail
