// BAR0 register decode of the reference device (offsets from hw::reg; see ref_device.hpp for the
// access rules).
#include <sstream>
#include <stdexcept>

#include "device_core.hpp"

namespace spyre_dma::refdev::detail {
namespace {

namespace reg = hw::reg;

constexpr std::uint64_t kPipeEnd = reg::kPipeBase + hw::kNumPipelines * reg::kPipeStride;

bool in_pipe_block(std::uint64_t offset) noexcept {
  return offset >= reg::kPipeBase && offset < kPipeEnd;
}
hw::Pipeline pipe_of(std::uint64_t offset) noexcept {
  return static_cast<hw::Pipeline>((offset - reg::kPipeBase) / reg::kPipeStride);
}
std::uint64_t pipe_reg(std::uint64_t offset) noexcept { return (offset - reg::kPipeBase) % reg::kPipeStride; }

bool is_64bit(std::uint64_t offset) noexcept {
  if (in_pipe_block(offset)) {
    const std::uint64_t r = pipe_reg(offset);
    return r == reg::kCbRingBase_64 || r == reg::kRbRingBase_64;
  }
  return offset == reg::kCapabilities_64 || offset == reg::kDeviceMemBytes_64 ||
         offset == reg::kDeviceMemUsable_64 || offset == reg::kTimestampNs_64 ||
         offset == reg::kFatalDetail_64;
}

void check_bounds(std::uint64_t offset, std::uint64_t width, const char* what) {
  if (offset < reg::kBar0Bytes && reg::kBar0Bytes - offset >= width) return;
  std::ostringstream msg;
  msg << "RefDevice::" << what << ": offset 0x" << std::hex << offset << " lies beyond BAR0 (0x"
      << reg::kBar0Bytes << " bytes)";
  throw std::out_of_range(msg.str());
}

constexpr std::uint64_t kLow = 0xFFFF'FFFFull;

}  // namespace

// --- Reads ------------------------------------------------------------------------------------

bool DeviceCore::read_global(std::uint64_t offset, std::uint64_t& v) const {
  switch (offset) {
    case reg::kId: v = (std::uint64_t(hw::kPciDeviceSpyrePf) << 16) | hw::kPciVendorIbm; return true;
    case reg::kVersion: v = hw::kContractVersion; return true;
    case reg::kCapabilities_64: v = config_.capabilities; return true;
    case reg::kDepthCompute: v = config_.depth[0]; return true;
    case reg::kDepthDmai: v = config_.depth[1]; return true;
    case reg::kDepthDmao: v = config_.depth[2]; return true;
    case reg::kMaxCbBytes: v = config_.max_cb_bytes; return true;
    case reg::kNumTags: v = hw::kMaxTag; return true;
    case reg::kDeviceMemBytes_64: v = config_.device_memory_bytes; return true;
    case reg::kDeviceMemUsable_64: v = config_.usable_bytes; return true;
    case reg::kTimestampNs_64: v = now_ns(); return true;
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

bool DeviceCore::read_pipe(std::uint64_t offset, std::uint64_t& v) const {
  const PipelineRegisters& r = pipe(pipe_of(offset));
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

std::uint64_t DeviceCore::read64(std::uint64_t offset) {
  check_bounds(offset, 8, "read64");
  if (offset % 4 != 0) {
    bad_access();
    return 0;
  }
  if (is_64bit(offset)) {
    std::uint64_t v = 0;
    if (in_pipe_block(offset) ? read_pipe(offset, v) : read_global(offset, v)) return v;
    return 0;
  }
  const std::uint64_t lo = read32(offset);
  return lo | (std::uint64_t(read32(offset + 4)) << 32);
}

std::uint32_t DeviceCore::read32(std::uint64_t offset) {
  check_bounds(offset, 4, "read32");
  if (offset % 4 != 0) {
    bad_access();
    return 0;
  }
  if (is_64bit(offset)) return static_cast<std::uint32_t>(read64(offset) & kLow);
  if (offset >= 4 && is_64bit(offset - 4)) return static_cast<std::uint32_t>(read64(offset - 4) >> 32);
  std::uint64_t v = 0;
  if (in_pipe_block(offset) ? read_pipe(offset, v) : read_global(offset, v)) return static_cast<std::uint32_t>(v);
  bad_access();
  return 0;
}

// --- Writes -----------------------------------------------------------------------------------

void DeviceCore::write64(std::uint64_t offset, std::uint64_t value) {
  check_bounds(offset, 8, "write64");
  if (offset % 4 != 0) return bad_access();
  if (!is_64bit(offset)) {
    write32(offset, static_cast<std::uint32_t>(value & kLow));
    write32(offset + 4, static_cast<std::uint32_t>(value >> 32));
    return;
  }
  if (!in_pipe_block(offset)) return bad_access();  // the global 64-bit registers are read-only
  if (stopped_.load()) return;  // stop_answering: the registers are frozen
  PipelineRegisters& r = pipe(pipe_of(offset));
  (pipe_reg(offset) == reg::kCbRingBase_64 ? r.cb_base : r.rb_base).store(value);
  wake(pipe_of(offset));
}

void DeviceCore::write32(std::uint64_t offset, std::uint32_t value) {
  check_bounds(offset, 4, "write32");
  if (offset % 4 != 0) return bad_access();
  if (is_64bit(offset)) {
    return write64(offset, (read64(offset) & ~kLow) | value);
  }
  if (offset >= 4 && is_64bit(offset - 4)) {
    return write64(offset - 4, (read64(offset - 4) & kLow) | (std::uint64_t(value) << 32));
  }
  if (in_pipe_block(offset)) return write_pipe32(offset, value);
  write_global32(offset, value);
}

void DeviceCore::write_global32(std::uint64_t offset, std::uint32_t value) {
  if (offset == reg::kControl) return write_control(value);
  bad_access();  // read-only or unassigned
}

void DeviceCore::write_control(std::uint32_t value) {
  std::lock_guard<std::mutex> lock(control_mutex_);
  if (value & hw::kControlReset) return reset(value);
  control_.store(value & hw::kControlEnable);
  wake_all();
}

void DeviceCore::write_pipe32(std::uint64_t offset, std::uint32_t value) {
  if (stopped_.load()) return;  // stop_answering: the registers are frozen
  const hw::Pipeline p = pipe_of(offset);
  PipelineRegisters& r = pipe(p);
  switch (pipe_reg(offset)) {
    case reg::kCbPi:  // the doorbell: the hot path
      doorbells_.ring(p, value, r.cb_pi, r.rb_pi.load(std::memory_order_acquire));
      // A worker that may not fetch (paused, disabled, faulted) is woken by whatever lifts that.
      if (worker(p).sleeping.load() && can_fetch(p)) wake(p);
      return;
    case reg::kRbCi:
      r.rb_ci.store(value);
      return notify_progress();
    case reg::kCbRingSize: r.cb_size.store(value); break;
    case reg::kRbRingSize: r.rb_size.store(value); break;
    case reg::kIrqEnable: r.irq_enable.store(value); return;
    case reg::kIrqVector: r.irq_vector.store(value); return;
    case reg::kErrorStatus:
      if (value != 0) r.error_status.store(0);  // write-1-to-clear; any set bit clears the kind
      break;
    case reg::kQueueControl: r.queue_control.store(value & hw::kQueueEnable); break;
    default: return bad_access();  // CB_CI, RB_PI (read-only) or unassigned
  }
  wake(p);
  notify_progress();
}

}  // namespace spyre_dma::refdev::detail
