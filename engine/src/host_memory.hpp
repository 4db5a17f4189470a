// Registered host memory: the state behind HostBuffer handles and the registry the engine looks
// copies up in to decide between direct DMA and staging.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <shared_mutex>

#include "spyre_dma/device.hpp"
#include "spyre_dma/memory.hpp"

namespace spyre_dma::detail {

class HostRegistry;

struct HostRegistrationState {
  std::shared_ptr<Device> device;  // keeps the device alive for the unmap
  std::uint8_t* data = nullptr;
  std::size_t bytes = 0;
  std::uint64_t iova = 0;
  bool owned = false;  // allocated by the engine (allocate_host): freed with the mapping
  std::weak_ptr<HostRegistry> registry;
  ~HostRegistrationState();
};

class HostRegistry {
 public:
  void add(const std::shared_ptr<HostRegistrationState>& reg);
  void remove(const HostRegistrationState* reg) noexcept;
  // The registration that holds all of [p, p + bytes), if any.
  std::shared_ptr<HostRegistrationState> find(const void* p, std::size_t bytes) const;
  // Throws InvalidArgument when [p, p + bytes) overlaps an existing registration.
  void check_disjoint(const void* p, std::size_t bytes) const;

 private:
  mutable std::shared_mutex mu_;
  std::map<std::uintptr_t, std::weak_ptr<HostRegistrationState>> by_start_;
};

}  // namespace spyre_dma::detail
