// The misbehaviour a device commits on purpose (see misbehave.hpp).
#include "spyre_dma/device_core/misbehave.hpp"

namespace spyre_dma::device_core {

void MisbehaveTrigger::arm(const Misbehave& m) noexcept {
  kind_.store(MisbehaveKind::kNone);  // off while the rest changes
  at_.store(m.at_cb);
  rogue_iova_.store(m.rogue_iova);
  rogue_offset_.store(m.rogue_device_offset);
  started_.store(0);
  done_.store(false);
  kind_.store(m.kind);
}

Misbehave MisbehaveTrigger::armed() const noexcept {
  Misbehave m;
  m.kind = kind_.load();
  m.at_cb = at_.load();
  m.rogue_iova = rogue_iova_.load();
  m.rogue_device_offset = rogue_offset_.load();
  return m;
}

bool MisbehaveTrigger::cb_started() noexcept {
  if (kind_.load(std::memory_order_relaxed) == MisbehaveKind::kNone || done_.load(std::memory_order_relaxed)) {
    return false;
  }
  const std::uint64_t at = at_.load();
  if (at == 0 || started_.fetch_add(1) + 1 != at) return false;
  bool expected = false;
  if (!done_.compare_exchange_strong(expected, true)) return false;
  fired_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void retarget(hw::ControlBlock& cb, const Misbehave& m) noexcept {
  const std::uint64_t shift = m.rogue_device_offset / hw::kFlitBytes;
  for (hw::DmaSection* s : {&cb.dmi, &cb.dmo}) {
    if (s->type == hw::DmaType::kSkip) continue;
    if (m.rogue_iova != 0 && s->type == hw::DmaType::kImmediate) s->host_iova_flits = m.rogue_iova / hw::kFlitBytes;
    if (shift != 0) s->device.flit_offset = static_cast<std::uint32_t>(s->device.flit_offset + shift);
  }
}

MisbehaveEffect misbehave_effect(MisbehaveKind kind, const hw::ResponseBlock& rb, std::uint32_t last_tag) noexcept {
  MisbehaveEffect e;
  e.rb = rb;
  switch (kind) {
    case MisbehaveKind::kUnknownTag: e.rb.tag = shifted_tag(rb.tag); break;
    case MisbehaveKind::kDuplicateRb: e.rbs = 2; break;
    case MisbehaveKind::kStaleTag: e.rb.tag = last_tag != 0 ? last_tag : shifted_tag(rb.tag); break;
    case MisbehaveKind::kGarbageStatus: e.garbage_status = true; break;
    case MisbehaveKind::kWrongQueue:
      e.stray_to = rb.locator == hw::Pipeline::kCompute ? hw::Pipeline::kDmai : hw::Pipeline::kCompute;
      break;
    case MisbehaveKind::kRbPiBeyondRing:
      e.rbs = 0;
      e.rb_pi_beyond_ring = true;
      break;
    case MisbehaveKind::kCbCiBackwards:
      e.rbs = 0;
      e.cb_ci_backwards = true;
      break;
    case MisbehaveKind::kStopAnswering:
      e.rbs = 0;
      e.stop_answering = true;
      break;
    case MisbehaveKind::kDropRb: e.rbs = 0; break;
    case MisbehaveKind::kNone:
    case MisbehaveKind::kRogueDma: break;
  }
  return e;
}

}  // namespace spyre_dma::device_core
