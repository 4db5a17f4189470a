// What a backend may offer beyond the Device interface, each an interface a caller asks the
// registry's Instance for (null when the backend has none). Tools and test benches use them; the
// engine never does: on real hardware none of them exists.
//
// A backend's device object implements the ones it has, so a capability lives exactly as long as
// the device it belongs to.
#pragma once

#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "spyre_dma/device_core/misbehave.hpp"

namespace spyre_dma::backend {

// Device memory read and written behind the device's back (never through DMA): for scoreboards
// that check what a copy left, and for preloading. Addresses are physical device byte addresses,
// as CompositeAddress chunks give them. Throws std::out_of_range for a range beyond the memory.
class MemoryBackdoor {
 public:
  virtual void backdoor_read(std::uint64_t phys, void* dst, std::size_t bytes) = 0;
  virtual void backdoor_write(std::uint64_t phys, const void* src, std::size_t bytes) = 0;
  // The bytes at `phys` in place, where the device memory lies in this process's address space:
  // as many of `bytes` as lie together there (`got`), so a check reads them without a copy. Null
  // (got 0) where only backdoor_read reaches them. Valid while the device is open; what the device
  // writes there meanwhile shows through, as it would in a copy taken then.
  virtual const void* backdoor_view(std::uint64_t /*phys*/, std::size_t /*bytes*/, std::size_t& got) {
    got = 0;
    return nullptr;
  }

 protected:
  ~MemoryBackdoor() = default;
};

// What the device counted about its run, as a JSON tree (the model: link, controller, memories,
// its resolved configuration).
class StatisticsSource {
 public:
  virtual nlohmann::json statistics() = 0;

 protected:
  ~StatisticsSource() = default;
};

// A device with its own simulated time (it advances only inside the device).
class SimulatedClock {
 public:
  virtual double now_ns() = 0;

 protected:
  ~SimulatedClock() = default;
};

// A device that can break the ring contract on purpose, once (spyre_dma/device_core/misbehave.hpp):
// for testing that an engine detects each violation. Arming counts CBs from the call on.
class MisbehaveControl {
 public:
  virtual void arm_misbehave(const device_core::Misbehave& misbehave) = 0;

 protected:
  ~MisbehaveControl() = default;
};

}  // namespace spyre_dma::backend
