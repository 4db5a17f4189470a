// What a BAR0 access does on the model's controller, around the device core's access routine
// (spyre_dma/device_core/register_file.hpp has the rules), and reset.
#include "device/controller.hpp"
#include "host/root_complex.hpp"
#include "observe/state_probe.hpp"
#include "base/rates.hpp"

namespace spyre_dma::model {

using namespace sc_core;

std::uint64_t Controller::clock_ns() { return now_ps() / pcie::kPsPerNs; }

// After a self-reset the device reads RESETTING until every aborted CB's RB has landed, then
// FATAL (never READY) until the host resets it; a host that sees FATAL finds all those RBs.
Controller::Condition Controller::condition() {
  const Ps now = now_ps();
  const bool shown = fatal_ && aborting_ == 0 && now >= fatal_visible_ps_;
  return Condition{fatal_ && !shown && now >= fatal_at_ps_, shown};
}

std::uint64_t Controller::visible(Reg r, hw::Pipeline p, std::uint64_t stored) {
  switch (r) {
    case Reg::kRbPi: return rb_pi_visible(pipes_[static_cast<unsigned>(p)]);
    case Reg::kFatalCause:
    case Reg::kFatalDetail: return condition().fatal ? stored : 0;
    default: return stored;
  }
}

void Controller::doorbell(hw::Pipeline p, std::uint32_t new_pi) {
  PipelineState& pipe = pipes_[static_cast<unsigned>(p)];
  const std::uint32_t before = index(Reg::kCbPi, pipe);
  doorbells_.ring(p, new_pi, pipe.retired, regs_.cell(Reg::kCbPi, p));
  if (probe_) {  // ring indices wrap: the step is their difference modulo 2^32
    probe_->add(observed_[static_cast<unsigned>(p)].queue_level, now_ps(),
                static_cast<std::int32_t>(index(Reg::kCbPi, pipe) - before));
  }
  pipe.kick.notify(SC_ZERO_TIME);
}

void Controller::stored(Reg r, hw::Pipeline p) {
  if (r == Reg::kControl) {
    for (PipelineState& q : pipes_) q.kick.notify(SC_ZERO_TIME);
    return;
  }
  pipes_[static_cast<unsigned>(p)].kick.notify(SC_ZERO_TIME);
}

std::uint32_t Controller::pipelines_of_vector(std::uint32_t vector) const noexcept {
  std::uint32_t mask = 0;
  for (const PipelineState& p : pipes_) {
    if (regs_.get(Reg::kIrqVector, p.id) == vector) mask |= 1u << static_cast<unsigned>(p.id);
  }
  return mask;
}

void Controller::reset() {
  ++epoch_;
  ++counters_.resets;
  fatal_ = false;
  aborting_ = 0;
  requester_.bump_epoch();
  for (PipelineState& p : pipes_) {  // what was rung and not retired is dropped
    if (probe_) {
      probe_->add(observed_[static_cast<unsigned>(p.id)].queue_level, now_ps(),
                  -static_cast<std::int32_t>(index(Reg::kCbPi, p) - p.retired));
    }
  }
  regs_.reset();
  doorbells_.clear();
  for (PipelineState& p : pipes_) {
    p.retired = 0;
    p.retire_ps.clear();
    p.rb_landed_ps.clear();
    p.kick.notify(SC_ZERO_TIME);
  }
  retired_.notify(SC_ZERO_TIME);
}

}  // namespace spyre_dma::model
