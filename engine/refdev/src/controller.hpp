// The controller behind RefDevice (see spyre_dma/refdev/ref_device.hpp for the behaviour): the
// device core's register file, ring rules, barrier rule, CB admission and misbehaviour modes
// (spyre_dma/device_core/), carried out by one worker thread per pipeline.
//
// Split by role over several files: controller.cpp (life cycle, reset, interrupts, waiting),
// register_hooks.cpp (what a BAR0 access does here), pipeline_worker.cpp (fetch, execute, retire),
// cb_executor.cpp (a checked CB against device memory).
//
// Synchronisation, in brief:
//   * Registers are atomics in the core's RegisterFile, each pipeline's on its own cache lines.
//   * "Store a condition, then check whether anyone sleeps" against "announce sleeping, then check
//     the condition", all seq_cst, so a wake-up is never lost; every sleep is also timed as a
//     backstop. Wakers take the sleeper's mutex only when someone sleeps.
//   * A worker marks itself busy while it holds a CB. Reset raises `resetting_`, bumps `epoch_`
//     (which makes every blocking point of a busy worker give up) and waits for busy to drop before
//     it clears the registers.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>

#include "cb_executor.hpp"
#include "spyre_dma/device_core/doorbell_order.hpp"
#include "spyre_dma/device_core/interrupt_line.hpp"
#include "spyre_dma/device_core/misbehave.hpp"
#include "spyre_dma/device_core/register_file.hpp"
#include "spyre_dma/refdev/ref_device.hpp"

namespace spyre_dma::refdev::detail {

using device_core::Iommu;
using device_core::Reg;
using device_core::SparseMemory;
using Registers = device_core::RegisterFile<std::atomic<std::uint64_t>>;

struct alignas(64) PipelineWorker {
  std::thread thread;
  std::mutex mutex;
  std::condition_variable cv;
  std::atomic<bool> sleeping{false};
  std::atomic<bool> busy{false};
  // Counters (relaxed; one writer, this worker).
  std::atomic<std::uint64_t> cbs{0};
  std::atomic<std::uint64_t> error_rbs{0};
  std::atomic<std::uint64_t> queue_faults{0};
  std::atomic<std::uint64_t> bytes{0};
  // Serialises writes into this pipeline's RB ring: its own worker, and a misbehaving worker of
  // another pipeline (wrong_queue).
  std::mutex rb_mutex;
  std::uint32_t last_tag = 0;  // of the previous CB this worker answered (stale_tag)
  // rb_pi_beyond_ring / cb_ci_backwards broke this pipeline's indices: it fetches nothing until
  // reset.
  std::atomic<bool> broken{false};
  // Test observation: the register whose value caused the last queue fault (hw::reg offset).
  std::atomic<std::uint64_t> fault_register{0};
};

class Controller final : private device_core::RegisterHooks {
 public:
  explicit Controller(RefDeviceConfig config);
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // BAR0: the core's access routine over this controller's hooks (register_hooks.cpp).
  std::uint64_t read(std::uint64_t offset, unsigned width) { return regs_.read(offset, width, *this); }
  void write(std::uint64_t offset, std::uint64_t value, unsigned width) { regs_.write(offset, value, width, *this); }

  std::uint32_t wait_for_interrupt(std::chrono::nanoseconds timeout);
  void wake_waiter() noexcept { interrupts_.wake(); }

  void pause();
  void resume();
  bool paused() const noexcept { return paused_.load(); }
  void set_faults(const RefDeviceFaults& f);
  RefDeviceFaults faults() const;
  void set_misbehave(const device_core::Misbehave& m);
  device_core::Misbehave misbehave() const;
  RefDeviceCounters counters() const;
  std::uint64_t queue_fault_register(hw::Pipeline p) const {
    return workers_[static_cast<unsigned>(p)].fault_register.load();
  }

  const RefDeviceConfig& config() const noexcept { return config_; }
  std::uint64_t clock_now_ns() const noexcept { return now_ns(); }  // TIMESTAMP_NS's clock
  SparseMemory& memory() noexcept { return memory_; }
  Iommu& iommu() noexcept { return iommu_; }

 private:
  PipelineWorker& worker(hw::Pipeline p) noexcept { return workers_[static_cast<unsigned>(p)]; }
  std::atomic<std::uint64_t>& reg(Reg r, hw::Pipeline p) noexcept { return regs_.cell(r, p); }
  std::uint32_t index(Reg r, hw::Pipeline p, std::memory_order order = std::memory_order_seq_cst) const noexcept {
    return static_cast<std::uint32_t>(regs_.cell(r, p).load(order));
  }
  std::uint32_t depth(hw::Pipeline p) const noexcept { return config_.depth[static_cast<unsigned>(p)]; }

