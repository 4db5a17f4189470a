// One pipeline's runner: fetch CBs, translate and submit them to the executor's lane, retire them
// in index order with one RB each (see copy_engine_device.hpp for the rules).
#include <cstring>

#include "device_state.hpp"

namespace spyre_dma::cuda::detail {
namespace {

namespace reg = hw::reg;
constexpr std::uint64_t kRingAlign = hw::kRingAlignment;
using Clock = std::chrono::steady_clock;

bool valid_ring_size(std::uint32_t size, std::uint32_t depth) noexcept {
  return hw::is_power_of_two(size) && size <= depth;
}

// Words 1..7 first, then word 0 (tag, status, phase) with a release store: a reader polling
// word 0 with acquire semantics sees the whole RB.
void publish_rb(std::uint8_t* slot, const hw::RbBytes& rb) noexcept {
  std::memcpy(slot + 8, rb.data() + 8, hw::kRbBytes - 8);
  std::uint64_t word0 = 0;
  std::memcpy(&word0, rb.data(), sizeof word0);
  // Aligned: the ring base IOVA is 4 KiB aligned and an IOVA keeps its host page offset.
  __atomic_store_n(reinterpret_cast<std::uint64_t*>(slot), word0, __ATOMIC_RELEASE);
}

}  // namespace

bool DeviceState::can_fetch(unsigned p) const noexcept {
  const PipeRegisters& r = regs_[p];
  return (control_.load() & hw::kControlEnable) != 0 && !resetting_.load() && !fatal_.load() &&
         (r.queue_control.load() & hw::kQueueEnable) != 0 && r.error_status.load() == 0;
}

void DeviceState::queue_fault(unsigned p) {
  regs_[p].error_status.store(static_cast<std::uint32_t>(hw::ErrorKind::kQueueFault));
}

// Copies the CB at CB_CI out of the ring and queues it (translated) behind the runner's others.
bool DeviceState::fetch_one(unsigned p) {
  PipeRegisters& r = regs_[p];
  const std::uint32_t depth = config_.depth[p];
  const std::uint32_t ci = r.cb_ci.load(std::memory_order_relaxed);
  const std::uint32_t pi = r.cb_pi.load(std::memory_order_acquire);
  if (pi == ci) return false;
  const std::uint32_t size = r.cb_size.load();
  const std::uint64_t base = r.cb_base.load();
  // Ring rules first: a fault consumes nothing and writes no RB (the tag is unknown).
  if (!valid_ring_size(size, depth) || base % kRingAlign != 0 || !valid_ring_size(r.rb_size.load(), depth) ||
      r.rb_base.load() % kRingAlign != 0 || pi - ci > size) {
    queue_fault(p);
    return false;
  }
  hw::CbBytes raw;
  {
    refdev::Iommu::Window slot =
        iommu_.translate(base + std::uint64_t(ci & (size - 1)) * hw::kCbBytes, hw::kCbBytes, /*device_writes=*/false);
    if (!slot) {
      queue_fault(p);
      return false;
    }
    std::memcpy(raw.data(), slot.host(), hw::kCbBytes);
  }
  r.cb_ci.store(ci + 1, std::memory_order_release);  // the slot may be reused at once

  const hw::CbDecodeResult d = hw::decode_cb(raw.data());
  Inflight f;
  f.index = ci;
  f.rb.locator = static_cast<hw::Pipeline>(p);
  // A malformed CTRL still names its tag bits: the engine matches such an RB by ring position.
  f.rb.tag = d.error ? static_cast<std::uint32_t>((hw::load_le64(raw.data()) >> 8) & 0xFFFFFF) : d.cb.tag;
  f.irq = !d.error && d.cb.interrupt;
  f.barrier = !d.error && d.cb.barrier;
  f.work = translate_cb(d, static_cast<hw::Pipeline>(p), config_.max_cb_bytes, executor_->device_memory_bytes(), iommu_);
  if (f.work.rejected) {
    const std::uint64_t now = executor_->now_ns();
    f.rb.status = hw::RbStatus::kError;
    f.rb.error = f.work.rejected->error;
    f.rb.field = f.work.rejected->field;
    f.rb.detail = f.work.rejected->detail;
    f.rb.start_ns = now;
    f.rb.end_ns = now;
    f.submitted = f.done = true;
  }
  runners_[p].inflight.push_back(std::move(f));
  return true;
}

bool DeviceState::barrier_clear(unsigned p, const Inflight& f) {
  if (&runners_[p].inflight.front() != &f) return false;  // earlier CBs of this pipeline first
  const DoorbellLog::Targets targets = doorbells_.barrier_targets(p, f.index);
  for (unsigned q = 0; q < hw::kNumPipelines; ++q) {
    if (targets[q] && !index_reached(regs_[q].rb_pi.load(std::memory_order_acquire), *targets[q])) return false;
  }
  return true;
}

// Hands a fetched CB to the executor (or starts its compute wait).
bool DeviceState::start(unsigned p, Inflight& f) {
  if (f.barrier && !barrier_clear(p, f)) return false;
  f.submitted = true;
  f.deadline = Clock::now() + config_.completion_timeout;
  if (f.work.compute) {
    f.compute_start_ns = executor_->now_ns();
    return true;
  }
  try {
    f.ticket = executor_->submit(p, f.work.command);
  } catch (const std::exception&) {  // an executor that cannot even queue: the CB fails alone
    const std::uint64_t now = executor_->now_ns();
    f.rb.status = hw::RbStatus::kError;
    f.rb.error = hw::ErrorKind::kPcieError;
    f.rb.start_ns = f.rb.end_ns = now;
    f.done = true;
    f.work.window.release();
  }
  return true;
}

// Polls the oldest CB; writes its RB when it is done. True when an RB was written.
bool DeviceState::complete_head(unsigned p) {
  auto& q = runners_[p].inflight;
  if (q.empty()) return false;
  Inflight& f = q.front();
  if (!f.submitted) return false;
  if (!f.done) {
    if (f.work.compute) {
      const std::uint64_t now = executor_->now_ns();
      if (now - f.compute_start_ns < f.work.compute_ns) {
        if (Clock::now() < f.deadline) return false;
      }
      f.rb.start_ns = f.compute_start_ns;
      f.rb.end_ns = now;
      f.done = true;
    } else if (std::optional<CopyCompletion> c = executor_->poll(p, f.ticket)) {
      f.work.window.release();  // the copy has ended: unmap may proceed
      f.rb.start_ns = c->start_ns;
      f.rb.end_ns = c->end_ns;
      if (c->error == hw::ErrorKind::kNone) {
        f.rb.bytes = f.work.command.bytes;
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
      f.rb.detail = f.work.command.bytes;
      f.rb.start_ns = f.rb.end_ns = executor_->now_ns();
      f.done = true;
      regs_[p].error_status.store(static_cast<std::uint32_t>(hw::ErrorKind::kCompletionTimeout));
    } else {
      return false;
    }
  }
  if (!write_rb(p, f)) return false;
  q.pop_front();
  return true;
}

bool DeviceState::write_rb(unsigned p, Inflight& f) {
  PipeRegisters& r = regs_[p];
  const std::uint32_t size = r.rb_size.load();
  const std::uint64_t base = r.rb_base.load();
  const std::uint32_t index = r.rb_pi.load(std::memory_order_relaxed);
  if (!valid_ring_size(size, config_.depth[p]) || base % kRingAlign != 0) {
    queue_fault(p);
    return false;
  }
  if (hw::ring_full(index, r.rb_ci.load(), size)) return false;  // retried when RB_CI moves
  f.rb.phase = hw::expected_phase(index, size);
  const hw::RbBytes bytes = hw::encode(f.rb);
  refdev::Iommu::Window slot =
      iommu_.translate(base + std::uint64_t(index & (size - 1)) * hw::kRbBytes, hw::kRbBytes, /*device_writes=*/true);
  if (!slot) {
    queue_fault(p);
    return false;
  }
  publish_rb(slot.host(), bytes);
  slot.release();
  r.rb_pi.store(index + 1, std::memory_order_release);
  if ((r.irq_enable.load() & 1u) != 0 || f.irq) raise_interrupt(p);
  // Barriers on the other pipelines may be waiting for this retirement. Their in-flight queues
  // belong to their own threads, so each is woken and looks for itself.
  for (unsigned q = 0; q < hw::kNumPipelines; ++q) {
    if (q != p) wake(q);
  }
  return true;
}

void DeviceState::park(unsigned p) {
  Runner& run = runners_[p];
  (void)executor_->drain(p, config_.completion_timeout);
  // Windows close here; whatever the executor still holds after a failed drain is reported as
  // FATAL by reset().
  run.inflight.clear();
  run.parked.store(true);
  std::unique_lock<std::mutex> lock(run.mu);
  while (resetting_.load() && !shutdown_.load()) run.cv.wait_for(lock, std::chrono::milliseconds(1));
  run.parked.store(false);
}

void DeviceState::runner_main(unsigned p) {
  Runner& run = runners_[p];
  while (!shutdown_.load()) {
    if (resetting_.load()) {
      park(p);
      continue;
    }
    bool progress = false;
    // Fetch while there is room in the window, and hand CBs to the executor in index order (a
    // CB waiting for its barrier holds back those behind it).
    while (run.inflight.size() < config_.window && can_fetch(p) && fetch_one(p)) progress = true;
    for (Inflight& f : run.inflight) {
      if (f.submitted) continue;
      if (!start(p, f)) break;
      progress = true;
    }
    while (complete_head(p)) progress = true;
    if (progress) continue;
    // Nothing moved: copies in flight are polled every 20 us, an idle pipeline sleeps until a
    // register write wakes it (1 ms backstop).
    std::unique_lock<std::mutex> lock(run.mu);
    if (shutdown_.load() || resetting_.load()) continue;
    const bool busy = !run.inflight.empty();
    const PipeRegisters& r = regs_[p];
    if (!busy && r.cb_pi.load() != r.cb_ci.load() && can_fetch(p)) continue;
    run.cv.wait_for(lock, busy ? std::chrono::microseconds(20) : std::chrono::milliseconds(1));
  }
  (void)executor_->drain(p, config_.completion_timeout);
  run.inflight.clear();
}

}  // namespace spyre_dma::cuda::detail
