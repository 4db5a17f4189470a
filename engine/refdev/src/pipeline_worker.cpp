// One pipeline's worker: fetch a CB, check and execute it, write its RB (see device_core.hpp).
#include <algorithm>
#include <cstring>
#include <limits>

#include "device_core.hpp"

namespace spyre_dma::refdev::detail {
namespace {

namespace reg = hw::reg;
constexpr std::uint64_t kRingAlign = hw::kRingAlignment;

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

bool valid_ring_size(std::uint32_t size, std::uint32_t depth) noexcept {
  return hw::is_power_of_two(size) && size <= depth;
}

// Writes an RB so that a reader polling word 0 (tag, status, phase) with acquire semantics sees
// the whole block: words 1..7 first, then word 0 with a release store.
void publish_rb(std::uint8_t* slot, const hw::RbBytes& rb) noexcept {
  std::memcpy(slot + 8, rb.data() + 8, hw::kRbBytes - 8);
  std::uint64_t word0 = 0;
  std::memcpy(&word0, rb.data(), sizeof word0);  // host byte order of the little-endian bytes
  // Aligned: the ring base IOVA is 4 KiB aligned and an IOVA keeps its host page offset.
  __atomic_store_n(reinterpret_cast<std::uint64_t*>(slot), word0, __ATOMIC_RELEASE);
}

std::uint64_t section_va(const hw::ControlBlock& cb) noexcept {
  return encode_va(cb.dmi.type != hw::DmaType::kSkip ? cb.dmi.device : cb.dmo.device);
}

std::uint64_t section_iova(const hw::ControlBlock& cb) noexcept {
  if (cb.dmi.type == hw::DmaType::kImmediate) return cb.dmi.host_iova_flits * hw::kFlitBytes;
  if (cb.dmo.type == hw::DmaType::kImmediate) return cb.dmo.host_iova_flits * hw::kFlitBytes;
  return 0;
}

}  // namespace

bool DeviceCore::can_fetch(hw::Pipeline p) const noexcept {
  const PipelineRegisters& r = pipe(p);
  return (control_.load() & hw::kControlEnable) != 0 && !resetting_.load() && !fatal_.load() &&
         !paused_.load() && !hang_.load() && !stopped_.load() && !workers_[static_cast<unsigned>(p)].broken.load() &&
         (r.queue_control.load() & hw::kQueueEnable) != 0 &&
         r.error_status.load() == 0;
}

bool DeviceCore::has_work(hw::Pipeline p) const noexcept {
  const PipelineRegisters& r = pipe(p);
  return r.cb_pi.load() != r.cb_ci.load() && can_fetch(p);
}

void DeviceCore::wait_for_work(hw::Pipeline p) {
  if (shutdown_.load() || has_work(p)) return;  // the common case under load: no clock read
  const auto spin_until = std::chrono::steady_clock::now() + config_.idle_spin;
  do {
    if (shutdown_.load() || has_work(p)) return;
    for (int i = 0; i < 16; ++i) cpu_relax();
  } while (std::chrono::steady_clock::now() < spin_until);
  PipelineWorker& w = worker(p);
  std::unique_lock<std::mutex> lock(w.mutex);
  w.sleeping.store(true);
  while (!shutdown_.load() && !has_work(p)) w.cv.wait_for(lock, std::chrono::milliseconds(100));
  w.sleeping.store(false);
}

void DeviceCore::worker_main(hw::Pipeline p) {
  PipelineWorker& w = worker(p);
  for (;;) {
    wait_for_work(p);
    if (shutdown_.load()) return;
    // Announce busy, then read the epoch, then check for work: a reset that raced in either sees
    // busy (and waits) or is seen here (has_work fails), and the epoch read is the old one.
    w.busy.store(true);
    const std::uint64_t epoch = epoch_.load();
    if (has_work(p) && !shutdown_.load()) {
      try {
        process_one(p, epoch);
      } catch (const std::exception&) {  // nothing else should throw; never let it end the thread
        raise_fatal(hw::ErrorKind::kDeviceMemoryFault, 0);
      }
    }
    w.busy.store(false);
  }
}

void DeviceCore::queue_fault(hw::Pipeline p, std::uint64_t register_offset) {
  PipelineRegisters& r = pipe(p);
  r.fault_register.store(register_offset);
  r.error_status.store(static_cast<std::uint32_t>(hw::ErrorKind::kQueueFault));
  worker(p).queue_faults.fetch_add(1, std::memory_order_relaxed);
}

bool DeviceCore::inject_error() noexcept {
  const std::uint32_t n = error_every_n_.load(std::memory_order_relaxed);
  if (n == 0) return false;
  return (error_counter_.fetch_add(1, std::memory_order_relaxed) + 1) % n == 0;
}

bool DeviceCore::wait_barrier(hw::Pipeline p, std::uint32_t index, std::uint64_t epoch) {
  const DoorbellOrder::Targets targets = doorbells_.barrier_targets(p, index);
  return wait_progress(epoch, [&] {
    for (unsigned q = 0; q < hw::kNumPipelines; ++q) {
      if (targets[q] && !index_reached(regs_[q].rb_pi.load(std::memory_order_acquire), *targets[q])) {
        return false;
      }
    }
    return true;
  });
}

void DeviceCore::process_one(hw::Pipeline p, std::uint64_t epoch) {
  PipelineRegisters& r = pipe(p);
  const std::uint32_t depth = config_.depth[static_cast<unsigned>(p)];
  const std::uint32_t ci = r.cb_ci.load(std::memory_order_relaxed);  // only this worker writes it
  const std::uint32_t pi = r.cb_pi.load(std::memory_order_acquire);
  const std::uint32_t size = r.cb_size.load();
  const std::uint64_t base = r.cb_base.load();

  // Ring rules first: a fault here consumes nothing and writes no RB.
  if (!valid_ring_size(size, depth)) return queue_fault(p, reg::kCbRingSize);
  if (base % kRingAlign != 0) return queue_fault(p, reg::kCbRingBase_64);
  if (!valid_ring_size(r.rb_size.load(), depth)) return queue_fault(p, reg::kRbRingSize);
  if (r.rb_base.load() % kRingAlign != 0) return queue_fault(p, reg::kRbRingBase_64);
  if (pi - ci > size) return queue_fault(p, reg::kCbPi);  // overrun: the engine wrote too far

  hw::CbBytes raw;
  {
    Iommu::Window slot = iommu_.translate(base + std::uint64_t(ci & (size - 1)) * hw::kCbBytes,
                                          hw::kCbBytes, /*device_writes=*/false);
    if (!slot) return queue_fault(p, reg::kCbRingBase_64);
    std::memcpy(raw.data(), slot.host(), hw::kCbBytes);
  }
  r.cb_ci.store(ci + 1, std::memory_order_release);  // the slot is free for the engine again

  // Tag, barrier and interrupt come from the raw CTRL word, so that even a malformed CB is
  // answered under its own tag and honours its barrier.
  const std::uint64_t ctrl = hw::load_le64(raw.data() + hw::kCtrlOffset);
  const bool barrier = (ctrl >> 32) & 1u;
  const bool irq_bit = (ctrl >> 33) & 1u;
  hw::ResponseBlock rb;
  rb.tag = static_cast<std::uint32_t>((ctrl >> 8) & 0xFF'FFFFu);
  rb.locator = p;
  if (barrier && !wait_barrier(p, ci, epoch)) return;  // reset: no RB
  rb.start_ns = rb_timestamp();

  const bool misbehave = misbehave_now();
  hw::CbDecodeResult decoded = hw::decode_cb(raw.data());
  if (misbehave && misbehave_kind_.load() == MisbehaveKind::kRogueDma && !decoded.error) {
    // The device goes where it was not sent: only its IOMMU and XLAT checks stand in the way.
    hw::ControlBlock& cb = decoded.cb;
    const std::uint64_t iova = rogue_iova_.load();
    const std::uint64_t shift = rogue_device_offset_.load() / hw::kFlitBytes;
    for (hw::DmaSection* s : {&cb.dmi, &cb.dmo}) {
      if (s->type == hw::DmaType::kSkip) continue;
      if (iova != 0 && s->type == hw::DmaType::kImmediate) s->host_iova_flits = iova / hw::kFlitBytes;
      if (shift != 0) s->device.flit_offset = static_cast<std::uint32_t>(s->device.flit_offset + shift);
    }
  }
  Outcome out;
  if (std::optional<Outcome> rejected = executor_.admit(decoded, p)) {
    out = *rejected;
  } else if (inject_error()) {
    injected_errors_.fetch_add(1, std::memory_order_relaxed);
    out = Outcome::fail(hw::ErrorKind::kPcieError, hw::CbField::kNone, section_iova(decoded.cb));
  } else {
    try {
      out = executor_.execute(decoded.cb);
    } catch (const std::exception&) {  // a device page could not be allocated
      return raise_fatal(hw::ErrorKind::kDeviceMemoryFault, section_va(decoded.cb));
    }
    if (config_.honour_compute_time && decoded.cb.cmpt.type == hw::ComputeType::kTimed) {
      constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
      const auto ns = std::chrono::nanoseconds(static_cast<std::int64_t>(std::min(decoded.cb.cmpt.duration_ns, kMax)));
      if (!sleep_interruptible(epoch, ns)) return;  // reset: no RB
    }
  }
  rb.status = out.status;
  rb.error = out.error;
  rb.field = out.field;
  rb.detail = out.detail;
  rb.bytes = out.bytes;
  if (misbehave && misbehave_kind_.load() != MisbehaveKind::kRogueDma) return misbehave_retire(p, epoch, rb, irq_bit);
  worker(p).last_tag = rb.tag;
  retire(p, epoch, rb, irq_bit);
}

bool DeviceCore::misbehave_now() noexcept {
  if (misbehave_kind_.load(std::memory_order_relaxed) == MisbehaveKind::kNone) return false;
  const std::uint64_t n = misbehave_counter_.fetch_add(1) + 1;
  if (n != misbehave_at_.load()) return false;
  bool expected = false;
  if (!misbehave_fired_.compare_exchange_strong(expected, true)) return false;
  misbehaviours_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void DeviceCore::misbehave_retire(hw::Pipeline p, std::uint64_t epoch, hw::ResponseBlock rb, bool irq_bit) {
  PipelineRegisters& r = pipe(p);
  PipelineWorker& w = worker(p);
  switch (misbehave_kind_.load()) {
    case MisbehaveKind::kUnknownTag:
      rb.tag = shifted_tag(rb.tag);
      return retire(p, epoch, rb, irq_bit);
    case MisbehaveKind::kDuplicateRb:
      retire(p, epoch, rb, irq_bit);
      return retire(p, epoch, rb, irq_bit);
    case MisbehaveKind::kStaleTag:
      rb.tag = w.last_tag != 0 ? w.last_tag : shifted_tag(rb.tag);
      return retire(p, epoch, rb, irq_bit);
    case MisbehaveKind::kGarbageStatus:
      return retire(p, epoch, rb, irq_bit, /*garbage_status=*/true);
    case MisbehaveKind::kWrongQueue: {
      w.last_tag = rb.tag;
      retire(p, epoch, rb, irq_bit);
      const hw::Pipeline q = p == hw::Pipeline::kCompute ? hw::Pipeline::kDmai : hw::Pipeline::kCompute;
      rb.locator = q;
      return write_stray_rb(q, rb);
    }
    case MisbehaveKind::kRbPiBeyondRing: {
      std::lock_guard<std::mutex> lock(w.rb_mutex);
      w.broken.store(true);
      r.rb_pi.store(r.rb_pi.load() + 2 * r.rb_size.load() + 1, std::memory_order_release);
      return;
    }
    case MisbehaveKind::kCbCiBackwards:
      w.broken.store(true);
      r.cb_ci.store(r.rb_pi.load() - 1, std::memory_order_release);
      return;
    case MisbehaveKind::kStopAnswering:
      stopped_.store(true);
      return;
    case MisbehaveKind::kNone:
    case MisbehaveKind::kRogueDma:
      break;
  }
  retire(p, epoch, rb, irq_bit);
}

void DeviceCore::write_stray_rb(hw::Pipeline q, hw::ResponseBlock rb) {
  PipelineRegisters& r = pipe(q);
  std::lock_guard<std::mutex> lock(worker(q).rb_mutex);
  const std::uint32_t size = r.rb_size.load();
  const std::uint64_t base = r.rb_base.load();
  const std::uint32_t index = r.rb_pi.load(std::memory_order_relaxed);
  if (!valid_ring_size(size, config_.depth[static_cast<unsigned>(q)]) || base % kRingAlign != 0 ||
      hw::ring_full(index, r.rb_ci.load(), size)) {
    return;  // nowhere to put it: the misbehaviour is lost, as a real stray write could be
  }
  rb.phase = hw::expected_phase(index, size);
  const hw::RbBytes bytes = hw::encode(rb);
  Iommu::Window slot = iommu_.translate(base + std::uint64_t(index & (size - 1)) * hw::kRbBytes,
                                        hw::kRbBytes, /*device_writes=*/true);
  if (!slot) return;
  publish_rb(slot.host(), bytes);
  slot.release();
  r.rb_pi.store(index + 1, std::memory_order_release);
  raise_interrupt(q);
}

void DeviceCore::retire(hw::Pipeline p, std::uint64_t epoch, hw::ResponseBlock rb, bool irq_bit,
                        bool garbage_status) {
  PipelineRegisters& r = pipe(p);
  PipelineWorker& w = worker(p);
  const std::uint32_t depth = config_.depth[static_cast<unsigned>(p)];
  for (;;) {
    // Room in the RB ring (the engine returns slots through RB_CI), not hung, no queue fault.
    const bool ready = wait_progress(epoch, [&] {
      if (hang_.load() || stopped_.load() || r.error_status.load() != 0) return false;
      const std::uint32_t size = r.rb_size.load();
      return !valid_ring_size(size, depth) || !hw::ring_full(r.rb_pi.load(std::memory_order_relaxed), r.rb_ci.load(), size);
    });
    if (!ready) return;  // reset or shutdown: the RB is dropped
    const std::uint32_t size = r.rb_size.load();
    const std::uint64_t base = r.rb_base.load();
    if (!valid_ring_size(size, depth)) {
      queue_fault(p, reg::kRbRingSize);
      continue;
    }
    if (base % kRingAlign != 0) {
      queue_fault(p, reg::kRbRingBase_64);
      continue;
    }
    // Under the ring's lock: a stray RB from another pipeline's worker (wrong_queue) may have
    // taken the slot since the wait. The hang is checked again under it, because set_faults()
    // passes through this lock: no RB is published once set_faults({hang}) has returned.
    std::unique_lock<std::mutex> ring_lock(w.rb_mutex);
    if (hang_.load() || stopped_.load()) continue;
    const std::uint32_t index = r.rb_pi.load(std::memory_order_relaxed);
    if (hw::ring_full(index, r.rb_ci.load(), size)) continue;
    rb.phase = hw::expected_phase(index, size);
    rb.end_ns = rb_timestamp();
    hw::RbBytes bytes = hw::encode(rb);
    if (garbage_status) bytes[3] = static_cast<std::uint8_t>((bytes[3] & 0xF0u) | kGarbageRbStatus);
    Iommu::Window slot = iommu_.translate(base + std::uint64_t(index & (size - 1)) * hw::kRbBytes,
                                          hw::kRbBytes, /*device_writes=*/true);
    if (!slot) {
      queue_fault(p, reg::kRbRingBase_64);  // held until ERROR_STATUS is cleared, then retried
      continue;
    }
    // Counted before the RB is visible: whoever has seen the RB sees it in counters().
    w.cbs.fetch_add(1, std::memory_order_relaxed);
    if (rb.status == hw::RbStatus::kGood) {
      w.bytes.fetch_add(rb.bytes, std::memory_order_relaxed);
    } else {
      w.error_rbs.fetch_add(1, std::memory_order_relaxed);
    }
    publish_rb(slot.host(), bytes);
    slot.release();
    r.rb_pi.store(index + 1, std::memory_order_release);
    ring_lock.unlock();

    if ((r.irq_enable.load() & 1u) != 0 || irq_bit) raise_interrupt(p);
    notify_progress();  // barrier waiters on other pipelines
    return;
  }
}

}  // namespace spyre_dma::refdev::detail
