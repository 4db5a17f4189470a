// The state and threads behind RefDevice (see spyre_dma/refdev/ref_device.hpp for the behaviour).
//
// Split by role over several files: device_core.cpp (life cycle, reset, interrupts, waiting),
// bar0_registers.cpp (register decode), pipeline_worker.cpp (fetch, execute, retire).
//
// Synchronisation, in brief:
//   * Registers are atomics. Producer-side registers (CB_PI, RB_CI) and device-side ones (CB_CI,
//     RB_PI) sit on separate cache lines.
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
#include <thread>

#include "cb_executor.hpp"
#include "doorbell_order.hpp"
#include "spyre_dma/refdev/ref_device.hpp"

namespace spyre_dma::refdev::detail {

struct PipelineRegisters {
  // Programmed by the engine, read by the worker.
  std::atomic<std::uint64_t> cb_base{0};
  std::atomic<std::uint64_t> rb_base{0};
  std::atomic<std::uint32_t> cb_size{0};
  std::atomic<std::uint32_t> rb_size{0};
  std::atomic<std::uint32_t> irq_enable{0};
  std::atomic<std::uint32_t> irq_vector{0};
  std::atomic<std::uint32_t> queue_control{0};
  std::atomic<std::uint32_t> error_status{0};
  std::atomic<std::uint64_t> fault_register{0};  // test observation: what caused the queue fault
  // Written by the engine on the hot path.
  alignas(64) std::atomic<std::uint32_t> cb_pi{0};
  std::atomic<std::uint32_t> rb_ci{0};
  // Written by the device on the hot path. rb_pi doubles as the retired count: every fetched CB
  // retires with one RB, in order, and both indices restart at zero on reset.
  alignas(64) std::atomic<std::uint32_t> cb_ci{0};
  std::atomic<std::uint32_t> rb_pi{0};
};

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
};

class DeviceCore {
 public:
  explicit DeviceCore(RefDeviceConfig config);
  ~DeviceCore();
  DeviceCore(const DeviceCore&) = delete;
  DeviceCore& operator=(const DeviceCore&) = delete;

  // BAR0 (bar0_registers.cpp).
  std::uint32_t read32(std::uint64_t offset);
  void write32(std::uint64_t offset, std::uint32_t value);
  std::uint64_t read64(std::uint64_t offset);
  void write64(std::uint64_t offset, std::uint64_t value);

  std::uint32_t wait_for_interrupt(std::chrono::nanoseconds timeout);

  void pause();
  void resume();
  bool paused() const noexcept { return paused_.load(); }
  void set_faults(const RefDeviceFaults& f);
  RefDeviceFaults faults() const;
  void set_misbehave(const Misbehave& m);
  Misbehave misbehave() const;
  RefDeviceCounters counters() const;
  std::uint64_t queue_fault_register(hw::Pipeline p) const {
    return pipe(p).fault_register.load();
  }

  const RefDeviceConfig& config() const noexcept { return config_; }
  SparseMemory& memory() noexcept { return memory_; }
  Iommu& iommu() noexcept { return iommu_; }

 private:
  PipelineRegisters& pipe(hw::Pipeline p) noexcept { return regs_[static_cast<unsigned>(p)]; }
  const PipelineRegisters& pipe(hw::Pipeline p) const noexcept { return regs_[static_cast<unsigned>(p)]; }
  PipelineWorker& worker(hw::Pipeline p) noexcept { return workers_[static_cast<unsigned>(p)]; }

