// Life cycle, reset, interrupts and waiting of the reference device (see controller.hpp).
#include "controller.hpp"
#include "spyre_dma/deadline.hpp"

#include <algorithm>

namespace spyre_dma::refdev::detail {

Controller::Controller(RefDeviceConfig config)
    : config_(std::move(config)),
      t0_(std::chrono::steady_clock::now()),
      memory_(config_.device_memory_bytes),
      memory_layout_(config_.device_memory_bytes),
      doorbells_(config_.depth),
      regs_(config_.identity()) {
  for (unsigned p = 0; p < hw::kNumPipelines; ++p) {
    workers_[p].thread = std::thread([this, p] { worker_main(static_cast<hw::Pipeline>(p)); });
  }
}

Controller::~Controller() {
  shutdown_.store(true);
  epoch_.fetch_add(1);
  for (auto& w : workers_) {  // unconditionally: a worker may be about to sleep
    std::lock_guard<std::mutex> lock(w.mutex);
    w.cv.notify_all();
  }
  {
    std::lock_guard<std::mutex> lock(progress_mutex_);
    progress_cv_.notify_all();
  }
  interrupts_.close();
  for (auto& w : workers_) {
    if (w.thread.joinable()) w.thread.join();
  }
}

void Controller::wake(hw::Pipeline p) {
  PipelineWorker& w = worker(p);
  if (w.sleeping.load()) {
    // Through the mutex, so the wake-up cannot fall between the worker's last check and its
    // sleep; the notify after it, so the worker does not wake into a held lock.
    { std::lock_guard<std::mutex> pass(w.mutex); }
    w.cv.notify_one();
  }
}

void Controller::wake_all() {
  for (unsigned p = 0; p < hw::kNumPipelines; ++p) wake(static_cast<hw::Pipeline>(p));
  notify_progress();
}

void Controller::notify_progress() {
  if (progress_waiters_.load() > 0) {
    { std::lock_guard<std::mutex> pass(progress_mutex_); }
    progress_cv_.notify_all();
  }
}

bool Controller::sleep_interruptible(std::uint64_t epoch, std::chrono::nanoseconds duration) {
  const auto deadline = deadline_after<std::chrono::steady_clock>(std::chrono::steady_clock::now(), duration);
  progress_waiters_.fetch_add(1);
  std::unique_lock<std::mutex> lock(progress_mutex_);
  bool ok = true;
  while (std::chrono::steady_clock::now() < deadline) {
    if (aborted(epoch)) {
      ok = false;
      break;
    }
    progress_cv_.wait_until(lock, std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(10)));
  }
  progress_waiters_.fetch_sub(1);
  return ok && !aborted(epoch);
}

// --- Interrupts -------------------------------------------------------------------------------

void Controller::raise_interrupt(hw::Pipeline p) { interrupts_.raise(1u << static_cast<unsigned>(p)); }

std::uint32_t Controller::wait_for_interrupt(std::chrono::nanoseconds timeout) { return interrupts_.wait(timeout); }

// --- Reset and fatal errors -------------------------------------------------------------------

void Controller::raise_fatal(hw::ErrorKind cause, std::uint64_t detail) {
  regs_.set(Reg::kFatalCause, static_cast<std::uint64_t>(cause));
  regs_.set(Reg::kFatalDetail, detail);
  fatal_.store(true);
  wake_all();
}

void Controller::reset() {
  std::lock_guard<std::mutex> lock(reset_mutex_);
  resetting_.store(true);
  epoch_.fetch_add(1);  // every blocking point of a busy worker gives up
  for (;;) {
    wake_all();
    bool idle = true;
    for (const auto& w : workers_) idle = idle && !w.busy.load();
    if (idle) break;
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  // No worker holds a CB now and none starts one while resetting_ is set.
  doorbells_.clear();
  regs_.reset();
  for (auto& w : workers_) {
    w.broken.store(false);
    w.fault_register.store(0);
    w.last_tag = 0;  // no worker runs now
  }
  stopped_.store(false);
  interrupts_.clear();
  fatal_.store(false);
  resets_.fetch_add(1, std::memory_order_relaxed);
  resetting_.store(false);
  wake_all();
}

// --- Test controls ----------------------------------------------------------------------------

void Controller::pause() { paused_.store(true); }

void Controller::resume() {
  paused_.store(false);
  wake_all();
}

void Controller::set_faults(const RefDeviceFaults& f) {
  error_every_n_.store(f.error_every_n);
  error_counter_.store(0);
  hang_.store(f.hang);
  // A worker past its hang check publishes under its ring lock; once each lock has been taken
  // and released, every later publish sees the hang.
  for (PipelineWorker& w : workers_) {
    std::lock_guard<std::mutex> pass_through(w.rb_mutex);
  }
  wake_all();
}

void Controller::set_misbehave(const device_core::Misbehave& m) { misbehave_.arm(m); }

device_core::Misbehave Controller::misbehave() const { return misbehave_.armed(); }

RefDeviceFaults Controller::faults() const {
  RefDeviceFaults f;
  f.hang = hang_.load();
  f.error_every_n = error_every_n_.load();
  return f;
}

RefDeviceCounters Controller::counters() const {
  RefDeviceCounters c;
  for (unsigned p = 0; p < hw::kNumPipelines; ++p) {
    const PipelineWorker& w = workers_[p];
    c.cbs_executed[p] = w.cbs.load(std::memory_order_relaxed);
    c.error_rbs[p] = w.error_rbs.load(std::memory_order_relaxed);
    c.queue_faults[p] = w.queue_faults.load(std::memory_order_relaxed);
    c.bytes_moved += w.bytes.load(std::memory_order_relaxed);
  }
  c.injected_errors = injected_errors_.load(std::memory_order_relaxed);
  c.misbehaviours = misbehave_.fired();
  c.interrupts = interrupts_.raised();
  c.resets = resets_.load(std::memory_order_relaxed);
  c.bad_register_accesses = bad_register_accesses_.load(std::memory_order_relaxed);
  return c;
}

}  // namespace spyre_dma::refdev::detail
