// One pipeline's worker: fetch CBs, plan and submit them to the executor's lane, retire them in
// index order with one RB each (see copy_engine_device.hpp for the rules). The rules come from the
// device core: fetch_fault and rb_ring_fault (rings), DoorbellOrder (barrier), admission
// (cb_work.cpp), MisbehaveTrigger and misbehave_effect (misbehaviour).
#include <cstring>

#include "controller.hpp"
#include "spyre_dma/device_core/rings.hpp"
#include "spyre_dma/deadline.hpp"

namespace spyre_dma::cuda::detail {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

std::optional<std::uint32_t> Controller::fetch_limit(unsigned p) const noexcept {
  const std::optional<std::uint32_t> cb_pi = device_core::fetch_limit(regs_, pipe(p));
  if (!cb_pi || resetting_.load() || fatal_.load() || stopped_.load() || workers_[p].broken.load()) return std::nullopt;
  return cb_pi;
}

void Controller::queue_fault(unsigned p) { regs_.set(Reg::kErrorStatus, pipe(p), device_core::kQueueFaultStatus); }

// Copies the CB at CB_CI out of the ring and queues it, decoded, behind the worker's others.
// `cb_pi` is fetch_limit()'s reading: nothing rung after it is fetched.
bool Controller::fetch_one(unsigned p, std::uint32_t cb_pi) {
  device_core::RingState ring = device_core::ring_state(regs_, pipe(p));
  ring.cb_ci = index(Reg::kCbCi, p, std::memory_order_relaxed);
  ring.cb_pi = cb_pi;
  if (ring.cb_pi == ring.cb_ci) return false;
  // Ring rules first: a fault consumes nothing and writes no RB (the tag is unknown).
  if (device_core::fetch_fault(ring, config_.depth[p])) {
    queue_fault(p);
    return false;
  }
  hw::CbBytes raw;
  {
    device_core::Iommu::Window slot = iommu_.translate(device_core::cb_slot_iova(ring.cb_base, ring.cb_ci, ring.cb_size),
                                                       hw::kCbBytes, /*device_writes=*/false);
    if (!slot) {
      queue_fault(p);
      return false;
    }
    std::memcpy(raw.data(), slot.host(), hw::kCbBytes);
  }
  regs_.cell(Reg::kCbCi, pipe(p)).store(ring.cb_ci + 1, std::memory_order_release);  // the slot may be reused at once

  const device_core::CbControl ctrl = device_core::control_bits(raw.data());
  Inflight f;
  f.index = ring.cb_ci;
  f.rb.locator = pipe(p);
  f.rb.tag = ctrl.tag;
  f.irq = ctrl.interrupt;
  f.barrier = ctrl.barrier;
  f.decoded = hw::decode_cb(raw.data());
  workers_[p].inflight.push_back(std::move(f));
  return true;
}

bool Controller::barrier_clear(unsigned p, const Inflight& f) {
  if (&workers_[p].inflight.front() != &f) return false;  // earlier CBs of this pipeline first
  const device_core::DoorbellOrder::Targets targets = doorbells_.barrier_targets(pipe(p), f.index);
  for (unsigned q = 0; q < hw::kNumPipelines; ++q) {
    if (targets[q] && !device_core::index_reached(index(Reg::kRbPi, q, std::memory_order_acquire), *targets[q])) {
      return false;
    }
  }
  return true;
}

// Starts a fetched CB once its barrier allows: admission, then the executor (or its compute wait).
// A misbehaviour counts the CB here, as the other devices count a CB they start.
bool Controller::start(unsigned p, Inflight& f) {
  if (f.barrier && !barrier_clear(p, f)) return false;
  f.submitted = true;
  f.deadline = deadline_after<Clock>(Clock::now(), config_.completion_timeout);
  f.misbehave = misbehave_.cb_started();
  if (f.misbehave && misbehave_.armed().kind == device_core::MisbehaveKind::kRogueDma && !f.decoded.error) {
    device_core::retarget(f.decoded.cb, misbehave_.armed());  // only the checks stand in its way
  }
  f.plan = plan_cb(f.decoded, pipe(p), config_.max_cb_bytes, region_, iommu_);
  if (f.plan.rejected) {  // answered in its turn with what admission found; nothing runs
    const device_core::CbOutcome& o = *f.plan.rejected;
    f.rb.status = o.status;
    f.rb.error = o.error;
    f.rb.field = o.field;
    f.rb.detail = o.detail;
    f.rb.start_ns = f.rb.end_ns = executor_->now_ns();
    f.done = true;
    return true;
  }
  if (f.plan.compute) {
    f.compute_start_ns = executor_->now_ns();
    return true;
  }
  try {
    f.ticket = executor_->submit(p, f.plan.command);
  } catch (const std::exception&) {  // an executor that cannot even queue: the CB fails alone
    const std::uint64_t now = executor_->now_ns();
    f.rb.status = hw::RbStatus::kError;
    f.rb.error = hw::ErrorKind::kPcieError;
    f.rb.start_ns = f.rb.end_ns = now;
    f.done = true;
    f.plan.window.release();
  }
  return true;
}

// Polls the oldest CB; writes its RB when it is done. True when it retired.
bool Controller::complete_head(unsigned p) {
  auto& q = workers_[p].inflight;
  if (q.empty()) return false;
  Inflight& f = q.front();
  if (!f.submitted) return false;
  if (!f.done) {
    if (f.plan.compute) {
      const std::uint64_t now = executor_->now_ns();
      if (now - f.compute_start_ns < f.plan.compute_ns) {
        if (Clock::now() < f.deadline) return false;
      }
      f.rb.start_ns = f.compute_start_ns;
      f.rb.end_ns = now;
      f.done = true;
    } else if (std::optional<CopyCompletion> c = executor_->poll(p, f.ticket)) {
      f.plan.window.release();  // the copy has ended: unmap may proceed
      f.rb.start_ns = c->start_ns;
      f.rb.end_ns = c->end_ns;
      if (c->error == hw::ErrorKind::kNone) {
        f.rb.bytes = f.plan.command.bytes;
      } else {
        f.rb.status = hw::RbStatus::kError;
        f.rb.error = c->error;
        f.rb.detail = c->detail;
      }
      f.done = true;
    } else if (Clock::now() >= f.deadline) {
      // The copy engine holds the copy: the pipeline stops until reset, which drains the lane.
      // The window stays open so that the host memory is not unmapped under the copy.
      f.rb.status = hw::RbStatus::kError;
      f.rb.error = hw::ErrorKind::kCompletionTimeout;
      f.rb.detail = f.plan.command.bytes;
      f.rb.start_ns = f.rb.end_ns = executor_->now_ns();
      f.done = true;
      regs_.set(Reg::kErrorStatus, pipe(p), static_cast<std::uint64_t>(hw::ErrorKind::kCompletionTimeout));
    } else {
      return false;
    }
  }
  if (!retire_head(p, f)) return false;
  q.pop_front();
  return true;
}

// The RB(s) of a finished CB, as usual or as the misbehaviour that fires at it says. False while
// an RB waits for room (retried when RB_CI moves).
bool Controller::retire_head(unsigned p, Inflight& f) {
  PipelineWorker& w = workers_[p];
  const device_core::MisbehaveKind kind = f.misbehave ? misbehave_.armed().kind : device_core::MisbehaveKind::kNone;
  const bool plain = kind == device_core::MisbehaveKind::kNone || kind == device_core::MisbehaveKind::kRogueDma;
  if (!f.effect) {
    f.effect = plain ? device_core::MisbehaveEffect{} : device_core::misbehave_effect(kind, f.rb, w.last_tag);
    if (plain) f.effect->rb = f.rb;
  }
  const device_core::MisbehaveEffect& e = *f.effect;
  for (; f.rbs_written < e.rbs; ++f.rbs_written) {
    if (!write_rb(p, e.rb, f.irq, e.garbage_status)) return false;
  }
  if (plain || e.stray_to) w.last_tag = f.rb.tag;
  if (e.stray_to) {
    hw::ResponseBlock stray = e.rb;
    stray.locator = *e.stray_to;
    write_stray_rb(static_cast<unsigned>(*e.stray_to), stray, f.irq);
  }
  if (e.rb_pi_beyond_ring) {
    std::lock_guard<std::mutex> lock(w.rb_mutex);
    w.broken.store(true);
    regs_.cell(Reg::kRbPi, pipe(p))
        .store(device_core::rb_pi_beyond_ring(index(Reg::kRbPi, p), regs_.get(Reg::kRbRingSize, pipe(p))),
               std::memory_order_release);
  }
  if (e.cb_ci_backwards) {
    w.broken.store(true);
    regs_.cell(Reg::kCbCi, pipe(p)).store(device_core::cb_ci_backwards(index(Reg::kRbPi, p)), std::memory_order_release);
  }
  if (e.stop_answering) stopped_.store(true);
  return true;
}

bool Controller::write_rb(unsigned p, const hw::ResponseBlock& rb, bool irq, bool garbage_status) {
  std::lock_guard<std::mutex> lock(workers_[p].rb_mutex);
  if (stopped_.load()) return false;
  const std::uint64_t size = regs_.get(Reg::kRbRingSize, pipe(p));
  const std::uint64_t base = regs_.get(Reg::kRbRingBase, pipe(p));
  const std::uint32_t at = index(Reg::kRbPi, p, std::memory_order_relaxed);
  if (device_core::rb_ring_fault(base, size, config_.depth[p])) {
    queue_fault(p);
    return false;
  }
  if (!device_core::rb_room(at, index(Reg::kRbCi, p), size)) return false;  // retried when RB_CI moves
  hw::RbBytes bytes = device_core::rb_at_index(rb, at, size);
  if (garbage_status) device_core::patch_garbage_status(bytes);
  device_core::Iommu::Window slot =
      iommu_.translate(device_core::rb_slot_iova(base, at, size), hw::kRbBytes, /*device_writes=*/true);
  if (!slot) {
    queue_fault(p);
    return false;
  }
  device_core::publish_rb(slot.host(), bytes);
  slot.release();
  regs_.cell(Reg::kRbPi, pipe(p)).store(at + 1, std::memory_order_release);
  if ((regs_.get(Reg::kIrqEnable, pipe(p)) & 1u) != 0 || irq) raise_interrupt(p);
  // Barriers on the other pipelines may be waiting for this retirement. Their in-flight queues
  // belong to their own threads, so each is woken and looks for itself.
  for (unsigned q = 0; q < hw::kNumPipelines; ++q) {
    if (q != p) wake(q);
  }
  return true;
}

void Controller::write_stray_rb(unsigned q, hw::ResponseBlock rb, bool irq) {
  std::lock_guard<std::mutex> lock(workers_[q].rb_mutex);
  const std::uint64_t size = regs_.get(Reg::kRbRingSize, pipe(q));
  const std::uint64_t base = regs_.get(Reg::kRbRingBase, pipe(q));
  const std::uint32_t at = index(Reg::kRbPi, q, std::memory_order_relaxed);
  if (device_core::rb_ring_fault(base, size, config_.depth[q]) || !device_core::rb_room(at, index(Reg::kRbCi, q), size)) {
    return;  // nowhere to put it: the misbehaviour is lost, as a real stray write could be
  }
  device_core::Iommu::Window slot =
      iommu_.translate(device_core::rb_slot_iova(base, at, size), hw::kRbBytes, /*device_writes=*/true);
  if (!slot) return;
  device_core::publish_rb(slot.host(), device_core::rb_at_index(rb, at, size));
  slot.release();
  regs_.cell(Reg::kRbPi, pipe(q)).store(at + 1, std::memory_order_release);
  if ((regs_.get(Reg::kIrqEnable, pipe(q)) & 1u) != 0 || irq) raise_interrupt(q);
}

void Controller::park(unsigned p) {
  PipelineWorker& w = workers_[p];
  (void)executor_->drain(p, config_.completion_timeout);
  // Windows close here; whatever the executor still holds after a failed drain is reported as
  // FATAL by reset().
  w.inflight.clear();
  w.parked.store(true);
  std::unique_lock<std::mutex> lock(w.mu);
  while (resetting_.load() && !shutdown_.load()) w.cv.wait_for(lock, std::chrono::milliseconds(1));
  w.parked.store(false);
}

void Controller::worker_main(unsigned p) {
  PipelineWorker& w = workers_[p];
  while (!shutdown_.load()) {
    if (resetting_.load()) {
      park(p);
      continue;
    }
    bool progress = false;
    // Fetch while there is room in the window, and hand CBs to the executor in index order (a
    // CB waiting for its barrier holds back those behind it).
    while (w.inflight.size() < config_.window) {
      const std::optional<std::uint32_t> cb_pi = fetch_limit(p);
      if (!cb_pi || !fetch_one(p, *cb_pi)) break;
      progress = true;
    }
    for (Inflight& f : w.inflight) {
      if (f.submitted) continue;
      if (!start(p, f)) break;
      progress = true;
    }
    while (!stopped_.load() && complete_head(p)) progress = true;
    if (progress) continue;
    // Nothing moved: copies in flight are polled every 20 us, an idle pipeline sleeps until a
    // register write wakes it (1 ms backstop).
    std::unique_lock<std::mutex> lock(w.mu);
    if (shutdown_.load() || resetting_.load()) continue;
    const bool busy = !w.inflight.empty();
    if (!busy) {
      const std::optional<std::uint32_t> cb_pi = fetch_limit(p);
      if (cb_pi && *cb_pi != index(Reg::kCbCi, p)) continue;
    }
    w.cv.wait_for(lock, busy ? std::chrono::microseconds(20) : std::chrono::milliseconds(1));
  }
  (void)executor_->drain(p, config_.completion_timeout);
  w.inflight.clear();
}

}  // namespace spyre_dma::cuda::detail
