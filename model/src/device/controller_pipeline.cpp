// The controller's CB pipelines: fetch and prefetch, CB- and RB-level faults, dispatch to the
// COMPUTE unit or the data path, retirement (see controller.hpp).
#include <algorithm>
#include <functional>

#include "device/controller.hpp"
#include "observe/state_probe.hpp"
#include "observe/trace_writer.hpp"
#include "spyre_dma/device_core/rings.hpp"
#include "spyre_dma/model/stats.hpp"
#include "base/rates.hpp"

namespace spyre_dma::model {

using namespace sc_core;

namespace {
// What an injected malformed_cb fault writes into a CB's RSVD word (offset 8, reserved: zero).
constexpr std::uint64_t kCorruptRsvd = 0xBADC'0FFE'E0DD'F00Dull;
}  // namespace

bool Controller::fetchable(const PipelineState& p) const {
  const std::optional<std::uint32_t> cb_pi = device_core::fetch_limit(regs_, p.id);
  return cb_pi && *cb_pi != index(Reg::kCbCi, p) && !fatal_ && !broken(p) && !stopped_answering();
}

void Controller::sync_to(Ps local) {
  const Ps now = now_ps();
  if (local > now) wait(from_ps(local - now));
}

void Controller::pipeline_thread(unsigned index_of_pipe) {
  PipelineState& p = pipes_[index_of_pipe];
  PipelineCounters& c = counters_.pipe[index_of_pipe];
  const std::uint32_t batch_max = std::max<std::uint32_t>(
      1, std::min<std::uint32_t>(config_.device.cb_prefetch, config_.link.mrrs / hw::kCbBytes));
  std::vector<std::uint8_t> batch(std::size_t(batch_max) * hw::kCbBytes);
  std::vector<bool> corrupted(batch_max, false);  // by an injected malformed_cb fault
  const auto abort_stale_draining = [&] {  // CBs of an epoch or a self-reset that has passed
    const std::uint64_t epoch = p.draining_epoch;
    abort_draining(p);
    aborted(p, epoch);
    p.in_batch = false;
  };
  for (;;) {
    if (!p.draining.empty() && (p.draining_epoch != epoch_ || p.draining_aborts != abort_seq_)) {
      abort_stale_draining();
    }
    while (!fetchable(p)) {
      // Nothing to fetch: what the data path still holds retires as its answers come (a doorbell
      // meanwhile lets the next CB start behind it).
      if (!retire_draining(p, /*answered_only=*/true)) abort_stale_draining();
      p.in_batch = !p.draining.empty();
      if (!fetchable(p)) wait(p.kick);
      p.local_ps = std::max(p.local_ps, now_ps());
    }
    // Ring rules before any fetch: a fault consumes nothing.
    const device_core::RingState ring = device_core::ring_state(regs_, p.id);
    if (device_core::fetch_fault(ring, depth(p))) {
      queue_fault(p);
      continue;
    }
    const std::uint64_t epoch = epoch_;       // a host reset (CONTROL.RESET) drops the batch
    const std::uint64_t aborts = abort_seq_;  // a self-reset answers the rest of it with Abend
    const std::function<bool()> stopped = [&] {
      return epoch != epoch_ || aborts != abort_seq_ || stopped_answering();
    };
    // Fetch: contiguous slots, not past the ring's end (or a 4 KiB page: the ring is aligned).
    const std::uint32_t slot = static_cast<std::uint32_t>(ring.cb_ci & (ring.cb_size - 1));
    std::uint32_t n = std::min<std::uint32_t>(ring.cb_pi - ring.cb_ci, batch_max);
    n = std::min(n, static_cast<std::uint32_t>(ring.cb_size) - slot);
    n = std::min<std::uint32_t>(n, static_cast<std::uint32_t>((4096 - (slot * hw::kCbBytes) % 4096) / hw::kCbBytes));
    // Prefetch: the next batch is fetched while the previous one starts executing, but never
    // before the present (the doorbell that handed it has been applied by now).
    const Ps fetch_at = std::max(p.next_fetch_ps, now_ps());
    const FetchTag tag = data_path_->fetch_tag(p.id, fetch_at);
    const HostPort::Read fetch = host_.read(device_core::cb_slot_iova(ring.cb_base, ring.cb_ci, ring.cb_size),
                                            batch.data(), std::uint64_t(n) * hw::kCbBytes, tag.at_ps);
    data_path_->fetch_done(p.id, tag, fetch.done_ps);
    const Ps fetched = fetch.done_ps;
    ++c.fetches;
    if (!fetch.ok()) {  // the ring itself is unreachable: a queue fault, no RB possible
      queue_fault(p);
      continue;
    }
    const std::uint32_t first_index = ring.cb_ci;
    set_index(Reg::kCbCi, p, ring.cb_ci + n);
    if (faults_.enabled()) {
      for (std::uint32_t i = 0; i < n; ++i) {
        corrupted[i] = faults_.malformed_fetched();
        if (corrupted[i]) hw::store_le64(batch.data() + std::size_t(i) * hw::kCbBytes + 8, kCorruptRsvd);
      }
    }
    p.in_batch = true;
    std::uint32_t i = 0;
    for (; i < n; ++i) {
      if (stopped()) break;
      Retirement r;
      r.start = std::max(p.local_ps, fetched);
      if (i == 0) p.next_fetch_ps = r.start;
      std::uint8_t* raw = batch.data() + std::size_t(i) * hw::kCbBytes;
      const device_core::CbControl ctrl = device_core::control_bits(raw);
      if (ctrl.barrier) {
        // The other pipelines may be waiting for this one's retirements.
        if (!retire_draining(p, /*answered_only=*/false)) break;
        r.start = wait_barrier(p, first_index + i, r.start);
      }
      if (stopped()) break;
      r.faulted = faults_.enabled() && corrupted[i];
      if (faults_.enabled()) {
        corrupted[i] = false;
        faults_.cb_started();
        if (faults_.device_reset()) {
          self_reset(r.start, ctrl.tag);
          break;  // this CB and the rest of the batch get Abend RBs below
        }
        if (faults_.malformed_at_start()) {
          hw::store_le64(raw + 8, kCorruptRsvd);
          r.faulted = true;
        }
      }
      r.misbehave = misbehave_.cb_started();
      if (r.misbehave && misbehave_.kind() == device_core::MisbehaveKind::kRogueDma) {
        // The device goes where it was not sent: only the checks stand in its way.
        hw::CbDecodeResult d = hw::decode_cb(raw);
        if (!d.error) {
          device_core::retarget(d.cb, misbehave_.config());
          const hw::CbBytes bytes = hw::encode(d.cb);
          std::copy(bytes.begin(), bytes.end(), raw);
        }
      }
      r.run = execute(p, raw, r.start);
      p.local_ps = std::max(p.local_ps, r.run.issue_end_ps);
      // The tag as the CB carries it, even when the CB is malformed (the engine matches it).
      r.rb.tag = ctrl.tag;
      r.rb.locator = p.id;
      r.interrupt = ctrl.interrupt;
      if (r.run.pending || !p.draining.empty()) {
        // Retired in order behind what the data path still holds.
        if (p.draining.empty()) p.draining_epoch = epoch, p.draining_aborts = aborts;
        p.draining.push_back(r);
        if (!retire_draining(p, /*answered_only=*/true)) {
          ++i;  // this CB is draining's to abort now, not the batch's
          break;
        }
      } else if (!retire(p, r, stopped)) {
        break;
      }
      // Bounded run-ahead keeps the bookings of all pipelines close together in time.
      if (p.local_ps > now_ps() + quantum_ps_) sync_to(p.local_ps - quantum_ps_ / 2);
    }
    if (stopped()) abort_draining(p);  // what is draining is older than the batch's rest
    if (epoch == epoch_ && aborts != abort_seq_) abort_batch(p, batch.data(), i, n, epoch);
    p.in_batch = !p.draining.empty();
  }
}

// Executing one CB: the front end's admission (decode, pipeline, byte count), COMPUTE here, DMA
// in the data path. Every check comes before any memory is touched.
CbExecution Controller::execute(PipelineState& p, const std::uint8_t* raw, Ps start) {
  const Ps t = start + cb_overhead_ps_;
  CbExecution run;
  run.issue_end_ps = run.done_ps = t;
  const hw::CbDecodeResult d = hw::decode_cb(raw);
  if (std::optional<device_core::CbOutcome> rejected = device_core::admit(d, p.id, config_.device.max_cb_bytes)) {
    run.outcome = *rejected;
    return run;
  }
  if (p.id == hw::Pipeline::kCompute) {
    run.done_ps = run.issue_end_ps = t + pcie::ns_to_ps(static_cast<double>(d.cb.cmpt.duration_ns));
    return run;
  }
  return data_path_->execute(p.id, d.cb, raw, t);
}

bool Controller::retire_draining(PipelineState& p, bool answered_only) {
  const std::uint64_t epoch = p.draining_epoch, aborts = p.draining_aborts;
  const std::function<bool()> stopped = [&] {
    return epoch != epoch_ || aborts != abort_seq_ || stopped_answering();
  };
  while (!p.draining.empty()) {
    if (stopped()) return false;
    Retirement& r = p.draining.front();
    if (r.run.pending) {
      if (answered_only && !data_path_->answered(p.id)) return true;
      r.run = data_path_->collect(p.id);
    }
    if (!retire(p, r, stopped)) return false;
    p.draining.pop_front();
  }
  return true;
}

void Controller::abort_draining(PipelineState& p) {
  const std::uint64_t epoch = p.draining_epoch;
  bool answer = epoch == epoch_ && p.draining_aborts != abort_seq_;  // a self-reset: Abend RBs
  for (; !p.draining.empty(); p.draining.pop_front()) {
    Retirement& r = p.draining.front();
    // The data path answers every CB it took; its answers are taken even when none is written.
    if (r.run.pending) r.run = data_path_->collect(p.id);
    if (answer) answer = abend(p, device_core::CbControl{r.rb.tag, false, r.interrupt}, epoch);
  }
}

bool Controller::retire(PipelineState& p, Retirement& r, const std::function<bool()>& stopped) {
  // Retire in order: the RB follows the CB's data (posted writes stay ordered on the link).
  if (!wait_rb_room(p, std::max(p.local_ps, r.run.done_ps), stopped)) return false;
  const CbExecution& run = r.run;
  r.rb.status = run.outcome.status;
  r.rb.error = run.outcome.error;
  r.rb.field = run.outcome.field;
  r.rb.detail = run.outcome.detail;
  r.rb.start_ns = r.start / pcie::kPsPerNs;
  r.rb.end_ns = run.done_ps / pcie::kPsPerNs;
  r.rb.bytes = run.outcome.bytes;
  Ps rb_at = std::max(run.done_ps, p.last_retire_ps);
  if (hooks_.rb_before_data) rb_at = std::max(r.start, p.last_retire_ps);  // a deliberate bug
  Ps arrival = rb_at;
  const bool plain = !r.misbehave || misbehave_.kind() == device_core::MisbehaveKind::kRogueDma;
  bool wrote = true;
  if (hooks_.drop_partial_flit_rb && !partial_flit_rb_dropped_ && r.rb.status == hw::RbStatus::kGood &&
      r.rb.bytes % hw::kFlitBytes != 0) {
    partial_flit_rb_dropped_ = true;  // a deliberate bug: this CB's RB is never written
    wrote = false;
  } else if (plain ? !write_rb(p, r.rb, rb_at, arrival, r.interrupt)
                   : !misbehave_rb(p, r.rb, rb_at, arrival, r.interrupt, stopped, wrote)) {
    return false;
  }
  p.last_tag = r.rb.tag;
  // DMAO: the RB lands after the data it reports; DMAI: it leaves after the data is stored.
  if (run.data_ps && wrote) {
    host_.rb_after_data(hw::to_string(p.id).data(), r.rb.tag, run.data_ps,
                        p.id == hw::Pipeline::kDmao ? arrival : rb_at);
  }
  if (r.faulted || run.faulted) faults_.cb_affected();
  count_retired(p, r, arrival, true, wrote);
  return true;
}

void Controller::count_retired(PipelineState& p, const Retirement& r, Ps arrival, bool observed, bool rb_written) {
  const unsigned i = static_cast<unsigned>(p.id);
  PipelineCounters& c = counters_.pipe[i];
  const CbExecution& run = r.run;
  p.last_retire_ps = arrival;
  ++p.retired;
  p.retire_ps.push_back(arrival);
  if (p.retire_ps.size() > device_core::DoorbellOrder::kKeptRetired) p.retire_ps.pop_front();
  ++c.cbs;
  if (!run.outcome.good()) ++c.error_rbs;
  if (Observed& o = observed_[i]; observed && o.cb_latency) {
    o.cb_latency->record(double(run.done_ps - r.start) / 1000.0);
    o.occupancy->set(double(index(Reg::kCbPi, p) - p.retired), double(arrival) / 1000.0);
    if (trace_) {
      const char* cat = hw::to_string(p.id).data();
      const TraceTrack cb{trace_pid_, trace_slot(p, r.start, std::max(run.done_ps, r.start + 1))};
      const TraceTrack rb{trace_pid_, o.rb_track};
      trace_->complete(run.outcome.good() ? "CB" : "CB (error)", cat, double(r.start) / 1000.0,
                       double(run.done_ps - r.start) / 1000.0, cb,
                       {{"tag", r.rb.tag}, {"bytes", run.outcome.bytes}, {"status", hw::to_string(run.outcome.status)},
                        {"rb_at_ns", double(arrival) / 1000.0}});
      if (rb_written) {
        trace_->instant("RB", cat, double(arrival) / 1000.0, rb,
                        {{"tag", r.rb.tag}, {"status", hw::to_string(run.outcome.status)}});
        trace_->flow("CB to RB", cat, double(r.start) / 1000.0, cb, double(arrival) / 1000.0, rb);
      }
    }
  }
  if (probe_) probe_->add(observed_[i].queue_level, arrival, -1);
  if (observed) {
    c.bytes += run.outcome.bytes;
    c.busy_ps += run.done_ps > r.start ? run.done_ps - r.start : 0;
  }
  retired_.notify(SC_ZERO_TIME);
}

}  // namespace spyre_dma::model
