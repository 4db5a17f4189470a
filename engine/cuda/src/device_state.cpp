// Registers, life cycle, reset and interrupts of CopyEngineDevice (see device_state.hpp).
#include "device_state.hpp"

#include <sstream>
#include <stdexcept>

namespace spyre_dma::cuda::detail {
namespace {

namespace reg = hw::reg;
constexpr std::uint64_t kPipeEnd = reg::kPipeBase + hw::kNumPipelines * reg::kPipeStride;
constexpr std::uint64_t kLow = 0xFFFF'FFFFull;
constexpr std::uint64_t kCapabilities = hw::kCapFill | hw::kCapDeviceCopy | hw::kCapCompute | hw::kCapTimestamps;

bool in_pipe_block(std::uint64_t offset) noexcept { return offset >= reg::kPipeBase && offset < kPipeEnd; }
unsigned pipe_of(std::uint64_t offset) noexcept {
  return static_cast<unsigned>((offset - reg::kPipeBase) / reg::kPipeStride);
}
std::uint64_t pipe_reg(std::uint64_t offset) noexcept { return (offset - reg::kPipeBase) % reg::kPipeStride; }

bool is_64bit(std::uint64_t offset) noexcept {
  if (in_pipe_block(offset)) {
    const std::uint64_t r = pipe_reg(offset);
    return r == reg::kCbRingBase_64 || r == reg::kRbRingBase_64;
  }
  return offset == reg::kCapabilities_64 || offset == reg::kDeviceMemBytes_64 ||
         offset == reg::kDeviceMemUsable_64 || offset == reg::kTimestampNs_64 || offset == reg::kFatalDetail_64;
}

CopyEngineDeviceConfig checked(CopyEngineDeviceConfig c) {
  for (unsigned p = 0; p < hw::kNumPipelines; ++p) {
    if (!hw::is_power_of_two(c.depth[p])) {
      throw std::invalid_argument("CopyEngineDeviceConfig: depth of " +
                                  std::string(hw::to_string(static_cast<hw::Pipeline>(p))) +
                                  " must be a power of two, not " + std::to_string(c.depth[p]));
    }
  }
  if (c.max_cb_bytes == 0) throw std::invalid_argument("CopyEngineDeviceConfig: max_cb_bytes is zero");
  if (c.window == 0) throw std::invalid_argument("CopyEngineDeviceConfig: window is zero");
  if (c.completion_timeout <= std::chrono::nanoseconds::zero()) {
    throw std::invalid_argument("CopyEngineDeviceConfig: completion_timeout must be positive");
  }
  return c;
}

std::unique_ptr<CopyExecutor> non_null(std::unique_ptr<CopyExecutor> e) {
  if (!e) throw std::invalid_argument("CopyEngineDevice: null executor");
  return e;
}

}  // namespace

DeviceState::DeviceState(std::unique_ptr<CopyExecutor> executor, CopyEngineDeviceConfig config)
    : config_(checked(std::move(config))), executor_(non_null(std::move(executor))) {
  for (unsigned p = 0; p < hw::kNumPipelines; ++p) {
    runners_[p].thread = std::thread([this, p] { runner_main(p); });
  }
}

DeviceState::~DeviceState() {
  shutdown_.store(true);
  wake_all();
  for (auto& r : runners_) {
    if (r.thread.joinable()) r.thread.join();
  }
  {
    std::lock_guard<std::mutex> lock(irq_mu_);
    irq_cv_.notify_all();
  }
}

void DeviceState::wake(unsigned p) {
  Runner& r = runners_[p];
  std::lock_guard<std::mutex> lock(r.mu);
  r.cv.notify_one();
}

void DeviceState::wake_all() {
  for (unsigned p = 0; p < hw::kNumPipelines; ++p) wake(p);
}

void DeviceState::raise_interrupt(unsigned p) {
  irq_pending_.fetch_or(1u << p);
  std::lock_guard<std::mutex> lock(irq_mu_);
  irq_cv_.notify_all();
}

std::uint32_t DeviceState::wait_for_interrupt(std::chrono::nanoseconds timeout) {
  if (std::uint32_t mask = irq_pending_.exchange(0)) return mask;
  if (timeout <= std::chrono::nanoseconds::zero()) return 0;
  std::unique_lock<std::mutex> lock(irq_mu_);
  (void)irq_cv_.wait_for(lock, timeout, [this] { return irq_pending_.load() != 0 || shutdown_.load(); });
  return irq_pending_.exchange(0);
}

// --- Registers ----------------------------------------------------------------------------------

bool DeviceState::read_global(std::uint64_t offset, std::uint64_t& v) {
  switch (offset) {
    case reg::kId: v = (std::uint64_t(hw::kPciDeviceSpyrePf) << 16) | hw::kPciVendorIbm; return true;
    case reg::kVersion: v = hw::kContractVersion; return true;
    case reg::kCapabilities_64: v = kCapabilities; return true;
    case reg::kDepthCompute: v = config_.depth[0]; return true;
    case reg::kDepthDmai: v = config_.depth[1]; return true;
    case reg::kDepthDmao: v = config_.depth[2]; return true;
    case reg::kMaxCbBytes: v = config_.max_cb_bytes; return true;
    case reg::kNumTags: v = hw::kMaxTag; return true;
    case reg::kDeviceMemBytes_64:
    case reg::kDeviceMemUsable_64: v = executor_->device_memory_bytes(); return true;
    case reg::kTimestampNs_64: v = executor_->now_ns(); return true;
    case reg::kControl: v = control_.load(); return true;
    case reg::kStatus: {
      const bool resetting = resetting_.load(), fatal = fatal_.load();
      v = ((control_.load() & hw::kControlEnable) && !resetting && !fatal ? hw::kStatusReady : 0u) |
          (resetting ? hw::kStatusResetting : 0u) | (fatal ? hw::kStatusFatal : 0u);
      return true;
    }
    case reg::kFatalCause: v = fatal_cause_.load(); return true;
    case reg::kFatalDetail_64: v = fatal_detail_.load(); return true;
    default: return false;
  }
}

bool DeviceState::read_pipe(std::uint64_t offset, std::uint64_t& v) const {
  const PipeRegisters& r = regs_[pipe_of(offset)];
  switch (pipe_reg(offset)) {
    case reg::kCbRingBase_64: v = r.cb_base.load(); return true;
    case reg::kCbRingSize: v = r.cb_size.load(); return true;
    case reg::kCbPi: v = r.cb_pi.load(); return true;
    case reg::kCbCi: v = r.cb_ci.load(); return true;
    case reg::kRbRingBase_64: v = r.rb_base.load(); return true;
    case reg::kRbRingSize: v = r.rb_size.load(); return true;
    case reg::kRbPi: v = r.rb_pi.load(); return true;
    case reg::kRbCi: v = r.rb_ci.load(); return true;
    case reg::kIrqEnable: v = r.irq_enable.load(); return true;
    case reg::kIrqVector: v = r.irq_vector.load(); return true;
    case reg::kErrorStatus: v = r.error_status.load(); return true;
    case reg::kQueueControl: v = r.queue_control.load(); return true;
    default: return false;
  }
}

std::uint64_t DeviceState::read(std::uint64_t offset, unsigned width) {
  if (offset >= reg::kBar0Bytes || reg::kBar0Bytes - offset < width) {
    std::ostringstream msg;
    msg << "CopyEngineDevice: read" << width * 8 << " at offset 0x" << std::hex << offset << " lies beyond BAR0";
    throw std::out_of_range(msg.str());
  }
  if (offset % 4 != 0) return 0;
  auto one = [this](std::uint64_t o, std::uint64_t& v) { return in_pipe_block(o) ? read_pipe(o, v) : read_global(o, v); };
  std::uint64_t v = 0;
  if (width == 8) {
    if (is_64bit(offset)) return one(offset, v) ? v : 0;
    return read(offset, 4) | (read(offset + 4, 4) << 32);
  }
  if (is_64bit(offset)) return one(offset, v) ? (v & kLow) : 0;
  if (offset >= 4 && is_64bit(offset - 4)) return one(offset - 4, v) ? (v >> 32) : 0;
  return one(offset, v) ? (v & kLow) : 0;
}

void DeviceState::write(std::uint64_t offset, std::uint64_t value, unsigned width) {
  if (offset >= reg::kBar0Bytes || reg::kBar0Bytes - offset < width) {
    std::ostringstream msg;
    msg << "CopyEngineDevice: write" << width * 8 << " at offset 0x" << std::hex << offset << " lies beyond BAR0";
    throw std::out_of_range(msg.str());
  }
  if (offset % 4 != 0) return;
  if (width == 8 && !is_64bit(offset)) {
    write(offset, value & kLow, 4);
    write(offset + 4, value >> 32, 4);
    return;
  }
  if (width == 4 && is_64bit(offset)) return write(offset, (read(offset, 8) & ~kLow) | (value & kLow), 8);
  if (width == 4 && offset >= 4 && is_64bit(offset - 4)) {
    return write(offset - 4, (read(offset - 4, 8) & kLow) | (value << 32), 8);
  }
  if (is_64bit(offset)) {
    if (!in_pipe_block(offset)) return;  // the global 64-bit registers are read-only
    PipeRegisters& r = regs_[pipe_of(offset)];
    (pipe_reg(offset) == reg::kCbRingBase_64 ? r.cb_base : r.rb_base).store(value);
    return wake(pipe_of(offset));
  }
  if (in_pipe_block(offset)) return write_pipe32(offset, static_cast<std::uint32_t>(value));
  if (offset == reg::kControl) write_control(static_cast<std::uint32_t>(value));
}

void DeviceState::write_pipe32(std::uint64_t offset, std::uint32_t value) {
  const unsigned p = pipe_of(offset);
  PipeRegisters& r = regs_[p];
  switch (pipe_reg(offset)) {
    case reg::kCbPi:  // the doorbell
      doorbells_.ring(p, r.cb_pi.load(), value, r.rb_pi.load(std::memory_order_acquire));
      r.cb_pi.store(value, std::memory_order_seq_cst);
      break;
    case reg::kRbCi: r.rb_ci.store(value); break;
    case reg::kCbRingSize: r.cb_size.store(value); break;
    case reg::kRbRingSize: r.rb_size.store(value); break;
    case reg::kIrqEnable: r.irq_enable.store(value); return;
    case reg::kIrqVector: r.irq_vector.store(value); return;
    case reg::kErrorStatus:
      if (value != 0) r.error_status.store(0);  // write-1-to-clear
      break;
    case reg::kQueueControl: r.queue_control.store(value & hw::kQueueEnable); break;
    default: return;  // CB_CI, RB_PI (read-only) or unassigned
  }
  wake(p);
}

void DeviceState::write_control(std::uint32_t value) {
  std::lock_guard<std::mutex> lock(control_mu_);
  if (value & hw::kControlReset) return reset(value);
  control_.store(value & hw::kControlEnable);
  wake_all();
}

// Synchronous: every runner parks (its lane drained, its unretired CBs dropped), then the
// registers clear. A lane that does not drain within the completion timeout leaves the device
// FATAL: a copy may still be writing host memory.
void DeviceState::reset(std::uint32_t control_after) {
  resetting_.store(true);
  wake_all();
  const auto deadline = std::chrono::steady_clock::now() + config_.completion_timeout + std::chrono::seconds(1);
  for (unsigned p = 0; p < hw::kNumPipelines; ++p) {
    while (!runners_[p].parked.load() && std::chrono::steady_clock::now() < deadline) {
      wake(p);
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  bool all_parked = true;
  for (auto& r : runners_) all_parked = all_parked && r.parked.load();
  for (auto& r : regs_) {
    r.cb_base.store(0);
    r.rb_base.store(0);
    r.cb_size.store(0);
    r.rb_size.store(0);
    r.irq_enable.store(0);
    r.irq_vector.store(0);
    r.queue_control.store(0);
    r.error_status.store(0);
    r.cb_pi.store(0);
    r.rb_ci.store(0);
    r.cb_ci.store(0);
    r.rb_pi.store(0);
  }
  doorbells_.clear();
  irq_pending_.store(0);
  if (all_parked) {
    fatal_.store(false);
    fatal_cause_.store(0);
    fatal_detail_.store(0);
  } else {
    fatal_cause_.store(static_cast<std::uint32_t>(hw::ErrorKind::kCompletionTimeout));
    fatal_.store(true);
  }
  control_.store(control_after & hw::kControlEnable);
  resetting_.store(false);
  wake_all();
}

}  // namespace spyre_dma::cuda::detail