  std::uint64_t now_ns() const noexcept {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0_).count());
  }
  std::uint64_t rb_timestamp() const noexcept {
    return (config_.capabilities & hw::kCapTimestamps) ? now_ns() : 0;
  }

  // Registers (bar0_registers.cpp).
  bool read_global(std::uint64_t offset, std::uint64_t& value) const;
  bool read_pipe(std::uint64_t offset, std::uint64_t& value) const;
  void write_global32(std::uint64_t offset, std::uint32_t value);
  void write_pipe32(std::uint64_t offset, std::uint32_t value);
  void write_control(std::uint32_t value);
  void bad_access() noexcept { bad_register_accesses_.fetch_add(1, std::memory_order_relaxed); }

  // Worker (pipeline_worker.cpp).
  void worker_main(hw::Pipeline p);
  bool can_fetch(hw::Pipeline p) const noexcept;
  bool has_work(hw::Pipeline p) const noexcept;
  void wait_for_work(hw::Pipeline p);
  void process_one(hw::Pipeline p, std::uint64_t epoch);
  void queue_fault(hw::Pipeline p, std::uint64_t register_offset);
  bool wait_barrier(hw::Pipeline p, std::uint32_t index, std::uint64_t epoch);
  bool inject_error() noexcept;
  // Writes the RB (waiting for ring space); `garbage_status` patches STATUS to kGarbageRbStatus.
  void retire(hw::Pipeline p, std::uint64_t epoch, hw::ResponseBlock rb, bool irq_bit,
              bool garbage_status = false);
  // The misbehave control: whether the CB just fetched is the one it fires at (once).
  bool misbehave_now() noexcept;
  // Answers the CB as the misbehave kind says instead of retire() (see misbehave.hpp).
  void misbehave_retire(hw::Pipeline p, std::uint64_t epoch, hw::ResponseBlock rb, bool irq_bit);
  // wrong_queue: a copy of `rb` into pipeline q's RB ring, if it has room (else dropped).
  void write_stray_rb(hw::Pipeline q, hw::ResponseBlock rb);

  // Life cycle, waiting, interrupts (device_core.cpp).
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
  void reset(std::uint32_t control_after);

  const RefDeviceConfig config_;
  const std::chrono::steady_clock::time_point t0_;
  SparseMemory memory_;
  Iommu iommu_;
  CbExecutor executor_;
  DoorbellOrder doorbells_;
  std::array<PipelineRegisters, hw::kNumPipelines> regs_;

  std::atomic<std::uint32_t> control_{0};
  std::atomic<bool> resetting_{false};
  std::atomic<bool> fatal_{false};
  std::atomic<std::uint32_t> fatal_cause_{0};
  std::atomic<std::uint64_t> fatal_detail_{0};
  std::atomic<std::uint64_t> epoch_{0};
  std::atomic<bool> shutdown_{false};
  std::mutex control_mutex_;  // one CONTROL write (reset) at a time

  // Test controls.
  std::atomic<bool> paused_{false};
  std::atomic<bool> hang_{false};
  std::atomic<std::uint32_t> error_every_n_{0};
  std::atomic<std::uint64_t> error_counter_{0};
  std::atomic<MisbehaveKind> misbehave_kind_{MisbehaveKind::kNone};
  std::atomic<std::uint64_t> misbehave_at_{0};
  std::atomic<std::uint64_t> rogue_iova_{0};
  std::atomic<std::uint64_t> rogue_device_offset_{0};
  std::atomic<std::uint64_t> misbehave_counter_{0};  // CBs fetched since set_faults
  std::atomic<bool> misbehave_fired_{false};
  std::atomic<std::uint64_t> misbehaviours_{0};
  // stop_answering: nothing fetched, no RB, register writes (but CONTROL) ignored, until reset.
  std::atomic<bool> stopped_{false};

  // Interrupts.
  std::atomic<std::uint32_t> irq_pending_{0};
  std::atomic<int> irq_waiters_{0};
  std::mutex irq_mutex_;
  std::condition_variable irq_cv_;

  // Progress (retirements, RB_CI, reset, fault changes) for workers blocked inside a CB.
  std::atomic<int> progress_waiters_{0};
  std::mutex progress_mutex_;
  std::condition_variable progress_cv_;

  std::atomic<std::uint64_t> injected_errors_{0};
  std::atomic<std::uint64_t> interrupts_{0};
  std::atomic<std::uint64_t> resets_{0};
  std::atomic<std::uint64_t> bad_register_accesses_{0};

  std::array<PipelineWorker, hw::kNumPipelines> workers_;  // last: threads start after the rest
};

template <class Ready>
bool DeviceCore::wait_progress(std::uint64_t epoch, Ready ready) {
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
