// BAR0 of the RTL controller: the contract's register map, as DmaController implements it (the
// RTL's own configuration comes from SimConfig through its register port, not from BAR0).
#include <algorithm>

#include "rtl_controller.hpp"
#include "host/root_complex.hpp"
#include "sim/sim_time.hpp"

namespace spyre_dma::rtl {

using namespace sc_core;
using model::to_ps;
using pcie::Ps;

namespace {
std::uint64_t merge_half(std::uint64_t reg, std::uint64_t offset_in_reg, std::uint64_t value, unsigned width) {
  if (width == 8) return value;
  const unsigned shift = offset_in_reg == 4 ? 32 : 0;
  const std::uint64_t mask = 0xFFFF'FFFFull << shift;
  return (reg & ~mask) | ((value & 0xFFFF'FFFFull) << shift);
}
}  // namespace

model::ControllerCounters RtlController::counters() const {
  model::ControllerCounters c = counters_;
  c.read_requests = data_path_.counters().read_requests;
  c.write_tlps += data_path_.counters().write_tlps;
  return c;
}

const RtlController::Pipe* RtlController::pipe_at(std::uint64_t offset, std::uint64_t& reg) const {
  if (offset < hw::reg::kPipeBase) return nullptr;
  const std::uint64_t index = (offset - hw::reg::kPipeBase) / hw::reg::kPipeStride;
  if (index >= hw::kNumPipelines) return nullptr;
  reg = (offset - hw::reg::kPipeBase) % hw::reg::kPipeStride;
  return &pipes_[index];
}

RtlController::Pipe* RtlController::pipe_at(std::uint64_t offset, std::uint64_t& reg) {
  return const_cast<Pipe*>(static_cast<const RtlController*>(this)->pipe_at(offset, reg));
}

std::uint64_t RtlController::read_register(std::uint64_t offset, unsigned width) const {
  using namespace hw::reg;
  const model::DeviceConfig& d = config_.device;
  auto r64 = [&](std::uint64_t base, std::uint64_t v) -> std::uint64_t {
    if (width == 8) return v;
    return offset == base ? (v & 0xFFFF'FFFFull) : (v >> 32);
  };
  if (offset == kId) return (std::uint64_t(hw::kPciDeviceSpyrePf) << 16) | hw::kPciVendorIbm;
  if (offset == kVersion) return hw::kContractVersion;
  if (offset == kCapabilities_64 || offset == kCapabilities_64 + 4) return r64(kCapabilities_64, d.capabilities);
  if (offset == kDepthCompute) return d.depth[0];
  if (offset == kDepthDmai) return d.depth[1];
  if (offset == kDepthDmao) return d.depth[2];
  if (offset == kMaxCbBytes) return d.max_cb_bytes;
  if (offset == kNumTags) return hw::kMaxTag;
  if (offset == kDeviceMemBytes_64 || offset == kDeviceMemBytes_64 + 4) return r64(kDeviceMemBytes_64, d.memory_bytes);
  if (offset == kDeviceMemUsable_64 || offset == kDeviceMemUsable_64 + 4) return r64(kDeviceMemUsable_64, d.usable_bytes);
  if (offset == kTimestampNs_64 || offset == kTimestampNs_64 + 4) return r64(kTimestampNs_64, to_ps(sc_time_stamp()) / 1000);
  if (offset == kControl) return control_;
  if (offset == kStatus) return (control_ & hw::kControlEnable) ? std::uint64_t{hw::kStatusReady} : std::uint64_t{0};
  if (offset == kFatalCause || offset == kFatalDetail_64 || offset == kFatalDetail_64 + 4) return 0;
  std::uint64_t reg = 0;
  const Pipe* p = pipe_at(offset, reg);
  if (!p) return 0;
  switch (reg) {
    case kCbRingBase_64: return r64(offset, p->cb_base);
    case kCbRingBase_64 + 4: return r64(offset - 4, p->cb_base);
    case kCbRingSize: return p->cb_size;
    case kCbPi: return p->cb_pi;
    case kCbCi: return p->cb_ci;
    case kRbRingBase_64: return r64(offset, p->rb_base);
    case kRbRingBase_64 + 4: return r64(offset - 4, p->rb_base);
    case kRbRingSize: return p->rb_size;
    case kRbPi: return rb_pi_visible(*p);
    case kRbCi: return p->rb_ci;
    case kIrqEnable: return p->irq_enable;
    case kIrqVector: return p->irq_vector;
    case kErrorStatus: return p->error_status;
    case kQueueControl: return p->queue_control;
    default: return 0;
  }
}

void RtlController::reset() {
  ++epoch_;
  ++counters_.resets;
  rc_.bump_epoch();
  for (Pipe& p : pipes_) {
    p.cb_base = p.rb_base = 0;
    p.cb_size = p.rb_size = p.cb_pi = p.cb_ci = p.rb_pi = p.rb_ci = 0;
    p.irq_enable = p.irq_vector = p.error_status = p.queue_control = 0;
    p.doorbells.clear();
    p.pruned.clear();
    p.retired = 0;
    p.retire_ps.clear();
    p.kick.notify(SC_ZERO_TIME);
  }
  retired_.notify(SC_ZERO_TIME);
}

void RtlController::write_register(std::uint64_t offset, std::uint64_t value, unsigned width) {
  using namespace hw::reg;
  if (offset == kControl) {
    if (value & hw::kControlReset) reset();
    control_ = static_cast<std::uint32_t>(value & hw::kControlEnable);
    for (Pipe& p : pipes_) p.kick.notify(SC_ZERO_TIME);
    return;
  }
  std::uint64_t reg = 0;
  if (offset < kPipeBase || offset >= kPipeBase + hw::kNumPipelines * kPipeStride) return;
  Pipe& p = *pipe_at(offset, reg);
  const auto v32 = static_cast<std::uint32_t>(value);
  switch (reg) {
    case kCbRingBase_64: case kCbRingBase_64 + 4:
      p.cb_base = merge_half(p.cb_base, reg - kCbRingBase_64, value, width);
      break;
    case kRbRingBase_64: case kRbRingBase_64 + 4:
      p.rb_base = merge_half(p.rb_base, reg - kRbRingBase_64, value, width);
      break;
    case kCbRingSize: p.cb_size = hw::is_power_of_two(v32) ? v32 : 0; break;
    case kRbRingSize: p.rb_size = hw::is_power_of_two(v32) ? v32 : 0; break;
    case kCbPi:
      if (v32 != p.cb_pi) {
        p.cb_pi = v32;
        p.doorbells.push_back(Doorbell{v32, ++doorbell_seq_});
      }
      break;
    case kRbCi: p.rb_ci = v32; break;
    case kIrqEnable: p.irq_enable = v32; break;
    case kIrqVector: p.irq_vector = v32; break;
    case kErrorStatus: if (v32) p.error_status = 0; break;
    case kQueueControl: p.queue_control = v32; break;
    default: return;
  }
  p.kick.notify(SC_ZERO_TIME);
}

}  // namespace spyre_dma::rtl
