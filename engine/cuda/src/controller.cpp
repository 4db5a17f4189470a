// Registers, life cycle, reset and interrupts of CopyEngineDevice (see controller.hpp).
#include "controller.hpp"
#include "spyre_dma/deadline.hpp"

#include <stdexcept>

namespace spyre_dma::cuda::detail {
namespace {

std::unique_ptr<CopyExecutor> non_null(std::unique_ptr<CopyExecutor> e) {
  if (!e) throw std::invalid_argument("CopyEngineDevice: null executor");
  return e;
}

device_core::DeviceIdentity identity(const CopyEngineDeviceConfig& c, const CopyExecutor& e) {
  device_core::DeviceIdentity id;
  id.depth = c.depth;
  id.max_cb_bytes = c.max_cb_bytes;
  id.memory_bytes = id.usable_bytes = e.device_memory_bytes();  // the executor's region, all usable
  device_core::validate(id, "CopyEngineDeviceConfig");
  return id;
}

CopyEngineDeviceConfig checked(CopyEngineDeviceConfig c) {
  if (c.window == 0) throw std::invalid_argument("CopyEngineDeviceConfig: window is zero");
  if (c.completion_timeout <= std::chrono::nanoseconds::zero()) {
    throw std::invalid_argument("CopyEngineDeviceConfig: completion_timeout must be positive");
  }
  return c;
}

}  // namespace

Controller::Controller(std::unique_ptr<CopyExecutor> executor, CopyEngineDeviceConfig config)
    : config_(checked(std::move(config))),
      executor_(non_null(std::move(executor))),
      region_(executor_->device_memory_bytes()),
      doorbells_(config_.depth),
      regs_(identity(config_, *executor_)) {
  for (unsigned p = 0; p < hw::kNumPipelines; ++p) {
    workers_[p].thread = std::thread([this, p] { worker_main(p); });
  }
}

Controller::~Controller() {
  shutdown_.store(true);
  wake_all();
  interrupts_.close();
  for (auto& r : workers_) {
    if (r.thread.joinable()) r.thread.join();
  }
}

void Controller::wake(unsigned p) {
  PipelineWorker& r = workers_[p];
  // Through the mutex, so the wake-up cannot fall between the worker's last check and its sleep;
  // the notify after it, so the worker does not wake into a held lock.
  { std::lock_guard<std::mutex> pass(r.mu); }
  r.cv.notify_one();
}

void Controller::wake_all() {
  for (unsigned p = 0; p < hw::kNumPipelines; ++p) wake(p);
}

void Controller::raise_interrupt(unsigned p) { interrupts_.raise(1u << p); }

std::uint32_t Controller::wait_for_interrupt(std::chrono::nanoseconds timeout) { return interrupts_.wait(timeout); }

// --- Register hooks -------------------------------------------------------------------------------

void Controller::doorbell(hw::Pipeline p, std::uint32_t new_pi) {
  doorbells_.ring(p, new_pi, static_cast<std::uint32_t>(regs_.cell(Reg::kRbPi, p).load(std::memory_order_acquire)),
                  regs_.cell(Reg::kCbPi, p));
  wake(static_cast<unsigned>(p));
}

void Controller::stored(Reg r, hw::Pipeline p) {
  if (r == Reg::kControl) return wake_all();
  if (r == Reg::kIrqEnable || r == Reg::kIrqVector) return;
  wake(static_cast<unsigned>(p));
}

// Synchronous: every worker parks (its lane drained, its unretired CBs dropped), then the
// registers clear. A lane that does not drain within the completion timeout leaves the device
// FATAL: a copy may still be writing host memory.
void Controller::reset() {
  std::lock_guard<std::mutex> lock(reset_mu_);
  resetting_.store(true);
  wake_all();
  const auto deadline = deadline_after<std::chrono::steady_clock>(
      std::chrono::steady_clock::now(), config_.completion_timeout + std::chrono::seconds(1));
  for (unsigned p = 0; p < hw::kNumPipelines; ++p) {
    while (!workers_[p].parked.load() && std::chrono::steady_clock::now() < deadline) {
      wake(p);
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  bool all_parked = true;
  for (auto& r : workers_) all_parked = all_parked && r.parked.load();
  regs_.reset();
  doorbells_.clear();
  for (auto& r : workers_) {
    r.broken.store(false);
    r.last_tag = 0;  // parked: no worker touches it now
  }
  stopped_.store(false);
  interrupts_.clear();
  if (all_parked) {
    fatal_.store(false);
  } else {
    regs_.set(Reg::kFatalCause, static_cast<std::uint64_t>(hw::ErrorKind::kCompletionTimeout));
    fatal_.store(true);
  }
  resetting_.store(false);
  wake_all();
}

}  // namespace spyre_dma::cuda::detail
