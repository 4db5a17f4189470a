// CB pipelines, the read and write engines and the RB writer of the DMA controller.
#include "device/dma_controller.hpp"

#include <algorithm>
#include <cstring>
#include <optional>

#include "device/device_memory.hpp"
#include "host/root_complex.hpp"
#include "observe/trace_writer.hpp"
#include "spyre_dma/model/stats.hpp"
#include "sim/sim_time.hpp"
#include "sim/tlp.hpp"

namespace spyre_dma::model {

using namespace sc_core;
using pcie::Ps;

namespace {
// MSI-X messages go to this address (outside any IOVA the IOMMU hands out).
constexpr std::uint64_t kMsiAddress = 0xFEE0'0000ull;
constexpr Ps kPsPerNs = 1000;
// What an injected malformed_cb fault writes into a CB's RSVD word (offset 8, reserved: zero).
constexpr std::uint64_t kCorruptRsvd = 0xBADC'0FFE'E0DD'F00Dull;

std::uint32_t tag_of(const std::uint8_t* raw) {
  return static_cast<std::uint32_t>((hw::load_le64(raw) >> 8) & 0xFFFFFF);
}
}  // namespace

DmaController::DmaController(sc_module_name name, const SimConfig& config, refdev::Iommu& iommu,
                             RootComplex& root_complex, ProtocolChecker& checker)
    : sc_module(name),
      pcie("pcie"),
      memory("memory"),
      config_(config),
      iommu_(iommu),
      rc_(root_complex),
      checker_(checker),
      hooks_(debug_hooks()),
      faults_(config.faults, config.seed),
      misbehave_(config.faults.misbehave),
      completion_timeout_ps_(pcie::ns_to_ps(config.faults.completion_timeout_ns)),
      tags_(config.device.read_tags),
      dma_engine_rate_(rate_for_gbps(config.device.dma_engine_gbps > 0 ? config.device.dma_engine_gbps : 1)),
      dma_engine_limited_(config.device.dma_engine_gbps > 0),
      cb_overhead_ps_(pcie::ns_to_ps(config.device.cb_overhead_ns)),
      quantum_ps_(2'000'000) {  // 2 us of run-ahead before a pipeline yields: keeps calendars short
  for (unsigned i = 0; i < hw::kNumPipelines; ++i) {
    pipes_[i].id = static_cast<hw::Pipeline>(i);
    sc_spawn([this, i] { pipeline_thread(i); }, sc_gen_unique_name("pipeline"));
  }
}

void DmaController::observe(StatsRegistry& stats, TraceWriter* trace) {
  trace_ = trace;
  if (trace_) trace_pid_ = trace_->process("device");
  for (unsigned i = 0; i < hw::kNumPipelines; ++i) {
    const std::string name(hw::to_string(static_cast<hw::Pipeline>(i)));
    observed_[i].cb_latency = &stats.histogram("controller.pipelines." + name + ".cb_latency_ns");
    observed_[i].occupancy = &stats.gauge("controller.pipelines." + name + ".queue_occupancy");
    if (trace_) observed_[i].track = trace_->thread(trace_pid_, name).tid;
  }
}

Ps DmaController::horizon_ps() const {
  Ps h = to_ps(sc_time_stamp());
  for (const Pipe& p : pipes_) h = std::min(h, std::max(p.local_ps, h));
  return h;
}

bool DmaController::fetchable(const Pipe& p) const {
  return (control_ & hw::kControlEnable) && (p.queue_control & hw::kQueueEnable) && !fatal_ &&
         !broken(p) && !stopped_answering() &&
         p.error_status == 0 && p.cb_size != 0 && p.cb_pi != p.cb_ci;
}

void DmaController::sync_to(Ps local) {
  const Ps now = to_ps(sc_time_stamp());
  if (local > now) wait(from_ps(local - now));
}

// ---------------------------------------------------------------------------------------------
// Host memory through the link, device memory through its socket
// ---------------------------------------------------------------------------------------------

Ps DmaController::link_read(std::uint64_t iova, std::uint8_t* dst, std::uint64_t len, Ps at,
                            bool burst, bool& ok, TlpFaults* faults) {
  tlm::tlm_generic_payload gp;
  TlpExtension ext;
  ext.type = pcie::TlpType::kMRd;
  ext.burst = burst;
  ext.tags = config_.device.read_tags;
  if (faults) {
    ext.force_replay = faults->force_replay;
    ext.drop_completion = faults->drop_completion;
    ext.inject_status = faults->status;
  }
  ScopedExtension<TlpExtension> attach(gp, ext);
  gp.set_command(tlm::TLM_READ_COMMAND);
  gp.set_address(iova);
  gp.set_data_ptr(dst);
  gp.set_data_length(static_cast<unsigned>(len));
  gp.set_streaming_width(static_cast<unsigned>(len));
  sc_time delay = delay_until(at);
  pcie->b_transport(gp, delay);
  ok = ext.status == CompletionStatus::kSuccess && !ext.drop_completion;
  if (faults) faults->replays = ext.replays;
  return to_ps(sc_time_stamp() + delay);
}

Ps DmaController::link_write(std::uint64_t iova, const std::uint8_t* src, std::uint64_t len, Ps at,
                             bool burst, bool ordered, Ps* arrival, bool& ok, TlpFaults* faults) {
  tlm::tlm_generic_payload gp;
  TlpExtension ext;
  ext.type = pcie::TlpType::kMWr;
  ext.burst = burst;
  ext.ordered_visible = ordered;
  ext.msi = iova == kMsiAddress;
  ext.epoch = rc_.epoch();
  if (faults) {
    ext.force_replay = faults->force_replay;
    ext.poisoned = faults->poisoned;
    ext.poisoned_ranges = faults->poisoned_ranges;
  }
  ScopedExtension<TlpExtension> attach(gp, ext);
  gp.set_command(tlm::TLM_WRITE_COMMAND);
  gp.set_address(iova);
  gp.set_data_ptr(const_cast<std::uint8_t*>(src));
  gp.set_data_length(static_cast<unsigned>(len));
  gp.set_streaming_width(static_cast<unsigned>(len));
  sc_time delay = delay_until(at);
  pcie->b_transport(gp, delay);
  ok = gp.get_response_status() == tlm::TLM_OK_RESPONSE;
  if (arrival) *arrival = ext.ready_ps;
  if (faults) faults->replays = ext.replays;
  ++counters_.write_tlps;
  return to_ps(sc_time_stamp() + delay);
}

Ps DmaController::memory_access(bool write, std::uint64_t phys, std::uint8_t* data, std::uint64_t len,
                                Ps at, const void* command) {
  tlm::tlm_generic_payload gp;
  gp.set_command(write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
  gp.set_address(phys);
  gp.set_data_ptr(data);
  gp.set_data_length(static_cast<unsigned>(len));
  gp.set_streaming_width(static_cast<unsigned>(len));
  DeviceMemoryCommand cmd;
  std::optional<ScopedExtension<DeviceMemoryCommand>> attach;
  if (command) {
    cmd = *static_cast<const DeviceMemoryCommand*>(command);
    attach.emplace(gp, cmd);
  }
  sc_time delay = delay_until(at);
  memory->b_transport(gp, delay);
  return to_ps(sc_time_stamp() + delay);
}

// ---------------------------------------------------------------------------------------------
// Barriers: a CB with BARRIER starts after every CB handed by an earlier doorbell has retired
// ---------------------------------------------------------------------------------------------

std::uint64_t DmaController::doorbell_seq_of(const Pipe& p, std::uint32_t index) const {
  for (const Doorbell& d : p.doorbells) {
    if (static_cast<std::int32_t>(index - d.pi_end) < 0) return d.seq;
  }
  return doorbell_seq_;
}

Ps DmaController::retire_time(const Pipe& q, std::uint32_t bound) const {
  // The CB at index bound - 1 retired at retire_ps[...]; retirement is in index order.
  if (q.retire_ps.empty()) return q.last_retire_ps;
  const std::uint32_t first = q.retired - static_cast<std::uint32_t>(q.retire_ps.size());
  const std::int64_t k = static_cast<std::int32_t>(bound - 1 - first);
  if (k < 0) return 0;
  if (k >= static_cast<std::int64_t>(q.retire_ps.size())) return q.last_retire_ps;
  return q.retire_ps[static_cast<std::size_t>(k)];
}

Ps DmaController::wait_barrier(Pipe& p, std::uint32_t index, Ps start) {
  const std::uint64_t seq = doorbell_seq_of(p, index);
  const std::uint64_t epoch = epoch_;
  const std::uint64_t aborts = abort_seq_;
  Ps ready = std::max(start, p.last_retire_ps);  // earlier CBs of this pipeline, all doorbells
  bool waited = false;
  for (Pipe& q : pipes_) {
    if (&q == &p) continue;
    // The CBs q had been handed by doorbells earlier than ours.
    std::uint32_t bound = q.retired;
    bool any = false;
    // The latest doorbell of q before ours, among those kept and those pruned (both in seq order).
    for (auto it = q.doorbells.rbegin(); it != q.doorbells.rend() && !any; ++it) {
      if (it->seq < seq) bound = it->pi_end, any = true;
    }
    for (auto it = q.pruned.rbegin(); it != q.pruned.rend() && !any; ++it) {
      if (it->seq < seq) bound = it->pi_end, any = true;
    }
    if (!any) continue;
    while (static_cast<std::int32_t>(q.retired - bound) < 0) {
      if (epoch != epoch_ || aborts != abort_seq_) return ready;
      waited = true;
      sync_to(p.local_ps);
      wait(retired_ | p.kick);
    }
    ready = std::max(ready, retire_time(q, bound));
  }
  PipelineCounters& c = counters_.pipe[static_cast<std::size_t>(p.id)];
  if (waited || ready > start) {
    ++c.barrier_waits;
    c.barrier_wait_ps += ready - start;
  }
  return ready;
}

// ---------------------------------------------------------------------------------------------
// The pipelines
// ---------------------------------------------------------------------------------------------

void DmaController::pipeline_thread(unsigned index) {
  Pipe& p = pipes_[index];
  PipelineCounters& c = counters_.pipe[index];
  const char* const name = hw::to_string(p.id).data();
  const std::uint32_t batch_max = std::max<std::uint32_t>(
      1, std::min<std::uint32_t>(config_.device.cb_prefetch, config_.link.mrrs / hw::kCbBytes));
  std::vector<std::uint8_t> batch(std::size_t(batch_max) * hw::kCbBytes);
  std::vector<bool> corrupted(batch_max, false);  // by an injected malformed_cb fault
  for (;;) {
    while (!fetchable(p)) {
      wait(p.kick);
      p.local_ps = std::max(p.local_ps, to_ps(sc_time_stamp()));
    }
    // Ring rules before any fetch: a ring off its 4 KiB boundary (or an RB ring of no valid size)
    // is a queue fault that consumes nothing, as on the reference device.
    if (!hw::ring_base_aligned(p.cb_base) || !hw::ring_base_aligned(p.rb_base) || p.rb_size == 0) {
      p.error_status = static_cast<std::uint32_t>(hw::ErrorKind::kQueueFault);
      continue;
    }
    const std::uint64_t epoch = epoch_;    // a host reset (CONTROL.RESET) drops the batch
    const std::uint64_t aborts = abort_seq_;  // a self-reset answers the rest of it with Abend
    const auto stopped = [&] { return epoch != epoch_ || aborts != abort_seq_ || stopped_answering(); };
    // Fetch: contiguous slots, not past the ring's end (or a 4 KiB page: the ring is aligned).
    const std::uint32_t slot = p.cb_ci & (p.cb_size - 1);
    std::uint32_t n = std::min<std::uint32_t>(p.cb_pi - p.cb_ci, batch_max);
    n = std::min(n, p.cb_size - slot);
    n = std::min<std::uint32_t>(n, static_cast<std::uint32_t>((4096 - (slot * hw::kCbBytes) % 4096) / hw::kCbBytes));
    // Prefetch: the next batch is fetched while the previous one starts executing, but never
    // before the present (the doorbell that handed it has been applied by now).
    const Ps fetch_at = std::max(p.next_fetch_ps, to_ps(sc_time_stamp()));
    bool ok = true;
    const pcie::TagGrant tag = tags_.acquire(fetch_at);
    checker_.tag_issued(tag.tag, tag.at_ps);
    const Ps fetched = link_read(p.cb_base + std::uint64_t(slot) * hw::kCbBytes, batch.data(),
                                 std::uint64_t(n) * hw::kCbBytes, tag.at_ps, false, ok);
    tags_.release(tag.tag, fetched);
    checker_.tag_retired(tag.tag, fetched);
    ++c.fetches;
    if (!ok) {  // the ring itself is unreachable: a queue fault, no RB possible
      p.error_status = static_cast<std::uint32_t>(hw::ErrorKind::kQueueFault);
      continue;
    }
    const std::uint32_t first_index = p.cb_ci;
    p.cb_ci += n;
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
      const std::uint32_t cb_index = first_index + i;
      Ps start = std::max(p.local_ps, fetched);
      if (i == 0) p.next_fetch_ps = start;
      std::uint8_t* raw = batch.data() + std::size_t(i) * hw::kCbBytes;
      if (raw[4] & 1u) start = wait_barrier(p, cb_index, start);  // CTRL bit 32: BARRIER
      if (stopped()) break;
      bool faulted = faults_.enabled() && corrupted[i];
      if (faults_.enabled()) {
        corrupted[i] = false;
        faults_.cb_started();
        if (faults_.device_reset()) {
          self_reset(start, tag_of(raw));
          break;  // this CB and the rest of the batch get Abend RBs below
        }
        if (faults_.malformed_at_start()) {
          hw::store_le64(raw + 8, kCorruptRsvd);
          faulted = true;
        }
      }
      const bool misbehave = misbehave_.cb_started();
      if (misbehave && misbehave_.kind() == refdev::MisbehaveKind::kRogueDma) retarget(raw);
      const CbResult r = execute(p, raw, start);
      p.local_ps = std::max(p.local_ps, r.issue_end_ps);
      // Retire in order: the RB follows the CB's data (posted writes stay ordered on the link).
      while (p.rb_pi - p.rb_ci >= p.rb_size && !stopped()) {
        ++c.rb_ring_stalls;
        sync_to(std::max(p.local_ps, r.done_ps));
        wait(p.kick);
      }
      if (stopped()) break;
      hw::ResponseBlock rb;
      // The tag as the CB carries it, even when the CB is malformed (the engine matches it).
      rb.tag = tag_of(raw);
      rb.status = r.status;
      rb.locator = p.id;
      rb.error = r.error;
      rb.field = r.field;
      rb.detail = r.detail;
      rb.start_ns = start / kPsPerNs;
      rb.end_ns = r.done_ps / kPsPerNs;
      rb.bytes = r.bytes;
      Ps rb_at = std::max(r.done_ps, p.last_retire_ps);
      if (hooks_.rb_before_data) rb_at = std::max(start, p.last_retire_ps);  // a deliberate bug
      Ps arrival = rb_at;
      if (misbehave && misbehave_.kind() != refdev::MisbehaveKind::kRogueDma) {
        if (!misbehave_rb(p, rb, rb_at, arrival)) break;
      } else if (!write_rb(p, rb, rb_at, arrival)) {
        break;
      }
      p.last_tag = rb.tag;
      // DMAO: the RB lands after the data it reports; DMAI: it leaves after the data is stored.
      if (r.data_ps) checker_.rb_after_data(name, rb.tag, r.data_ps, p.id == hw::Pipeline::kDmao ? arrival : rb_at);
      if (faulted || r.faulted) faults_.cb_affected();
      p.last_retire_ps = arrival;
      ++p.retired;
      p.retire_ps.push_back(arrival);
      if (p.retire_ps.size() > 4096) p.retire_ps.pop_front();
      while (!p.doorbells.empty() && static_cast<std::int32_t>(p.retired - p.doorbells.front().pi_end) >= 0 &&
             p.doorbells.size() > 1) {
        p.pruned.push_back(p.doorbells.front());
        if (p.pruned.size() > 4096) p.pruned.pop_front();
        p.doorbells.pop_front();
      }
      ++c.cbs;
      if (r.status != hw::RbStatus::kGood) ++c.error_rbs;
      if (Observed& o = observed_[index]; o.cb_latency) {
        o.cb_latency->record(double(r.done_ps - start) / 1000.0);
        o.occupancy->set(double(p.cb_pi - p.retired), double(arrival) / 1000.0);
        if (trace_) {
          trace_->complete(r.status == hw::RbStatus::kGood ? "CB" : "CB (error)", hw::to_string(p.id),
                           double(start) / 1000.0, double(r.done_ps - start) / 1000.0,
                           TraceTrack{trace_pid_, o.track},
                           {{"tag", rb.tag}, {"bytes", r.bytes}, {"status", hw::to_string(r.status)},
                            {"rb_at_ns", double(arrival) / 1000.0}});
        }
      }
      c.bytes += r.bytes;
      c.busy_ps += r.done_ps > start ? r.done_ps - start : 0;
      retired_.notify(SC_ZERO_TIME);
      // Bounded run-ahead keeps the bookings of all pipelines close together in time.
      if (p.local_ps > to_ps(sc_time_stamp()) + quantum_ps_) sync_to(p.local_ps - quantum_ps_ / 2);
    }
    if (epoch == epoch_ && aborts != abort_seq_) abort_batch(p, batch.data(), i, n, epoch);
    p.in_batch = false;
  }
}

void DmaController::self_reset(Ps at, std::uint32_t tag) {
  fatal_ = true;
  fatal_at_ps_ = fatal_visible_ps_ = at;
  fatal_detail_ = tag;
  ++abort_seq_;
  aborting_ = 0;
  for (unsigned i = 0; i < hw::kNumPipelines; ++i) {
    if (pipes_[i].in_batch) aborting_ |= 1u << i;
    pipes_[i].kick.notify(SC_ZERO_TIME);  // waiting for RB space or a barrier: stop waiting
  }
  retired_.notify(SC_ZERO_TIME);
}

void DmaController::abort_batch(Pipe& p, const std::uint8_t* batch, std::uint32_t from, std::uint32_t n,
                                std::uint64_t epoch) {
  const unsigned index = static_cast<unsigned>(p.id);
  PipelineCounters& c = counters_.pipe[index];
  const Ps at = std::max(fatal_at_ps_, p.last_retire_ps);
  for (std::uint32_t i = from; i < n && epoch == epoch_; ++i) {
    while (p.rb_pi - p.rb_ci >= p.rb_size && epoch == epoch_) {
      ++c.rb_ring_stalls;
      sync_to(std::max(p.local_ps, at));
      wait(p.kick);
    }
    if (epoch != epoch_) return;  // the host reset the device meanwhile: no RB any more
    hw::ResponseBlock rb;
    rb.tag = tag_of(batch + std::size_t(i) * hw::kCbBytes);
    rb.status = hw::RbStatus::kAbend;
    rb.locator = p.id;
    rb.error = hw::ErrorKind::kReset;
    rb.start_ns = rb.end_ns = at / kPsPerNs;
    const Ps rb_at = std::max(at, p.last_retire_ps);
    Ps arrival = rb_at;
    if (!write_rb(p, rb, rb_at, arrival)) break;
    p.last_retire_ps = arrival;
    ++p.retired;
    p.retire_ps.push_back(arrival);
    if (p.retire_ps.size() > 4096) p.retire_ps.pop_front();
    fatal_visible_ps_ = std::max(fatal_visible_ps_, arrival);
    ++c.cbs;
    ++c.error_rbs;
    faults_.cb_affected();
    retired_.notify(SC_ZERO_TIME);
  }
  if (epoch == epoch_) aborting_ &= ~(1u << index);
}

std::uint32_t DmaController::rb_pi_visible(const Pipe& p) const {
  const Ps now = to_ps(sc_time_stamp());
  std::uint32_t pending = 0;
  for (auto it = p.retire_ps.rbegin(); it != p.retire_ps.rend() && *it > now; ++it) ++pending;
  return p.rb_pi - pending;  // free-running, like the index itself
}

bool DmaController::write_rb(Pipe& p, const hw::ResponseBlock& rb_in, Ps at, Ps& arrival, bool garbage_status) {
  // The RB ring may have been moved since its CB was fetched: check it again before writing.
  if (!hw::ring_base_aligned(p.rb_base) || p.rb_size == 0) {
    p.error_status = static_cast<std::uint32_t>(hw::ErrorKind::kQueueFault);
    return false;
  }
  hw::ResponseBlock rb = rb_in;
  rb.phase = hw::expected_phase(p.rb_pi, p.rb_size);
  hw::RbBytes bytes = hw::encode(rb);
  if (garbage_status) bytes[3] = static_cast<std::uint8_t>((bytes[3] & 0xF0u) | refdev::kGarbageRbStatus);
  const std::uint64_t iova = p.rb_base + std::uint64_t(p.rb_pi & (p.rb_size - 1)) * hw::kRbBytes;
  bool ok = true;
  link_write(iova, bytes.data(), bytes.size(), at, false, true, &arrival, ok);
  if (!ok) {
    p.error_status = static_cast<std::uint32_t>(hw::ErrorKind::kQueueFault);
    return false;
  }
  ++p.rb_pi;
  if (p.irq_enable & 1u) {
    const std::uint32_t vector = p.irq_vector;
    bool msi_ok = true;
    link_write(kMsiAddress, reinterpret_cast<const std::uint8_t*>(&vector), sizeof vector, at, false, true,
               nullptr, msi_ok);
    ++counters_.interrupts;
  }
  return true;
}

bool DmaController::misbehave_rb(Pipe& p, hw::ResponseBlock rb, Ps at, Ps& arrival) {
  using K = refdev::MisbehaveKind;
  switch (misbehave_.kind()) {
    case K::kUnknownTag:
      rb.tag = refdev::shifted_tag(rb.tag);
      return write_rb(p, rb, at, arrival);
    case K::kStaleTag:
      rb.tag = p.last_tag != 0 ? p.last_tag : refdev::shifted_tag(rb.tag);
      return write_rb(p, rb, at, arrival);
    case K::kGarbageStatus:
      return write_rb(p, rb, at, arrival, /*garbage_status=*/true);
    case K::kDuplicateRb: {
      if (!write_rb(p, rb, at, arrival)) return false;
      if (p.rb_pi - p.rb_ci >= p.rb_size) return true;  // no room for the copy: it is lost
      Ps again = arrival;
      return write_rb(p, rb, arrival, again);
    }
    case K::kWrongQueue: {
      if (!write_rb(p, rb, at, arrival)) return false;
      Pipe& q = pipes_[static_cast<unsigned>(p.id == hw::Pipeline::kCompute ? hw::Pipeline::kDmai : hw::Pipeline::kCompute)];
      if (q.rb_size == 0 || q.rb_pi - q.rb_ci >= q.rb_size) return true;  // nowhere to put it
      rb.locator = q.id;
      Ps stray = arrival;
      (void)write_rb(q, rb, arrival, stray);
      return true;
    }
    case K::kRbPiBeyondRing:
      p.rb_pi += 2 * p.rb_size + 1;
      p.broken_epoch = epoch_ + 1;
      return false;
    case K::kCbCiBackwards:
      p.cb_ci = p.rb_pi - 1;
      p.broken_epoch = epoch_ + 1;
      return false;
    case K::kStopAnswering:
      stopped_epoch_ = epoch_ + 1;
      for (Pipe& q : pipes_) q.kick.notify(SC_ZERO_TIME);
      return false;
    case K::kNone:
    case K::kRogueDma:
      break;
  }
  return write_rb(p, rb, at, arrival);
}

void DmaController::retarget(std::uint8_t* raw) const {
  hw::CbDecodeResult d = hw::decode_cb(raw);
  if (d.error) return;
  const refdev::Misbehave& m = misbehave_.config();
  for (hw::DmaSection* s : {&d.cb.dmi, &d.cb.dmo}) {
    if (s->type == hw::DmaType::kSkip) continue;
    if (m.rogue_iova != 0 && s->type == hw::DmaType::kImmediate) s->host_iova_flits = m.rogue_iova / hw::kFlitBytes;
    if (m.rogue_device_offset != 0) {
      s->device.flit_offset = static_cast<std::uint32_t>(s->device.flit_offset + m.rogue_device_offset / hw::kFlitBytes);
    }
  }
  const hw::CbBytes bytes = hw::encode(d.cb);
  std::copy(bytes.begin(), bytes.end(), raw);
}

// ---------------------------------------------------------------------------------------------
// Executing one CB. Every check comes before any memory is touched.
// ---------------------------------------------------------------------------------------------

DmaController::CbResult DmaController::execute(Pipe& p, const std::uint8_t* raw, Ps start) {
  CbResult r;
  r.issue_end_ps = r.done_ps = start + cb_overhead_ps_;
  auto fail = [&](hw::ErrorKind kind, hw::CbField field, std::uint64_t detail) { return r.fail(kind, field, detail); };
  const hw::CbDecodeResult d = hw::decode_cb(raw);
  if (d.error) return fail(hw::ErrorKind::kMalformedCb, d.error->field, d.error->value);
  if (d.pipeline != p.id) {
    return fail(hw::ErrorKind::kMalformedCb, hw::CbField::kPipeline, static_cast<std::uint64_t>(d.pipeline));
  }
  const hw::ControlBlock& cb = d.cb;
  const Ps t = start + cb_overhead_ps_;
  switch (p.id) {
    case hw::Pipeline::kCompute: {
      r.done_ps = r.issue_end_ps = t + pcie::ns_to_ps(static_cast<double>(cb.cmpt.duration_ns));
      return r;
    }
    case hw::Pipeline::kDmai:
      if (cb.dmi.type == hw::DmaType::kImmediate) return h2d(cb, t);
      return device_side(cb, t);
    case hw::Pipeline::kDmao: return d2h(cb, t);
  }
  return r;
}

namespace {
struct Checked {
  bool ok = false;
  hw::ErrorKind error = hw::ErrorKind::kNone;
  hw::CbField field = hw::CbField::kNone;
  std::uint64_t detail = 0;
  std::uint64_t phys = 0;
};

Checked check_device(const hw::ControlBlock& cb, const hw::DeviceVa& va, std::uint32_t flits, bool write,
                     hw::CbField field, std::uint64_t memory_bytes, std::uint64_t bytes) {
  Checked c;
  const hw::XlatResult x = hw::translate(cb, va, flits, write);
  const std::uint64_t raw_va = (std::uint64_t(va.segment) << hw::kSegmentOffsetBits) | va.flit_offset;
  if (x.error != hw::ErrorKind::kNone) {
    c.error = x.error, c.field = field, c.detail = raw_va;
    return c;
  }
  c.phys = x.phys_flits * hw::kFlitBytes;
  if (c.phys + bytes > memory_bytes || c.phys + bytes < c.phys) {
    c.error = hw::ErrorKind::kDeviceMemoryFault, c.field = field, c.detail = c.phys;
    return c;
  }
  c.ok = true;
  return c;
}
}  // namespace

std::optional<std::uint64_t> DmaController::check_host_dma(const hw::ControlBlock& cb, bool to_device,
                                                           CbResult& r) {
  const hw::DmaSection& s = to_device ? cb.dmi : cb.dmo;
  const std::uint64_t bytes = s.byte_count();
  if (bytes > config_.device.max_cb_bytes) {
    r.fail(hw::ErrorKind::kMalformedCb, to_device ? hw::CbField::kDmiLength : hw::CbField::kDmoLength, s.length_flits);
    return std::nullopt;
  }
  const Checked dev = check_device(cb, s.device, s.length_flits, to_device,
                                   to_device ? hw::CbField::kDmiDeviceVa : hw::CbField::kDmoDeviceVa,
                                   config_.device.memory_bytes, bytes);
  if (!dev.ok) {
    r.fail(dev.error, dev.field, dev.detail);
    return std::nullopt;
  }
  // The device checks its access with the IOMMU (ATS) before moving data, so a fault leaves
  // memory untouched; the root complex checks every TLP again.
  const std::uint64_t iova = s.host_iova_flits * hw::kFlitBytes;
  const bool refused = !iommu_.translate(iova, bytes, !to_device);
  if (refused || (faults_.enabled() && faults_.iommu())) {  // a real fault, or an injected one
    r.fail(hw::ErrorKind::kIommuFault, to_device ? hw::CbField::kDmiHostIova : hw::CbField::kDmoHostIova, iova);
    r.faulted = !refused;
    return std::nullopt;
  }
  return dev.phys;
}

Ps DmaController::through_dma_engine(Ps t, std::uint64_t bytes, Ps done) {
  if (!dma_engine_limited_) return done;
  const Ps d = dma_engine_rate_.ceil_ps(bytes);
  return std::max(done, dma_engine_.reserve(t, d) + d);
}

namespace {
// Address of the k-th CplD (0-based) of the reads of [addr, addr + len) cut at mrrs.
std::uint64_t completion_address(std::uint64_t addr, std::uint64_t len, std::uint32_t mrrs, std::uint32_t rcb,
                                 std::uint32_t limit, std::uint64_t k) {
  for (std::uint64_t a = addr, left = len; left > 0;) {
    const std::uint64_t n = pcie::request_step(a, left, mrrs);
    const std::uint64_t m = pcie::count_completions(a, n, rcb, limit);
    if (k < m) {
      for (std::uint64_t c = a, rest = n;; --k) {
        const std::uint64_t step = pcie::completion_step(c, rest, rcb, limit);
        if (k == 0) return c;
        c += step;
        rest -= step;
      }
    }
    k -= m;
    a += n;
    left -= n;
  }
  return addr;
}
}  // namespace

void DmaController::burst_read_faults(std::uint64_t iova, std::uint64_t bytes, Ps t, CbResult& r, TlpFaults& f) {
  // One transaction stands for every request: the decisions are those TLP fidelity would make,
  // request by request; the clean burst's timing stays (plus the timer of a lost completion).
  const std::uint32_t mrrs = config_.link.mrrs, rcb = config_.link.rcb;
  const std::uint32_t limit = pcie::completion_limit(pcie::link_params(config_.link));
  const auto fail = [&](FaultKind k, std::uint64_t at) {
    r.faulted = true;
    if (k == FaultKind::kDroppedCompletion) {
      r.fail_first(hw::ErrorKind::kCompletionTimeout, hw::CbField::kDmiHostIova, at);
      r.done_ps = std::max(r.done_ps, t + completion_timeout_ps_);
    } else {
      r.fail_first(hw::ErrorKind::kPcieError, hw::CbField::kDmiHostIova, at);
    }
  };
  bool poisoned_first = false;
  if (faults_.armed_tlp(FaultKind::kLcrc, true)) f.force_replay = true, r.faulted = true;
  for (FaultKind k : {FaultKind::kUnsupportedRequest, FaultKind::kCompleterAbort, FaultKind::kDroppedCompletion}) {
    if (faults_.armed_tlp(k, true)) faults_.count(k), fail(k, iova);
  }
  if (faults_.armed_tlp(FaultKind::kPoisoned, true)) {
    faults_.count(FaultKind::kPoisoned);
    poisoned_first = true;
    r.faulted = true;
    r.fail_first(hw::ErrorKind::kPcieError, hw::CbField::kDmiHostIova, iova);
  }
  std::uint64_t cplds = 0;
  for (std::uint64_t a = iova, left = bytes; left > 0;) {
    const std::uint64_t n = pcie::request_step(a, left, mrrs);
    if (const std::optional<FaultKind> k = faults_.read_request()) {
      fail(*k, a);
    } else {
      cplds += pcie::count_completions(a, n, rcb, limit);
    }
    a += n;
    left -= n;
  }
  const std::uint64_t skip = poisoned_first ? 1 : 0;
  if (cplds > skip) {
    const FaultInjector::Hits h = faults_.poisoned(cplds - skip);
    if (h.count) {
      r.faulted = true;
      r.fail_first(hw::ErrorKind::kPcieError, hw::CbField::kDmiHostIova,
                   completion_address(iova, bytes, mrrs, rcb, limit, h.first + skip));
    }
  }
}

DmaController::CbResult DmaController::h2d(const hw::ControlBlock& cb, Ps t) {
  CbResult r;
  r.done_ps = r.issue_end_ps = t;
  const std::optional<std::uint64_t> phys = check_host_dma(cb, true, r);
  if (!phys) return r;
  const std::uint64_t bytes = cb.dmi.byte_count();
  const std::uint64_t iova = cb.dmi.host_iova_flits * hw::kFlitBytes;
  Pipe& p = pipes_[static_cast<std::size_t>(hw::Pipeline::kDmai)];
  p.scratch.resize(bytes);
  const bool burst = config_.fidelity == Fidelity::kBurst;
  const bool inject = faults_.enabled();
  bool ok = true;
  Ps issue = t, done = t;
  if (burst) {
    TlpFaults f;
    if (inject) burst_read_faults(iova, bytes, t, r, f);
    bool good = true;
    const Ps arrived = link_read(iova, p.scratch.data(), bytes, t, true, good, &f);
    ok = good;
    r.faulted = r.faulted || f.replays > 0;
    const pcie::LinkParams lp = pcie::link_params(config_.link);
    const pcie::PsPerByte wire = pcie::tlp_ps_per_byte(lp);
    const pcie::WireBytes w = pcie::read_wire(lp, iova, bytes);
    issue = t + wire.ceil_ps(w.upstream);
    // Device memory takes the data as the completions stream in, from the first one on.
    const Ps first = arrived - std::min(arrived - t, wire.ceil_ps(w.downstream));
    // The last request's data is written after it arrived, as in TLP fidelity.
    const Ps last_write = rate_for_gbps(config_.device.dram_gbps)
                              .ceil_ps(std::min<std::uint64_t>(bytes, config_.link.mrrs)) +
                          pcie::ns_to_ps(config_.device.dram_latency_ns);
    done = std::max(arrived + last_write, memory_access(true, *phys, p.scratch.data(), bytes, first));
    done = std::max(done, r.done_ps);  // a lost completion's timer
  } else {
    const std::uint32_t mrrs = hooks_.reads_over_mrrs ? 2 * config_.link.mrrs : config_.link.mrrs;
    const std::uint32_t rcb = config_.link.rcb;
    const std::uint32_t limit = inject ? pcie::completion_limit(pcie::link_params(config_.link)) : 0;
    bool first_tlp = true;
    for (std::uint64_t a = iova, left = bytes; left > 0;) {
      const pcie::Segment seg{a, pcie::request_step(a, left, mrrs)};
      a += seg.len;
      left -= seg.len;
      const pcie::TagGrant g = tags_.acquire(issue);
      if (g.at_ps > issue) ++counters_.tag_stalls, counters_.tag_stall_ps += g.at_ps - issue;
      checker_.tag_issued(g.tag, g.at_ps);
      TlpFaults f;
      std::optional<FaultKind> lost;  // UR, CA or a dropped completion
      std::optional<std::uint64_t> poisoned;  // address of a poisoned CplD
      if (inject) {
        if (first_tlp) {
          if (faults_.armed_tlp(FaultKind::kLcrc, true)) f.force_replay = true;
          for (FaultKind k : {FaultKind::kUnsupportedRequest, FaultKind::kCompleterAbort, FaultKind::kDroppedCompletion}) {
            if (faults_.armed_tlp(k, true)) faults_.count(k), lost = k;
          }
          if (faults_.armed_tlp(FaultKind::kPoisoned, true)) faults_.count(FaultKind::kPoisoned), poisoned = seg.addr;
          first_tlp = false;
        }
        if (!lost && !poisoned) lost = faults_.read_request();
        if (!lost) {
          const std::uint64_t m = pcie::count_completions(seg.addr, seg.len, rcb, limit);
          const std::uint64_t skip = poisoned ? 1 : 0;
          const FaultInjector::Hits h = m > skip ? faults_.poisoned(m - skip) : FaultInjector::Hits{};
          if (h.count && !poisoned) poisoned = completion_address(seg.addr, seg.len, mrrs, rcb, limit, h.first);
        }
        if (lost == FaultKind::kDroppedCompletion) f.drop_completion = true;
        if (lost == FaultKind::kUnsupportedRequest) f.status = CompletionStatus::kUnsupportedRequest;
        if (lost == FaultKind::kCompleterAbort) f.status = CompletionStatus::kCompleterAbort;
      }
      bool good = true;
      std::uint8_t* dst = p.scratch.data() + (seg.addr - iova);
      Ps arrived = link_read(seg.addr, dst, seg.len, g.at_ps, false, good, &f);
      if (f.drop_completion) arrived = g.at_ps + completion_timeout_ps_;  // the timer frees the tag
      tags_.release(g.tag, hooks_.release_tags_at_issue ? g.at_ps : arrived);
      checker_.tag_retired(g.tag, arrived);
      ++counters_.read_requests;
      if (lost || poisoned || f.replays) r.faulted = true;
      if (lost == FaultKind::kDroppedCompletion) {
        r.fail_first(hw::ErrorKind::kCompletionTimeout, hw::CbField::kDmiHostIova, seg.addr);
      } else if (lost) {
        r.fail_first(hw::ErrorKind::kPcieError, hw::CbField::kDmiHostIova, seg.addr);
      } else if (poisoned) {  // the data of a poisoned completion is discarded
        r.fail_first(hw::ErrorKind::kPcieError, hw::CbField::kDmiHostIova, *poisoned);
      }
      if (!good || poisoned) {
        ok = ok && (good || lost);
        done = std::max(done, arrived);
      } else {
        done = std::max(done, memory_access(true, *phys + (seg.addr - iova), dst, seg.len, arrived));
      }
      issue = g.at_ps;
    }
  }
  r.issue_end_ps = issue;
  r.done_ps = through_dma_engine(t, bytes, done);
  if (!ok) return r.fail_first(hw::ErrorKind::kPcieError, hw::CbField::kDmiHostIova, iova);
  if (r.status != hw::RbStatus::kGood) return r;
  r.data_ps = done;
  r.bytes = bytes;
  return r;
}

DmaController::CbResult DmaController::d2h(const hw::ControlBlock& cb, Ps t) {
  CbResult r;
  r.done_ps = r.issue_end_ps = t;
  const std::optional<std::uint64_t> phys = check_host_dma(cb, false, r);
  if (!phys) return r;
  const std::uint64_t bytes = cb.dmo.byte_count();
  const std::uint64_t iova = cb.dmo.host_iova_flits * hw::kFlitBytes;
  Pipe& p = pipes_[static_cast<std::size_t>(hw::Pipeline::kDmao)];
  p.scratch.resize(bytes);
  const bool inject = faults_.enabled();
  bool ok = true;
  Ps sent = t, landed = 0;
  if (config_.fidelity == Fidelity::kBurst) {
    const Ps ready = memory_access(false, *phys, p.scratch.data(), bytes, t);
    const Ps first = t + pcie::ns_to_ps(config_.device.dram_latency_ns);
    TlpFaults f;
    std::vector<pcie::Segment> poisoned;
    if (inject) {
      std::vector<std::uint64_t> hits;
      const std::uint64_t n = pcie::count_requests(iova, bytes, config_.link.mps);
      if (faults_.armed_tlp(FaultKind::kLcrc, false)) f.force_replay = true;
      const bool first_poisoned = faults_.armed_tlp(FaultKind::kPoisoned, false);
      if (first_poisoned) faults_.count(FaultKind::kPoisoned), hits.push_back(0);
      faults_.poisoned(n - (first_poisoned ? 1 : 0), &hits);
      if (first_poisoned) for (std::size_t k = 1; k < hits.size(); ++k) ++hits[k];
      std::uint64_t index = 0;
      std::size_t next = 0;
      for (std::uint64_t a = iova, left = bytes; left > 0 && next < hits.size(); ++index) {
        const std::uint64_t len = pcie::request_step(a, left, config_.link.mps);
        if (index == hits[next]) poisoned.push_back(pcie::Segment{a, len}), ++next;
        a += len;
        left -= len;
      }
      if (!poisoned.empty()) {
        f.poisoned_ranges = &poisoned;
        r.fail_first(hw::ErrorKind::kPcieError, hw::CbField::kDmoHostIova, poisoned.front().addr);
      }
    }
    sent = std::max(ready, link_write(iova, p.scratch.data(), bytes, first, true, false, &landed, ok, &f));
    r.faulted = !poisoned.empty() || f.replays > 0;
  } else {
    // Device memory is read once for the CB; each MWr leaves once its part has streamed out of
    // DRAM (latency plus its end offset at the DRAM rate, as the DRAM bus schedules it).
    const Ps read_start = memory_access(false, *phys, p.scratch.data(), bytes, t) -
                          rate_for_gbps(config_.device.dram_gbps).ceil_ps(bytes) -
                          pcie::ns_to_ps(config_.device.dram_latency_ns);
    const pcie::PsPerByte dram = rate_for_gbps(config_.device.dram_gbps);
    const Ps dram_latency = pcie::ns_to_ps(config_.device.dram_latency_ns);
    const std::uint32_t mps = hooks_.writes_over_mps ? 2 * config_.link.mps : config_.link.mps;
    bool first_tlp = true;
    for (std::uint64_t a = iova, left = bytes; left > 0;) {
      std::uint64_t n = pcie::request_step(a, left, mps);
      if (hooks_.writes_cross_4k) n = std::min<std::uint64_t>(left, a == iova ? hw::kFlitBytes : mps);
      const std::uint64_t end = a + n - iova;
      const Ps ready = read_start + dram.ceil_ps(end) + dram_latency;
      TlpFaults f;
      if (inject) {
        if (first_tlp) {
          if (faults_.armed_tlp(FaultKind::kLcrc, false)) f.force_replay = true;
          if (faults_.armed_tlp(FaultKind::kPoisoned, false)) faults_.count(FaultKind::kPoisoned), f.poisoned = true;
          first_tlp = false;
        }
        if (!f.poisoned && faults_.poisoned(1).count) f.poisoned = true;
        if (f.poisoned) r.fail_first(hw::ErrorKind::kPcieError, hw::CbField::kDmoHostIova, a);
      }
      bool good = true;
      Ps arrival = 0;
      sent = link_write(a, p.scratch.data() + (a - iova), n, std::max(ready, sent), false, false, &arrival, good,
                        &f);
      landed = std::max(landed, arrival);
      if (f.poisoned || f.replays) r.faulted = true;
      ok = ok && good;
      a += n;
      left -= n;
    }
  }
  r.issue_end_ps = r.done_ps = through_dma_engine(t, bytes, sent);
  if (!ok) return r.fail(hw::ErrorKind::kIommuFault, hw::CbField::kDmoHostIova, iova);
  if (r.status != hw::RbStatus::kGood) return r;
  r.data_ps = landed;
  r.bytes = bytes;
  return r;
}

DmaController::CbResult DmaController::device_side(const hw::ControlBlock& cb, Ps t) {
  CbResult r;
  const hw::DmaSection& s = cb.dmi;
  const std::uint64_t bytes = s.byte_count();
  r.done_ps = r.issue_end_ps = t;
  const Checked dst = check_device(cb, s.device, s.length_flits, true, hw::CbField::kDmiDeviceVa,
                                   config_.device.memory_bytes, bytes);
  if (!dst.ok) return r.fail(dst.error, dst.field, dst.detail);
  DeviceMemoryCommand cmd;
  if (s.type == hw::DmaType::kMemoryFill) {
    cmd.kind = DeviceMemoryCommand::Kind::kFill32;
    cmd.pattern = s.fill_pattern;
  } else {
    const Checked src = check_device(cb, s.source, s.length_flits, false, hw::CbField::kDmiSource,
                                     config_.device.memory_bytes, bytes);
    if (!src.ok) return r.fail(src.error, src.field, src.detail);
    cmd.kind = DeviceMemoryCommand::Kind::kCopy;
    cmd.source = src.phys;
  }
  r.done_ps = r.issue_end_ps = memory_access(true, dst.phys, nullptr, bytes, t, &cmd);
  r.data_ps = r.done_ps;
  r.bytes = bytes;
  return r;
}

}  // namespace spyre_dma::model
