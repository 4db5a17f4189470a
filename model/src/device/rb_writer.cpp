// The controller's RB writer: RBs and MSI-X messages into host memory, the misbehaviour that
// breaks the ring contract on purpose, and the Abend RBs of a self-reset (see controller.hpp).
#include <algorithm>

#include "device/controller.hpp"
#include "spyre_dma/device_core/rings.hpp"
#include "base/rates.hpp"

namespace spyre_dma::model {

using namespace sc_core;

std::uint32_t Controller::rb_pi_visible(const PipelineState& p) const {
  const Ps now = now_ps();
  std::uint32_t pending = 0;
  for (auto it = p.rb_landed_ps.rbegin(); it != p.rb_landed_ps.rend() && *it > now; ++it) ++pending;
  return index(Reg::kRbPi, p) - pending;  // free-running, like the index itself
}

bool Controller::wait_rb_room(PipelineState& p, Ps at, const std::function<bool()>& stopped) {
  while (!device_core::rb_room(index(Reg::kRbPi, p), index(Reg::kRbCi, p), regs_.get(Reg::kRbRingSize, p.id)) &&
         !stopped()) {
    ++counters_.pipe[static_cast<unsigned>(p.id)].rb_ring_stalls;
    sync_to(std::max(p.local_ps, at));
    wait(p.kick);
  }
  return !stopped();
}

bool Controller::write_rb(PipelineState& p, const hw::ResponseBlock& rb, Ps at, Ps& arrival, bool interrupt,
                          bool garbage_status) {
  const std::uint64_t size = regs_.get(Reg::kRbRingSize, p.id);
  const std::uint64_t base = regs_.get(Reg::kRbRingBase, p.id);
  // The RB ring may have been moved since its CB was fetched: check it again before writing.
  if (device_core::rb_ring_fault(base, size, depth(p))) {
    queue_fault(p);
    return false;
  }
  const std::uint32_t at_index = index(Reg::kRbPi, p);
  hw::RbBytes bytes = device_core::rb_at_index(rb, at_index, size);
  if (garbage_status) device_core::patch_garbage_status(bytes);
  const HostPort::Write w = host_.write(device_core::rb_slot_iova(base, at_index, size), bytes.data(), bytes.size(),
                                        at, false, /*ordered=*/true, nullptr);
  arrival = w.landed_ps;
  ++counters_.write_tlps;
  if (!w.ok) {
    queue_fault(p);
    return false;
  }
  set_index(Reg::kRbPi, p, at_index + 1);
  p.rb_landed_ps.push_back(arrival);
  if (p.rb_landed_ps.size() > device_core::DoorbellOrder::kKeptRetired) p.rb_landed_ps.pop_front();
  if ((regs_.get(Reg::kIrqEnable, p.id) & 1u) || interrupt) {
    host_.msi(static_cast<std::uint32_t>(regs_.get(Reg::kIrqVector, p.id)), at);
    ++counters_.write_tlps;
    ++counters_.interrupts;
  }
  return true;
}

bool Controller::misbehave_rb(PipelineState& p, const hw::ResponseBlock& rb, Ps at, Ps& arrival, bool interrupt,
                              const std::function<bool()>& stopped, bool& wrote) {
  const device_core::MisbehaveEffect e = device_core::misbehave_effect(misbehave_.kind(), rb, p.last_tag);
  wrote = e.rbs > 0;
  for (unsigned i = 0; i < e.rbs; ++i) {
    // A duplicate waits for room like any RB.
    if (i > 0 && !wait_rb_room(p, arrival, stopped)) return true;
    if (!write_rb(p, e.rb, i == 0 ? at : arrival, arrival, interrupt, e.garbage_status)) return false;
  }
  if (e.stray_to) {
    PipelineState& q = pipes_[static_cast<unsigned>(*e.stray_to)];
    const std::uint64_t size = regs_.get(Reg::kRbRingSize, q.id);
    if (!device_core::rb_ring_fault(regs_.get(Reg::kRbRingBase, q.id), size, depth(q)) &&
        device_core::rb_room(index(Reg::kRbPi, q), index(Reg::kRbCi, q), size)) {
      hw::ResponseBlock stray = e.rb;
      stray.locator = q.id;
      Ps stray_arrival = arrival;
      (void)write_rb(q, stray, arrival, stray_arrival, interrupt);
    }  // else nowhere to put it: the copy is lost, as a real stray write could be
  }
  if (e.rb_pi_beyond_ring) {
    set_index(Reg::kRbPi, p, device_core::rb_pi_beyond_ring(index(Reg::kRbPi, p), regs_.get(Reg::kRbRingSize, p.id)));
    p.broken_epoch = epoch_ + 1;
  }
  if (e.cb_ci_backwards) {
    set_index(Reg::kCbCi, p, device_core::cb_ci_backwards(index(Reg::kRbPi, p)));
    p.broken_epoch = epoch_ + 1;
  }
  if (e.stop_answering) {
    stopped_epoch_ = epoch_ + 1;
    for (PipelineState& q : pipes_) q.kick.notify(SC_ZERO_TIME);
  }
  return !e.stops();
}

void Controller::self_reset(Ps at, std::uint32_t tag) {
  fatal_ = true;
  fatal_at_ps_ = fatal_visible_ps_ = at;
  regs_.set(Reg::kFatalCause, static_cast<std::uint64_t>(hw::ErrorKind::kReset));
  regs_.set(Reg::kFatalDetail, tag);  // the tag of the CB it reset at
  ++abort_seq_;
  aborting_ = 0;
  for (unsigned i = 0; i < hw::kNumPipelines; ++i) {
    if (pipes_[i].in_batch) aborting_ |= 1u << i;
    pipes_[i].kick.notify(SC_ZERO_TIME);  // waiting for RB space or a barrier: stop waiting
  }
  retired_.notify(SC_ZERO_TIME);
}

bool Controller::abend(PipelineState& p, const device_core::CbControl& cb, std::uint64_t epoch) {
  const Ps at = std::max(fatal_at_ps_, p.last_retire_ps);
  const std::function<bool()> reset_meanwhile = [&] { return epoch != epoch_; };
  if (!wait_rb_room(p, at, reset_meanwhile)) return false;
  Retirement r;
  r.rb.tag = cb.tag;
  r.rb.status = hw::RbStatus::kAbend;
  r.rb.locator = p.id;
  r.rb.error = hw::ErrorKind::kReset;
  r.rb.start_ns = r.rb.end_ns = at / pcie::kPsPerNs;
  r.start = r.run.done_ps = at;
  r.run.outcome = device_core::CbOutcome{hw::RbStatus::kAbend, hw::ErrorKind::kReset, hw::CbField::kNone, 0, 0};
  const Ps rb_at = std::max(at, p.last_retire_ps);
  Ps arrival = rb_at;
  if (!write_rb(p, r.rb, rb_at, arrival, cb.interrupt)) return false;
  fatal_visible_ps_ = std::max(fatal_visible_ps_, arrival);
  faults_.cb_affected();
  count_retired(p, r, arrival, /*observed=*/false);
  return true;
}

void Controller::abort_batch(PipelineState& p, const std::uint8_t* batch, std::uint32_t from, std::uint32_t n,
                             std::uint64_t epoch) {
  for (std::uint32_t i = from; i < n && epoch == epoch_; ++i) {
    if (!abend(p, device_core::control_bits(batch + std::size_t(i) * hw::kCbBytes), epoch)) break;
  }
  aborted(p, epoch);
}

void Controller::aborted(const PipelineState& p, std::uint64_t epoch) {
  if (epoch == epoch_) aborting_ &= ~(1u << static_cast<unsigned>(p.id));
}

}  // namespace spyre_dma::model
