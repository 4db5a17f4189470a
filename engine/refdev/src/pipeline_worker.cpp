// One pipeline's worker: fetch a CB, check and execute it, write its RB (see controller.hpp). The
// rules come from the device core: fetch_fault and rb_ring_fault (rings), DoorbellOrder (barrier),
// admit and check_work (CB admission), MisbehaveTrigger and misbehave_effect (misbehaviour).
#include <algorithm>
#include <cstring>
#include <limits>

#include "controller.hpp"
#include "spyre_dma/device_core/rings.hpp"
#include "spyre_dma/deadline.hpp"

namespace spyre_dma::refdev::detail {

using device_core::CbOutcome;

std::optional<std::uint32_t> Controller::fetch_limit(hw::Pipeline p) const noexcept {
  const std::optional<std::uint32_t> cb_pi = device_core::fetch_limit(regs_, p);
  if (!cb_pi || resetting_.load() || fatal_.load() || paused_.load() || hang_.load() || stopped_.load() ||
      workers_[static_cast<unsigned>(p)].broken.load()) {
    return std::nullopt;
  }
  return cb_pi;
}

bool Controller::has_work(hw::Pipeline p) const noexcept {
  const std::optional<std::uint32_t> cb_pi = fetch_limit(p);
  return cb_pi && *cb_pi != index(Reg::kCbCi, p);
}

void Controller::wait_for_work(hw::Pipeline p) {
  if (shutdown_.load() || has_work(p)) return;  // the common case under load: no clock read
  const auto spin_until = std::chrono::steady_clock::now() + config_.idle_spin;
  do {
    if (shutdown_.load() || has_work(p)) return;
    // Yield, not pause: this models silicon, which takes no host CPU; on a host with one core to
    // spare a paused spin would keep the engine thread it waits for off that core.
    std::this_thread::yield();
  } while (std::chrono::steady_clock::now() < spin_until);
  PipelineWorker& w = worker(p);
  std::unique_lock<std::mutex> lock(w.mutex);
  w.sleeping.store(true);
  while (!shutdown_.load() && !has_work(p)) w.cv.wait_for(lock, std::chrono::milliseconds(100));
  w.sleeping.store(false);
}

void Controller::worker_main(hw::Pipeline p) {
  PipelineWorker& w = worker(p);
  for (;;) {
    wait_for_work(p);
    if (shutdown_.load()) return;
    // Announce busy, then read the epoch, then check for work: a reset that raced in either sees
    // busy (and waits) or is seen here (has_work fails), and the epoch read is the old one.
    w.busy.store(true);
    const std::uint64_t epoch = epoch_.load();
    const std::optional<std::uint32_t> cb_pi = fetch_limit(p);
    if (cb_pi && *cb_pi != index(Reg::kCbCi, p) && !shutdown_.load()) {
      try {
        process_one(p, epoch, *cb_pi);
      } catch (const std::exception&) {  // nothing else should throw; never let it end the thread
        raise_fatal(hw::ErrorKind::kDeviceMemoryFault, 0);
      }
    }
    w.busy.store(false);
  }
}

void Controller::queue_fault(hw::Pipeline p, Reg at_fault) {
  PipelineWorker& w = worker(p);
  // Counted and located before the status is published: whoever sees the status (a driver, a
  // test) then sees the count and the faulting register too.
  w.fault_register.store(device_core::spec(at_fault).offset);
  w.queue_faults.fetch_add(1, std::memory_order_relaxed);
  regs_.set(Reg::kErrorStatus, p, device_core::kQueueFaultStatus);
}

bool Controller::inject_error() noexcept {
  const std::uint32_t n = error_every_n_.load(std::memory_order_relaxed);
  if (n == 0) return false;
  return (error_counter_.fetch_add(1, std::memory_order_relaxed) + 1) % n == 0;
}

bool Controller::wait_barrier(hw::Pipeline p, std::uint32_t index_at, std::uint64_t epoch) {
  const device_core::DoorbellOrder::Targets targets = doorbells_.barrier_targets(p, index_at);
  return wait_progress(epoch, [&] {
    for (unsigned q = 0; q < hw::kNumPipelines; ++q) {
      const auto pq = static_cast<hw::Pipeline>(q);
      if (targets[q] && !device_core::index_reached(index(Reg::kRbPi, pq, std::memory_order_acquire), *targets[q])) {
        return false;
      }
    }
    return true;
  });
}

void Controller::process_one(hw::Pipeline p, std::uint64_t epoch, std::uint32_t cb_pi) {
  const std::uint32_t ci = index(Reg::kCbCi, p, std::memory_order_relaxed);  // only this worker writes it
  device_core::RingState ring = device_core::ring_state(regs_, p);
  ring.cb_pi = cb_pi;
  ring.cb_ci = ci;
  // Ring rules first: a fault here consumes nothing and writes no RB.
  if (const std::optional<Reg> fault = device_core::fetch_fault(ring, depth(p))) return queue_fault(p, *fault);

  hw::CbBytes raw;
  {
    Iommu::Window slot = iommu_.translate(device_core::cb_slot_iova(ring.cb_base, ci, ring.cb_size), hw::kCbBytes,
                                          /*device_writes=*/false);
    if (!slot) return queue_fault(p, Reg::kCbRingBase);
    std::memcpy(raw.data(), slot.host(), hw::kCbBytes);
  }
  reg(Reg::kCbCi, p).store(ci + 1, std::memory_order_release);  // the slot is free for the engine again

  const device_core::CbControl ctrl = device_core::control_bits(raw.data());
  hw::ResponseBlock rb;
  rb.tag = ctrl.tag;
  rb.locator = p;
  if (ctrl.barrier && !wait_barrier(p, ci, epoch)) return;  // reset: no RB
  rb.start_ns = rb_timestamp();

  const bool misbehave = misbehave_.cb_started();
  const device_core::Misbehave armed = misbehave ? misbehave_.armed() : device_core::Misbehave{};
  const bool rogue = misbehave && armed.kind == device_core::MisbehaveKind::kRogueDma;
  hw::CbDecodeResult decoded = hw::decode_cb(raw.data());
  // rogue_dma: the device goes where it was not sent; only its IOMMU and XLAT checks stand in the way.
  if (rogue && !decoded.error) device_core::retarget(decoded.cb, armed);
  CbOutcome out;
  if (std::optional<CbOutcome> rejected = device_core::admit(decoded, p, config_.max_cb_bytes)) {
    out = *rejected;
  } else if (device_core::CheckedCb checked = device_core::check_work(decoded.cb, memory_layout_, &iommu_);
             checked.rejected) {
    out = *checked.rejected;
  } else if (inject_error()) {
    injected_errors_.fetch_add(1, std::memory_order_relaxed);
    out = CbOutcome::fail(hw::ErrorKind::kPcieError, hw::CbField::kNone, device_core::host_iova(decoded.cb));
  } else {
    try {
      out = execute(checked.work, memory_);
    } catch (const std::exception&) {  // a device page could not be allocated
      return raise_fatal(hw::ErrorKind::kDeviceMemoryFault, checked.work.device_phys);
    }
    if (config_.honour_compute_time && checked.work.kind == device_core::CbWork::Kind::kCompute) {
      if (!sleep_interruptible(epoch, saturating_ns(checked.work.compute_ns))) return;  // reset: no RB
    }
  }
  rb.status = out.status;
  rb.error = out.error;
  rb.field = out.field;
  rb.detail = out.detail;
  rb.bytes = out.bytes;
  if (misbehave && !rogue) return misbehave_retire(p, epoch, rb, ctrl.interrupt);
  worker(p).last_tag = rb.tag;
  retire(p, epoch, rb, ctrl.interrupt);
}

void Controller::misbehave_retire(hw::Pipeline p, std::uint64_t epoch, const hw::ResponseBlock& rb, bool irq_bit) {
  PipelineWorker& w = worker(p);
  const device_core::MisbehaveEffect e = device_core::misbehave_effect(misbehave_.armed().kind, rb, w.last_tag);
  for (unsigned i = 0; i < e.rbs; ++i) retire(p, epoch, e.rb, irq_bit, e.garbage_status);
  if (e.stray_to) {
    w.last_tag = rb.tag;
    hw::ResponseBlock stray = e.rb;
    stray.locator = *e.stray_to;
    write_stray_rb(*e.stray_to, stray, irq_bit);
  }
  if (e.rb_pi_beyond_ring) {
    std::lock_guard<std::mutex> lock(w.rb_mutex);
    w.broken.store(true);
    reg(Reg::kRbPi, p).store(device_core::rb_pi_beyond_ring(index(Reg::kRbPi, p), regs_.get(Reg::kRbRingSize, p)),
                             std::memory_order_release);
  }
  if (e.cb_ci_backwards) {
    w.broken.store(true);
    reg(Reg::kCbCi, p).store(device_core::cb_ci_backwards(index(Reg::kRbPi, p)), std::memory_order_release);
  }
  if (e.stop_answering) stopped_.store(true);
}

void Controller::write_stray_rb(hw::Pipeline q, hw::ResponseBlock rb, bool irq_bit) {
  std::lock_guard<std::mutex> lock(worker(q).rb_mutex);
  const std::uint64_t size = regs_.get(Reg::kRbRingSize, q);
  const std::uint64_t base = regs_.get(Reg::kRbRingBase, q);
  const std::uint32_t at = index(Reg::kRbPi, q, std::memory_order_relaxed);
  if (device_core::rb_ring_fault(base, size, depth(q)) || !device_core::rb_room(at, index(Reg::kRbCi, q), size)) {
    return;  // nowhere to put it: the misbehaviour is lost, as a real stray write could be
  }
  Iommu::Window slot = iommu_.translate(device_core::rb_slot_iova(base, at, size), hw::kRbBytes, /*device_writes=*/true);
  if (!slot) return;
  device_core::publish_rb(slot.host(), device_core::rb_at_index(rb, at, size));
  slot.release();
  reg(Reg::kRbPi, q).store(at + 1, std::memory_order_release);
  if ((regs_.get(Reg::kIrqEnable, q) & 1u) != 0 || irq_bit) raise_interrupt(q);
}

void Controller::retire(hw::Pipeline p, std::uint64_t epoch, hw::ResponseBlock rb, bool irq_bit,
                        bool garbage_status) {
  PipelineWorker& w = worker(p);
  for (;;) {
    // Room in the RB ring (the engine returns slots through RB_CI), not hung, no queue fault.
    const bool ready = wait_progress(epoch, [&] {
      if (hang_.load() || stopped_.load() || regs_.get(Reg::kErrorStatus, p) != 0) return false;
      const std::uint64_t size = regs_.get(Reg::kRbRingSize, p);
      return !device_core::valid_ring_size(size, depth(p)) ||
             device_core::rb_room(index(Reg::kRbPi, p, std::memory_order_relaxed), index(Reg::kRbCi, p), size);
    });
    if (!ready) return;  // reset or shutdown: the RB is dropped
    const std::uint64_t size = regs_.get(Reg::kRbRingSize, p);
    const std::uint64_t base = regs_.get(Reg::kRbRingBase, p);
    if (const std::optional<Reg> fault = device_core::rb_ring_fault(base, size, depth(p))) {
      queue_fault(p, *fault);  // held until ERROR_STATUS is cleared, then retried
      continue;
    }
    // Under the ring's lock: a stray RB from another pipeline's worker (wrong_queue) may have
    // taken the slot since the wait. The hang is checked again under it, because set_faults()
    // passes through this lock: no RB is published once set_faults({hang}) has returned.
    std::unique_lock<std::mutex> ring_lock(w.rb_mutex);
    if (hang_.load() || stopped_.load()) continue;
    const std::uint32_t at = index(Reg::kRbPi, p, std::memory_order_relaxed);
    if (!device_core::rb_room(at, index(Reg::kRbCi, p), size)) continue;
    rb.end_ns = rb_timestamp();
    hw::RbBytes bytes = device_core::rb_at_index(rb, at, size);
    if (garbage_status) device_core::patch_garbage_status(bytes);
    Iommu::Window slot = iommu_.translate(device_core::rb_slot_iova(base, at, size), hw::kRbBytes, /*device_writes=*/true);
    if (!slot) {
      queue_fault(p, Reg::kRbRingBase);  // held until ERROR_STATUS is cleared, then retried
      continue;
    }
    // Counted before the RB is visible: whoever has seen the RB sees it in counters().
    w.cbs.fetch_add(1, std::memory_order_relaxed);
    if (rb.status == hw::RbStatus::kGood) {
      w.bytes.fetch_add(rb.bytes, std::memory_order_relaxed);
    } else {
      w.error_rbs.fetch_add(1, std::memory_order_relaxed);
    }
    device_core::publish_rb(slot.host(), bytes);
    slot.release();
    reg(Reg::kRbPi, p).store(at + 1, std::memory_order_release);
    ring_lock.unlock();

    if ((regs_.get(Reg::kIrqEnable, p) & 1u) != 0 || irq_bit) raise_interrupt(p);
    notify_progress();  // barrier waiters on other pipelines
    return;
  }
}

}  // namespace spyre_dma::refdev::detail
