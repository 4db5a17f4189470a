// The controller behind CopyEngineDevice (copy_engine_device.hpp has the behaviour): the device
// core's register file, ring rules, barrier rule, CB admission and misbehaviour modes
// (spyre_dma/device_core/), carried out by one worker thread per pipeline on a copy executor.
//
// Split by role: controller.cpp (registers, life cycle, reset, interrupts), pipeline_worker.cpp
// (fetch, plan, submit, retire), cb_work.cpp (admission over the executor's memory layout). Each
// worker sleeps on its own condition variable with a timed wait as a backstop, so a lost wake-up
// costs at most 1 ms.
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

#include "cb_work.hpp"
#include "spyre_dma/cuda/copy_engine_device.hpp"
#include "spyre_dma/device_core/doorbell_order.hpp"
#include "spyre_dma/device_core/interrupt_line.hpp"
#include "spyre_dma/device_core/misbehave.hpp"
#include "spyre_dma/device_core/register_file.hpp"

namespace spyre_dma::cuda::detail {

using device_core::Reg;
using Registers = device_core::RegisterFile<std::atomic<std::uint64_t>>;

// One fetched CB until its RB is written.
struct Inflight {
  std::uint32_t index = 0;
  hw::ResponseBlock rb;  // tag and locator set at fetch; the rest at retirement
  bool irq = false;
  bool barrier = false;
  bool misbehave = false;  // the armed misbehaviour fires at this CB (counted when it starts)
  bool submitted = false;  // started: in the executor, waiting its compute time, or rejected
  bool done = false;       // rb complete
  hw::CbDecodeResult decoded;
  CbPlan plan;             // admission and the copy, decided when the CB starts
  std::optional<device_core::MisbehaveEffect> effect;  // its RB(s), decided when it retires
  unsigned rbs_written = 0;
  Ticket ticket = 0;
  std::chrono::steady_clock::time_point deadline;
  std::uint64_t compute_start_ns = 0;
};

struct alignas(64) PipelineWorker {
  std::thread thread;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Inflight> inflight;  // index order; only the worker touches it
  std::atomic<bool> parked{false};
  std::mutex rb_mutex;              // this pipeline's RB ring: its worker and a stray RB (wrong_queue)
  std::uint32_t last_tag = 0;       // of the previous CB answered (misbehave stale_tag)
  std::atomic<bool> broken{false};  // misbehave broke this pipeline's indices: it stops until reset
};

class Controller final : private device_core::RegisterHooks {
 public:
  Controller(std::unique_ptr<CopyExecutor> executor, CopyEngineDeviceConfig config);
  ~Controller();

  std::uint64_t read(std::uint64_t offset, unsigned width) { return regs_.read(offset, width, *this); }
  void write(std::uint64_t offset, std::uint64_t value, unsigned width) { regs_.write(offset, value, width, *this); }
  std::uint32_t wait_for_interrupt(std::chrono::nanoseconds timeout);
  void wake_waiter() noexcept { interrupts_.wake(); }

  device_core::Iommu& iommu() noexcept { return iommu_; }
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
  const SegmentedRegion& region() const noexcept { return region_; }
  void set_misbehave(const device_core::Misbehave& m) { misbehave_.arm(m); }
  device_core::Misbehave misbehave() const { return misbehave_.armed(); }

 private:
  // RegisterHooks (controller.cpp).
  std::uint64_t clock_ns() override { return executor_->now_ns(); }
  Condition condition() override { return Condition{resetting_.load(), fatal_.load()}; }
  void reset() override;  // synchronous: every worker parks first
  void doorbell(hw::Pipeline p, std::uint32_t new_pi) override;
  void stored(Reg r, hw::Pipeline p) override;
  bool frozen() override { return stopped_.load(); }

  std::uint32_t index(Reg r, unsigned p, std::memory_order order = std::memory_order_seq_cst) const noexcept {
    return static_cast<std::uint32_t>(regs_.cell(r, pipe(p)).load(order));
  }
  static hw::Pipeline pipe(unsigned p) noexcept { return static_cast<hw::Pipeline>(p); }
  void wake(unsigned p);
  void wake_all();
  void raise_interrupt(unsigned p);

  // pipeline_worker.cpp
  void worker_main(unsigned p);
  // CB_PI as far as this pipeline may fetch now (device_core::fetch_limit and this device's own
  // conditions), or nullopt.
  std::optional<std::uint32_t> fetch_limit(unsigned p) const noexcept;
  bool fetch_one(unsigned p, std::uint32_t cb_pi);
  bool barrier_clear(unsigned p, const Inflight& f);
  bool start(unsigned p, Inflight& f);
  bool complete_head(unsigned p);
  bool retire_head(unsigned p, Inflight& f);
  bool write_rb(unsigned p, const hw::ResponseBlock& rb, bool irq, bool garbage_status = false);
  void write_stray_rb(unsigned q, hw::ResponseBlock rb, bool irq);
  void park(unsigned p);
  void queue_fault(unsigned p);

  const CopyEngineDeviceConfig config_;
  std::unique_ptr<CopyExecutor> executor_;
  const SegmentedRegion region_;
  device_core::Iommu iommu_;
  device_core::DoorbellOrder doorbells_;
  device_core::MisbehaveTrigger misbehave_;
  Registers regs_;
  std::mutex maps_mu_;
  std::unordered_map<std::uint64_t, void*> maps_;
  std::atomic<bool> shutdown_{false};
  std::atomic<bool> resetting_{false};
  std::atomic<bool> fatal_{false};
  std::atomic<bool> stopped_{false};  // misbehave stop_answering, until reset
  std::mutex reset_mu_;  // one reset at a time

  device_core::InterruptLine interrupts_;

  std::array<PipelineWorker, hw::kNumPipelines> workers_;  // last: threads start after the rest
};

}  // namespace spyre_dma::cuda::detail
