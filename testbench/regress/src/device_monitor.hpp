// A checker on the engine-device boundary: a Device that forwards everything to the backend and
// watches what crosses, as a bus monitor would.
//
// It learns the rings from the register writes and reads each CB from host memory when its
// doorbell rings, and each RB when the engine hands its slot back (RB_CI). It reports:
//   * a tag issued while a CB with that tag is still live;
//   * a CB whose host range is not mapped, or not for the access it needs;
//   * buffer reuse while a CB is live: a CB that lets the device write host bytes another live CB
//     also uses, or host bytes an H2D CB reads that change between its doorbell and its RB (a
//     staging buffer refilled too early);
//   * an unmap of memory a live CB still uses;
//   * an RB the engine consumed for no live CB of that pipeline.
// It never changes what the engine or the device see, and reads no register of its own (a read
// would perturb a simulated device's timing).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "digest.hpp"
#include "findings.hpp"
#include "spyre_dma/device.hpp"
#include "spyre_dma/hw/contract.hpp"

namespace spyre_dma::regress {

struct MonitorCounters {
  std::uint64_t cbs = 0;
  std::uint64_t rbs = 0;
  std::uint64_t doorbells = 0;
  std::uint64_t max_live = 0;
  std::uint64_t bytes_hashed = 0;
  std::array<std::uint64_t, 4> rb_status{};  // by hw::RbStatus
  std::uint64_t barriers = 0;
  std::uint64_t resets = 0;
};

class DeviceMonitor final : public Device {
 public:
  DeviceMonitor(std::shared_ptr<Device> inner, Findings& findings);

  DeviceDescription describe() const override { return inner_->describe(); }
  std::uint32_t read32(std::uint64_t offset) override { return inner_->read32(offset); }
  std::uint64_t read64(std::uint64_t offset) override { return inner_->read64(offset); }
  void write32(std::uint64_t offset, std::uint32_t value) override;
  void write64(std::uint64_t offset, std::uint64_t value) override;
  std::uint64_t map(void* host, std::size_t bytes, DmaAccess access) override;
  void unmap(std::uint64_t iova) override;
  std::uint32_t wait_for_interrupt(std::chrono::nanoseconds timeout) override {
    return inner_->wait_for_interrupt(timeout);
  }
  void wake_waiter() noexcept override { inner_->wake_waiter(); }

  Device& inner() noexcept { return *inner_; }
  MonitorCounters counters() const;
  // Every RB the engine consumed, each pipeline's in ring order (digest.hpp), the pipelines folded
  // in queue order: how often the engine's threads interleaved the pipelines does not count.
  std::uint64_t rb_digest() const;
  std::uint64_t live_cbs() const;

 private:
  struct Mapping {
    std::uint8_t* host;
    std::size_t bytes;
    DmaAccess access;
  };
  struct Live {
    hw::Pipeline pipe;
    std::uint64_t iova = 0, bytes = 0;  // host range, if any
    bool device_writes_host = false;
    std::uint64_t hash = 0;             // H2D: the host bytes at the doorbell
    std::uint64_t rung = 0;             // the doorbell that handed it over (monitor's count)
  };
  struct Ring {
    std::uint64_t cb_base = 0, rb_base = 0;
    std::uint32_t cb_size = 0, rb_size = 0;
    std::uint32_t cb_pi = 0, rb_ci = 0;
    std::uint32_t retired = 0;  // RBs consumed since the last reset
    // The doorbell of the latest BARRIER CB: this pipeline's later CBs start after every CB of
    // another pipeline rung before it.
    std::uint64_t fence = 0;
    Digest rbs;  // every RB consumed, in order (kept across resets)
  };

  void observe_write(std::uint64_t offset, std::uint64_t value, unsigned width);
  void doorbell(unsigned pipe, std::uint32_t new_pi);
  void consumed(unsigned pipe, std::uint32_t new_ci);
  // Whether the device has already written the RB of live CB `tag` (the engine has not consumed it).
  bool answered(hw::Pipeline pipe, std::uint32_t tag) const;
  // Host pointer of [iova, iova + bytes) when one mapping holds all of it, else null.
  std::uint8_t* host_of(std::uint64_t iova, std::uint64_t bytes, const Mapping** m = nullptr) const;
  std::uint64_t hash(const std::uint8_t* p, std::uint64_t n);
  void report(const std::string& message);

  std::shared_ptr<Device> inner_;
  Findings& findings_;
  mutable std::mutex mu_;
  std::map<std::uint64_t, Mapping> maps_;  // by IOVA
  std::array<Ring, hw::kNumPipelines> rings_{};
  std::unordered_map<std::uint32_t, Live> live_;  // by tag
  std::uint64_t rung_ = 0;                        // doorbells seen
  MonitorCounters counters_;
};

}  // namespace spyre_dma::regress