  std::uint64_t now_ns() const noexcept {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0_).count());
  }
  std::uint64_t rb_timestamp() const noexcept {
    return (config_.capabilities & hw::kCapTimestamps) ? now_ns() : 0;
  }

  // RegisterHooks (register_hooks.cpp).
  std::uint64_t clock_ns() override { return now_ns(); }
  Condition condition() override { return Condition{resetting_.load(), fatal_.load()}; }
  void reset() override;  // synchronous (controller.cpp)
  void doorbell(hw::Pipeline p, std::uint32_t new_pi) override;
  void stored(Reg r, hw::Pipeline p) override;
  bool frozen() override { return stopped_.load(); }
  void bad_access() override { bad_register_accesses_.fetch_add(1, std::memory_order_relaxed); }

  // Worker (pipeline_worker.cpp).
  void worker_main(hw::Pipeline p);
  // CB_PI as far as this pipeline may fetch now (device_core::fetch_limit and this device's own
  // conditions), or nullopt.
  std::optional<std::uint32_t> fetch_limit(hw::Pipeline p) const noexcept;
  bool has_work(hw::Pipeline p) const noexcept;
  void wait_for_work(hw::Pipeline p);
  void process_one(hw::Pipeline p, std::uint64_t epoch, std::uint32_t cb_pi);
  void queue_fault(hw::Pipeline p, Reg at_fault);
  bool wait_barrier(hw::Pipeline p, std::uint32_t index, std::uint64_t epoch);
  bool inject_error() noexcept;
  // Writes the RB (waiting for ring space); `garbage_status` patches STATUS to kGarbageRbStatus.
  void retire(hw::Pipeline p, std::uint64_t epoch, hw::ResponseBlock rb, bool irq_bit,
              bool garbage_status = false);
  // Answers the CB as the misbehave kind says instead of retire() (see misbehave.hpp).
  void misbehave_retire(hw::Pipeline p, std::uint64_t epoch, const hw::ResponseBlock& rb, bool irq_bit);
  // wrong_queue: a copy of `rb` into pipeline q's RB ring, if it has room (else dropped).
  void write_stray_rb(hw::Pipeline q, hw::ResponseBlock rb, bool irq_bit);

  // Life cycle, waiting, interrupts (controller.cpp).
  void wake(hw::Pipeline p);
  void wake_all();
  void notify_progress();
  bool aborted(std::uint64_t epoch) const noexcept {
    return shutdown_.load() || epoch_.load() != epoch;
  }
  // Blocks until ready() (true) or a reset / shutdown (false); ready() is rechecked at least every
  // millisecond.
  template <class Ready>
  bool wait_progress(std::uint64_t epoch, Ready ready);
  bool sleep_interruptible(std::uint64_t epoch, std::chrono::nanoseconds duration);
  void raise_interrupt(hw::Pipeline p);
  void raise_fatal(hw::ErrorKind cause, std::uint64_t detail);

  const RefDeviceConfig config_;
  const std::chrono::steady_clock::time_point t0_;
  SparseMemory memory_;
  const device_core::FlatMemory memory_layout_;
  Iommu iommu_;
  device_core::DoorbellOrder doorbells_;
  Registers regs_;

  std::atomic<bool> resetting_{false};
  std::atomic<bool> fatal_{false};
  std::atomic<std::uint64_t> epoch_{0};
  std::atomic<bool> shutdown_{false};
  std::mutex reset_mutex_;  // one reset at a time

  // Test controls.
  std::atomic<bool> paused_{false};
  std::atomic<bool> hang_{false};
  std::atomic<std::uint32_t> error_every_n_{0};
  std::atomic<std::uint64_t> error_counter_{0};
  device_core::MisbehaveTrigger misbehave_;
  // stop_answering: nothing fetched, no RB, register writes (but CONTROL) ignored, until reset.
  std::atomic<bool> stopped_{false};

  device_core::InterruptLine interrupts_;

  // Progress (retirements, RB_CI, reset, fault changes) for workers blocked inside a CB.
  std::atomic<int> progress_waiters_{0};
  std::mutex progress_mutex_;
  std::condition_variable progress_cv_;

  std::atomic<std::uint64_t> injected_errors_{0};
  std::atomic<std::uint64_t> resets_{0};
  std::atomic<std::uint64_t> bad_register_accesses_{0};

  std::array<PipelineWorker, hw::kNumPipelines> workers_;  // last: threads start after the rest
};

template <class Ready>
bool Controller::wait_progress(std::uint64_t epoch, Ready ready) {
  for (int spin = 0; spin < 64; ++spin) {
    if (aborted(epoch)) return false;
    if (ready()) return true;
    std::this_thread::yield();
  }
  progress_waiters_.fetch_add(1);
  std::unique_lock<std::mutex> lock(progress_mutex_);
  bool ok = false;
  for (;;) {
    if (aborted(epoch)) break;
    if (ready()) {
      ok = true;
      break;
    }
    progress_cv_.wait_for(lock, std::chrono::milliseconds(1));
  }
  progress_waiters_.fetch_sub(1);
  return ok;
}

}  // namespace spyre_dma::refdev::detail
