// The state and threads behind CopyEngineDevice (copy_engine_device.hpp has the behaviour).
//
// Split by role: device_state.cpp (registers, life cycle, reset, interrupts), pipeline_runner.cpp
// (fetch, translate, submit, retire). Registers are atomics; each runner sleeps on its own
// condition variable with a timed wait as a backstop, so a lost wake-up costs at most 1 ms.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "cb_translation.hpp"
#include "doorbell_log.hpp"
#include "spyre_dma/cuda/copy_engine_device.hpp"

namespace spyre_dma::cuda::detail {

struct PipeRegisters {
  std::atomic<std::uint64_t> cb_base{0};
  std::atomic<std::uint64_t> rb_base{0};
  std::atomic<std::uint32_t> cb_size{0};
  std::atomic<std::uint32_t> rb_size{0};
  std::atomic<std::uint32_t> irq_enable{0};
  std::atomic<std::uint32_t> irq_vector{0};
  std::atomic<std::uint32_t> queue_control{0};
  std::atomic<std::uint32_t> error_status{0};
  alignas(64) std::atomic<std::uint32_t> cb_pi{0};
  std::atomic<std::uint32_t> rb_ci{0};
  alignas(64) std::atomic<std::uint32_t> cb_ci{0};
  std::atomic<std::uint32_t> rb_pi{0};
};

// One fetched CB until its RB is written.
struct Inflight {
  std::uint32_t index = 0;
  hw::ResponseBlock rb;  // tag and locator set at fetch; the rest at retirement
  bool irq = false;
  bool barrier = false;
  bool submitted = false;  // in the executor (or, for compute, started)
  bool done = false;       // rb complete
  Translation work;
  Ticket ticket = 0;
  std::chrono::steady_clock::time_point deadline;
  std::uint64_t compute_start_ns = 0;
};

struct alignas(64) Runner {
  std::thread thread;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Inflight> inflight;  // index order; only the runner touches it
  std::atomic<bool> parked{false};
};

class DeviceState {
 public:
  DeviceState(std::unique_ptr<CopyExecutor> executor, CopyEngineDeviceConfig config);
  ~DeviceState();

  std::uint64_t read(std::uint64_t offset, unsigned width);
  void write(std::uint64_t offset, std::uint64_t value, unsigned width);
  std::uint32_t wait_for_interrupt(std::chrono::nanoseconds timeout);

  refdev::Iommu& iommu() noexcept { return iommu_; }
  // The host address of each live mapping, so that unmap() can tell the executor what to unpin.
  void remember_mapping(std::uint64_t iova, void* host) {
    std::lock_guard<std::mutex> lock(maps_mu_);
    maps_[iova] = host;
  }
  void* iommu_host(std::uint64_t iova) {
    std::lock_guard<std::mutex> lock(maps_mu_);
    auto it = maps_.find(iova);
    return it == maps_.end() ? nullptr : it->second;
  }
  void forget_mapping(std::uint64_t iova) {
    std::lock_guard<std::mutex> lock(maps_mu_);
    maps_.erase(iova);
  }
  CopyExecutor& executor() noexcept { return *executor_; }
  const CopyEngineDeviceConfig& config() const noexcept { return config_; }

 private:
  PipeRegisters& pipe(unsigned p) noexcept { return regs_[p]; }
  bool read_global(std::uint64_t offset, std::uint64_t& v);
  bool read_pipe(std::uint64_t offset, std::uint64_t& v) const;
  void write_pipe32(std::uint64_t offset, std::uint32_t value);
  void write_control(std::uint32_t value);
  void reset(std::uint32_t control_after);
  void wake(unsigned p);
  void wake_all();
  void raise_interrupt(unsigned p);

  // pipeline_runner.cpp
  void runner_main(unsigned p);
  bool can_fetch(unsigned p) const noexcept;
  bool fetch_one(unsigned p);
  bool barrier_clear(unsigned p, const Inflight& f);
  bool start(unsigned p, Inflight& f);
  bool complete_head(unsigned p);
  bool write_rb(unsigned p, Inflight& f);
  void park(unsigned p);
  void queue_fault(unsigned p);

  const CopyEngineDeviceConfig config_;
  std::unique_ptr<CopyExecutor> executor_;
  refdev::Iommu iommu_;
  DoorbellLog doorbells_;
  std::mutex maps_mu_;
  std::unordered_map<std::uint64_t, void*> maps_;
  std::array<PipeRegisters, hw::kNumPipelines> regs_;
  std::atomic<std::uint32_t> control_{0};
  std::atomic<bool> resetting_{false};
  std::atomic<bool> fatal_{false};
  std::atomic<std::uint32_t> fatal_cause_{0};
  std::atomic<std::uint64_t> fatal_detail_{0};
  std::atomic<bool> shutdown_{false};
  std::mutex control_mu_;

  std::atomic<std::uint32_t> irq_pending_{0};
  std::mutex irq_mu_;
  std::condition_variable irq_cv_;

  std::array<Runner, hw::kNumPipelines> runners_;  // last: threads start after the rest
};

}  // namespace spyre_dma::cuda::detail
