// IOVA table of the simulated devices (see spyre_dma/device_core/iommu.hpp).
#include "spyre_dma/device_core/iommu.hpp"
#include "spyre_dma/hex.hpp"

#include <chrono>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace spyre_dma::device_core {
namespace {

constexpr std::uint64_t kPage = Iommu::kPageBytes;

bool allows(DmaAccess access, bool device_writes) noexcept {
  const auto bits = static_cast<std::uint8_t>(access);
  return (bits & (device_writes ? static_cast<std::uint8_t>(DmaAccess::kDeviceWrites)
                                : static_cast<std::uint8_t>(DmaAccess::kDeviceReads))) != 0;
}

}  // namespace

Iommu::Window& Iommu::Window::operator=(Window&& o) noexcept {
  if (this != &o) {
    release();
    host_ = o.host_;
    mapping_ = o.mapping_;
    o.host_ = nullptr;
    o.mapping_ = nullptr;
  }
  return *this;
}

void Iommu::Window::release() noexcept {
  if (mapping_ != nullptr) mapping_->pins.fetch_sub(1, std::memory_order_release);
  mapping_ = nullptr;
  host_ = nullptr;
}

Iommu::Iommu(std::uint64_t iova_base, std::uint64_t iova_limit)
    : base_(iova_base), limit_(iova_limit), cursor_(iova_base) {
  if (iova_base % kPage != 0 || iova_base >= iova_limit) {
    throw std::invalid_argument("Iommu: the IOVA range must be page aligned and nonempty");
  }
}

Iommu::~Iommu() = default;

namespace {
// The checks map() and map_at() share: the request itself, and that its pages fit the range.
void check_request(const char* who, const void* host, std::size_t bytes, DmaAccess access, std::uint64_t range) {
  if (host == nullptr) throw std::invalid_argument(std::string(who) + ": null host pointer");
  if (bytes == 0) throw std::invalid_argument(std::string(who) + ": zero bytes");
  const auto a = static_cast<std::uint8_t>(access);
  if (a == 0 || a > static_cast<std::uint8_t>(DmaAccess::kBoth)) {
    throw std::invalid_argument(std::string(who) + ": invalid access");
  }
  const std::uint64_t offset = reinterpret_cast<std::uintptr_t>(host) % kPage;
  if (bytes > range || offset + bytes > range - 2 * kPage) {
    throw std::runtime_error(std::string(who) + ": " + std::to_string(bytes) + " bytes exceed the IOVA range");
  }
}
}  // namespace

std::uint64_t Iommu::insert(std::uint64_t page, std::uint64_t need, void* host, std::size_t bytes, DmaAccess access) {
  auto m = std::make_unique<Mapping>();
  m->iova = page + reinterpret_cast<std::uintptr_t>(host) % kPage;
  m->bytes = bytes;
  m->reserved_end = page + need;
  m->host = static_cast<std::uint8_t*>(host);
  m->access = access;
  const std::uint64_t iova = m->iova;
  by_page_.emplace(page, std::move(m));
  return iova;
}

std::uint64_t Iommu::map(void* host, std::size_t bytes, DmaAccess access) {
  check_request("Iommu::map", host, bytes, access, limit_ - base_);
  const std::uint64_t offset = reinterpret_cast<std::uintptr_t>(host) % kPage;
  const std::uint64_t pages_bytes = (offset + bytes + kPage - 1) / kPage * kPage;
  const std::uint64_t need = pages_bytes + kPage;  // the mapping's pages and one guard page

  std::unique_lock<std::shared_mutex> lock(mutex_);
  // Next fit: move past every mapping that overlaps [candidate, candidate + need); wrap once.
  std::uint64_t candidate = cursor_;
  bool wrapped = false;
  for (;;) {
    if (candidate > limit_ || limit_ - candidate < need) {
      if (wrapped) throw std::runtime_error("Iommu::map: IOVA space exhausted");
      wrapped = true;
      candidate = base_;
      continue;
    }
    auto next = by_page_.lower_bound(candidate);
    if (next != by_page_.begin()) {
      const Mapping& prev = *std::prev(next)->second;
      if (prev.reserved_end > candidate) {
        candidate = prev.reserved_end;
        continue;
      }
    }
    if (next != by_page_.end() && next->first < candidate + need) {
      candidate = next->second->reserved_end;
      continue;
    }
    break;
  }
  const std::uint64_t iova = insert(candidate, need, host, bytes, access);
  cursor_ = candidate + need;
  return iova;
}

