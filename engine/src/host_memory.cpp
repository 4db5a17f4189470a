#include "host_memory.hpp"

#include <cstdlib>
#include <mutex>
#include <string>

#include "spyre_dma/status.hpp"
#include "spyre_dma/shareable_memory.hpp"

namespace spyre_dma::detail {

HostRegistrationState::~HostRegistrationState() {
  if (auto r = registry.lock()) r->remove(this);
  if (device && iova) {
    try {
      device->unmap(iova);
    } catch (...) {
      // The device is gone or already forgot the mapping (after a reset): nothing left to undo.
    }
  }
  if (owned) free_shareable(data);
}

void HostRegistry::add(const std::shared_ptr<HostRegistrationState>& reg) {
  std::unique_lock lock(mu_);
  by_start_[reinterpret_cast<std::uintptr_t>(reg->data)] = reg;
}

void HostRegistry::remove(const HostRegistrationState* reg) noexcept {
  std::unique_lock lock(mu_);
  auto it = by_start_.find(reinterpret_cast<std::uintptr_t>(reg->data));
  if (it == by_start_.end()) return;
  // A registration being destroyed has an expired entry; a live entry at the same address belongs
  // to a newer registration of the same memory and stays.
  auto live = it->second.lock();
  if (!live || live.get() == reg) by_start_.erase(it);
}

std::shared_ptr<HostRegistrationState> HostRegistry::find(const void* p, std::size_t bytes) const {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  std::shared_lock lock(mu_);
  auto it = by_start_.upper_bound(a);
  if (it == by_start_.begin()) return nullptr;
  --it;
  auto reg = it->second.lock();
  if (!reg) return nullptr;
  const auto start = reinterpret_cast<std::uintptr_t>(reg->data);
  if (a < start || a - start > reg->bytes || bytes > reg->bytes - (a - start)) return nullptr;
  return reg;
}

void HostRegistry::check_disjoint(const void* p, std::size_t bytes) const {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  std::shared_lock lock(mu_);
  auto it = by_start_.lower_bound(a + bytes);
  while (it != by_start_.begin()) {
    --it;
    auto reg = it->second.lock();
    if (!reg) continue;
    const auto start = reinterpret_cast<std::uintptr_t>(reg->data);
    if (start + reg->bytes <= a) break;
    throw InvalidArgument("host range at " + std::to_string(a) + " (" + std::to_string(bytes) +
                          " bytes) overlaps a registered buffer at " + std::to_string(start) +
                          " (" + std::to_string(reg->bytes) + " bytes)");
  }
}

}  // namespace spyre_dma::detail