std::uint64_t Iommu::map_at(void* host, std::size_t bytes, DmaAccess access, std::uint64_t iova) {
  check_request("Iommu::map_at", host, bytes, access, limit_ - base_);
  const std::uint64_t offset = reinterpret_cast<std::uintptr_t>(host) % kPage;
  if (iova % kPage != offset) {
    throw std::invalid_argument("Iommu::map_at: IOVA " + hex(iova) + " lies at offset " + hex(iova % kPage) +
                                " of its page, the host address at " + hex(offset));
  }
  const std::uint64_t page = iova - offset;
  const std::uint64_t need = (offset + bytes + kPage - 1) / kPage * kPage + kPage;
  if (page < base_ || page > limit_ || limit_ - page < need) {
    throw std::invalid_argument("Iommu::map_at: IOVA " + hex(iova) + " (" + std::to_string(bytes) +
                                " bytes and a guard page) lies outside the IOVA space [" + hex(base_) + ", " +
                                hex(limit_) + ")");
  }
  std::unique_lock<std::shared_mutex> lock(mutex_);
  const auto next = by_page_.lower_bound(page);
  const Mapping* clash = nullptr;
  if (next != by_page_.begin() && std::prev(next)->second->reserved_end > page) clash = std::prev(next)->second.get();
  if (!clash && next != by_page_.end() && next->first < page + need) clash = next->second.get();
  if (clash) {
    throw std::invalid_argument("Iommu::map_at: IOVA " + hex(iova) + " (" + std::to_string(bytes) +
                                " bytes and a guard page) overlaps the mapping at " + hex(clash->iova));
  }
  return insert(page, need, host, bytes, access);
}

void Iommu::unmap(std::uint64_t iova) {
  std::unique_ptr<Mapping> gone;
  {
    std::unique_lock<std::shared_mutex> lock(mutex_);
    auto it = by_page_.find(iova / kPage * kPage);
    if (it == by_page_.end() || it->second->iova != iova) {
      throw std::invalid_argument("Iommu::unmap: " + hex(iova) + " is not an IOVA map() returned");
    }
    gone = std::move(it->second);
    by_page_.erase(it);
    gone->live.store(false, std::memory_order_relaxed);  // a window kept open (retarget) stops here
  }
  // No new window can open on `gone` now; wait for the device's accesses in progress (a memcpy
  // each) to finish before the caller may free the memory.
  while (gone->pins.load(std::memory_order_acquire) != 0) {
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

bool Iommu::covers(const Mapping& m, std::uint64_t iova, std::size_t bytes, bool device_writes) noexcept {
  return bytes != 0 && iova >= m.iova && bytes <= m.bytes && iova - m.iova <= m.bytes - bytes &&
         allows(m.access, device_writes);
}

Iommu::Window Iommu::translate(std::uint64_t iova, std::size_t bytes, bool device_writes) noexcept {
  {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    auto it = by_page_.upper_bound(iova);
    if (it != by_page_.begin()) {
      Mapping& m = *std::prev(it)->second;
      if (covers(m, iova, bytes, device_writes)) {
        m.pins.fetch_add(1, std::memory_order_acquire);
        return Window(m.host + (iova - m.iova), &m);
      }
    }
  }
  faults_.fetch_add(1, std::memory_order_relaxed);
  return Window();
}

bool Iommu::retarget(Window& w, std::uint64_t iova, std::size_t bytes, bool device_writes) noexcept {
  // The pin w holds keeps the mapping's record alive and unchanged; unmap() marks it dead before
  // it waits for the pins, so an access after that faults as it would through translate().
  if (Mapping* m = w.mapping_) {
    if (m->live.load(std::memory_order_relaxed) && covers(*m, iova, bytes, device_writes)) {
      w.host_ = m->host + (iova - m->iova);
      return true;
    }
  }
  w = translate(iova, bytes, device_writes);
  return static_cast<bool>(w);
}

std::size_t Iommu::mappings_live() const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  return by_page_.size();
}

}  // namespace spyre_dma::device_core
