// The queue front end of the RTL controller: CB fetch, barriers, COMPUTE, RB writer, MSI-X.
// It follows DmaController's pipelines step for step (the same fetch batches, prefetch, barrier
// rule and RB ordering) so that both controllers give the same RB sequences; what differs is
// where a DMAI or DMAO CB's work is done.
#include "rtl_controller.hpp"

#include <algorithm>
#include <stdexcept>

#include "host/root_complex.hpp"
#include "link/protocol_checker.hpp"
#include "observe/trace_writer.hpp"
#include "sim/sim_time.hpp"
#include "sim/tlp.hpp"
#include "spyre_dma/model/stats.hpp"

namespace spyre_dma::rtl {

using namespace sc_core;
using model::delay_until;
using model::to_ps;
using pcie::Ps;

namespace {
constexpr std::uint64_t kMsiAddress = 0xFEE0'0000ull;  // as DmaController
constexpr Ps kPsPerNs = 1000;
constexpr Ps kQuantumPs = 2'000'000;

std::uint32_t tag_of(const std::uint8_t* raw) {
  return static_cast<std::uint32_t>((hw::load_le64(raw) >> 8) & 0xFFFFFF);
}

const model::SimConfig& supported(const model::SimConfig& c) {
  const model::FaultConfig& f = c.faults;
  const bool faults = f.poisoned_rate > 0 || f.unsupported_request_rate > 0 || f.completer_abort_rate > 0 ||
                      f.dropped_completion_rate > 0 || f.iommu_fault_rate > 0 || f.malformed_cb_rate > 0 ||
                      f.device_reset_rate > 0 || f.at_cb != 0 || c.link.lcrc_error_rate > 0;
  if (faults) {
    throw std::invalid_argument(
        "controller \"rtl\" injects no faults: faults.* rates, faults.at_cb and link.lcrc_error_rate must be 0 "
        "(use controller \"systemc\")");
  }
  if (c.fidelity != model::Fidelity::kTlp) {
    throw std::invalid_argument("controller \"rtl\" moves every TLP: fidelity must be \"tlp\", not \"burst\"");
  }
  if (c.device.dma_engine_gbps > 0) {
    throw std::invalid_argument("controller \"rtl\": device.dma_engine_gbps is the SystemC controller's limit; "
                                "the RTL's data path is its own limit (set it to 0)");
  }
  return c;
}
}  // namespace

RtlController::RtlController(sc_module_name name, const model::SimConfig& config, refdev::Iommu& iommu,
                             model::RootComplex& root_complex, model::ProtocolChecker& checker,
                             const std::string& wave)
    : sc_module(name),
      pcie("pcie"),
      memory("memory"),
      config_(supported(config)),
      rc_(root_complex),
      checker_(checker),
      faults_(config.faults, config.seed),
      cb_overhead_ps_(pcie::ns_to_ps(config.device.cb_overhead_ns)),
      data_path_(config, iommu, root_complex, checker,
                 [this](tlm::tlm_generic_payload& gp, sc_time& d) { pcie->b_transport(gp, d); },
                 [this](tlm::tlm_generic_payload& gp, sc_time& d) { memory->b_transport(gp, d); }, wave) {
  for (unsigned i = 0; i < hw::kNumPipelines; ++i) {
    pipes_[i].id = static_cast<hw::Pipeline>(i);
    sc_spawn([this, i] { pipeline_thread(i); }, sc_gen_unique_name("pipeline"));
  }
  sc_spawn([this] { data_path_.clock_thread(); }, "rtl_clock");
}

void RtlController::observe(model::StatsRegistry& stats, model::TraceWriter*) {
  for (unsigned i = 0; i < hw::kNumPipelines; ++i) {
    const std::string name(hw::to_string(static_cast<hw::Pipeline>(i)));
    cb_latency_[i] = &stats.histogram("controller.pipelines." + name + ".cb_latency_ns");
    occupancy_[i] = &stats.gauge("controller.pipelines." + name + ".queue_occupancy");
  }
}

bool RtlController::fetchable(const Pipe& p) const {
  return (control_ & hw::kControlEnable) && (p.queue_control & hw::kQueueEnable) && p.error_status == 0 &&
         p.cb_size != 0 && p.cb_pi != p.cb_ci;
}

void RtlController::sync_to(Ps local) {
  const Ps now = to_ps(sc_time_stamp());
  if (local > now) wait(model::from_ps(local - now));
}

Ps RtlController::link_read(std::uint64_t iova, std::uint8_t* dst, std::uint64_t len, Ps at, bool& ok) {
  tlm::tlm_generic_payload gp;
  model::TlpExtension ext;
  ext.type = pcie::TlpType::kMRd;
  ext.tags = config_.device.read_tags;
  model::ScopedExtension<model::TlpExtension> attach(gp, ext);
  gp.set_command(tlm::TLM_READ_COMMAND);
  gp.set_address(iova);
  gp.set_data_ptr(dst);
  gp.set_data_length(static_cast<unsigned>(len));
  gp.set_streaming_width(static_cast<unsigned>(len));
  sc_time delay = delay_until(at);
  pcie->b_transport(gp, delay);
  ok = ext.status == model::CompletionStatus::kSuccess;
  return to_ps(sc_time_stamp() + delay);
}

Ps RtlController::link_write(std::uint64_t iova, const std::uint8_t* src, std::uint64_t len, Ps at, Ps* arrival,
                             bool& ok) {
  tlm::tlm_generic_payload gp;
  model::TlpExtension ext;
  ext.type = pcie::TlpType::kMWr;
  ext.ordered_visible = true;
  ext.msi = iova == kMsiAddress;
  ext.epoch = rc_.epoch();
  model::ScopedExtension<model::TlpExtension> attach(gp, ext);
  gp.set_command(tlm::TLM_WRITE_COMMAND);
  gp.set_address(iova);
  gp.set_data_ptr(const_cast<std::uint8_t*>(src));
  gp.set_data_length(static_cast<unsigned>(len));
  gp.set_streaming_width(static_cast<unsigned>(len));
  sc_time delay = delay_until(at);
  pcie->b_transport(gp, delay);
  ok = gp.get_response_status() == tlm::TLM_OK_RESPONSE;
  if (arrival) *arrival = ext.ready_ps;
  ++counters_.write_tlps;
  return to_ps(sc_time_stamp() + delay);
}

// ---------------------------------------------------------------------------------------------
// Barriers: a CB with BARRIER starts after every CB handed by an earlier doorbell has retired
// ---------------------------------------------------------------------------------------------
std::uint64_t RtlController::doorbell_seq_of(const Pipe& p, std::uint32_t index) const {
  for (const Doorbell& d : p.doorbells) {
    if (static_cast<std::int32_t>(index - d.pi_end) < 0) return d.seq;
  }
  return doorbell_seq_;
}

Ps RtlController::retire_time(const Pipe& q, std::uint32_t bound) const {
  if (q.retire_ps.empty()) return q.last_retire_ps;
  const std::uint32_t first = q.retired - static_cast<std::uint32_t>(q.retire_ps.size());
  const std::int64_t k = static_cast<std::int32_t>(bound - 1 - first);
  if (k < 0) return 0;
  if (k >= static_cast<std::int64_t>(q.retire_ps.size())) return q.last_retire_ps;
  return q.retire_ps[static_cast<std::size_t>(k)];
}

Ps RtlController::wait_barrier(Pipe& p, std::uint32_t index, Ps start) {
  const std::uint64_t seq = doorbell_seq_of(p, index);
  const std::uint64_t epoch = epoch_;
  Ps ready = std::max(start, p.last_retire_ps);
  bool waited = false;
  for (Pipe& q : pipes_) {
    if (&q == &p) continue;
    std::uint32_t bound = q.retired;
    bool any = false;
    for (auto it = q.doorbells.rbegin(); it != q.doorbells.rend() && !any; ++it) {
      if (it->seq < seq) bound = it->pi_end, any = true;
    }
    for (auto it = q.pruned.rbegin(); it != q.pruned.rend() && !any; ++it) {
      if (it->seq < seq) bound = it->pi_end, any = true;
    }
    if (!any) continue;
    while (static_cast<std::int32_t>(q.retired - bound) < 0) {
      if (epoch != epoch_) return ready;
      waited = true;
      sync_to(p.local_ps);
      wait(retired_ | p.kick);
    }
    ready = std::max(ready, retire_time(q, bound));
  }
  model::PipelineCounters& c = counters_.pipe[static_cast<std::size_t>(p.id)];
  if (waited || ready > start) {
    ++c.barrier_waits;
    c.barrier_wait_ps += ready - start;
  }
  return ready;
}

// ---------------------------------------------------------------------------------------------
// The pipelines
// ---------------------------------------------------------------------------------------------
void RtlController::pipeline_thread(unsigned index) {
  Pipe& p = pipes_[index];
  model::PipelineCounters& c = counters_.pipe[index];
  const char* const name = hw::to_string(p.id).data();
  const std::uint32_t batch_max = std::max<std::uint32_t>(
      1, std::min<std::uint32_t>(config_.device.cb_prefetch, config_.link.mrrs / hw::kCbBytes));
  std::vector<std::uint8_t> batch(std::size_t(batch_max) * hw::kCbBytes);
  // CB fetches use tags above the RTL's table: one per pipeline, never two in flight.
  const std::uint32_t fetch_tag = RtlDataPath::kTags + index;
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
    const std::uint64_t epoch = epoch_;
    const std::uint32_t slot = p.cb_ci & (p.cb_size - 1);
    std::uint32_t n = std::min<std::uint32_t>(p.cb_pi - p.cb_ci, batch_max);
    n = std::min(n, p.cb_size - slot);
    n = std::min<std::uint32_t>(n, static_cast<std::uint32_t>((4096 - (slot * hw::kCbBytes) % 4096) / hw::kCbBytes));
    const Ps fetch_at = std::max(p.next_fetch_ps, to_ps(sc_time_stamp()));
    bool ok = true;
    checker_.tag_issued(fetch_tag, fetch_at);
    const Ps fetched = link_read(p.cb_base + std::uint64_t(slot) * hw::kCbBytes, batch.data(),
                                 std::uint64_t(n) * hw::kCbBytes, fetch_at, ok);
    checker_.tag_retired(fetch_tag, fetched);
    ++c.fetches;
    if (!ok) {
      p.error_status = static_cast<std::uint32_t>(hw::ErrorKind::kQueueFault);
      continue;
    }
    const std::uint32_t first_index = p.cb_ci;
    p.cb_ci += n;
    for (std::uint32_t i = 0; i < n && epoch == epoch_; ++i) {
      const std::uint32_t cb_index = first_index + i;
      Ps start = std::max(p.local_ps, fetched);
      if (i == 0) p.next_fetch_ps = start;
      const std::uint8_t* raw = batch.data() + std::size_t(i) * hw::kCbBytes;
      if (raw[4] & 1u) start = wait_barrier(p, cb_index, start);
      if (epoch != epoch_) break;
      const CbResult r = execute(p, raw, start, epoch);
      if (epoch != epoch_) break;
      p.local_ps = std::max(p.local_ps, r.done_ps);
      while (p.rb_pi - p.rb_ci >= p.rb_size && epoch == epoch_) {
        ++c.rb_ring_stalls;
        sync_to(std::max(p.local_ps, r.done_ps));
        wait(p.kick);
      }
      if (epoch != epoch_) break;
      hw::ResponseBlock rb;
      rb.tag = tag_of(raw);
      rb.status = r.status;
      rb.locator = p.id;
      rb.error = r.error;
      rb.field = r.field;
      rb.detail = r.detail;
      rb.start_ns = start / kPsPerNs;
      rb.end_ns = r.done_ps / kPsPerNs;
      rb.bytes = r.bytes;
      const Ps rb_at = std::max(r.done_ps, p.last_retire_ps);
      Ps arrival = rb_at;
      if (!write_rb(p, rb, rb_at, arrival)) break;
      if (r.data_ps) checker_.rb_after_data(name, rb.tag, r.data_ps, p.id == hw::Pipeline::kDmao ? arrival : rb_at);
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
      if (cb_latency_[index]) {
        cb_latency_[index]->record(double(r.done_ps - start) / 1000.0);
        occupancy_[index]->set(double(p.cb_pi - p.retired), double(arrival) / 1000.0);
      }
      c.bytes += r.bytes;
      c.busy_ps += r.done_ps > start ? r.done_ps - start : 0;
      retired_.notify(SC_ZERO_TIME);
      if (p.local_ps > to_ps(sc_time_stamp()) + kQuantumPs) sync_to(p.local_ps - kQuantumPs / 2);
    }
  }
}

RtlController::CbResult RtlController::execute(Pipe& p, const std::uint8_t* raw, Ps start, std::uint64_t epoch) {
  CbResult r;
  const Ps t = start + cb_overhead_ps_;
  r.done_ps = t;
  // The contract's format checks (reserved bits, sections, pipeline) come first, as on every
  // device; the RTL sees only well-formed CBs of its own pipelines.
  const hw::CbDecodeResult d = hw::decode_cb(raw);
  const auto fail = [&](hw::ErrorKind kind, hw::CbField field, std::uint64_t detail) {
    r.status = hw::RbStatus::kError;
    r.error = kind;
    r.field = field;
    r.detail = detail;
    return r;
  };
  if (d.error) return fail(hw::ErrorKind::kMalformedCb, d.error->field, d.error->value);
  if (d.pipeline != p.id) {
    return fail(hw::ErrorKind::kMalformedCb, hw::CbField::kPipeline, static_cast<std::uint64_t>(d.pipeline));
  }
  if (p.id == hw::Pipeline::kCompute) {
    r.done_ps = t + pcie::ns_to_ps(static_cast<double>(d.cb.cmpt.duration_ns));
    return r;
  }
  data_path_.submit(p.id, raw, t);
  RtlResponse a;
  // The RTL answers every CB (its completion timer bounds the wait), even after a reset.
  while (!data_path_.take(p.id, a)) wait(data_path_.response_event(p.id));
  (void)epoch;
  r.status = a.status;
  r.error = a.error;
  r.field = a.field;
  r.detail = a.detail;
  r.bytes = a.bytes;
  if (p.id == hw::Pipeline::kDmao) {
    // The RB is posted behind the CB's last MWr: it cannot be sent before that has left.
    r.done_ps = std::max(a.rb_ps, a.sent_ps);
    if (a.status == hw::RbStatus::kGood) r.data_ps = a.landed_ps;
  } else {
    r.done_ps = a.rb_ps;
    if (a.status == hw::RbStatus::kGood) r.data_ps = a.rb_ps;
  }
  return r;
}

std::uint32_t RtlController::rb_pi_visible(const Pipe& p) const {
  const Ps now = to_ps(sc_time_stamp());
  std::uint32_t pending = 0;
  for (auto it = p.retire_ps.rbegin(); it != p.retire_ps.rend() && *it > now; ++it) ++pending;
  return p.rb_pi - pending;
}

bool RtlController::write_rb(Pipe& p, const hw::ResponseBlock& rb_in, Ps at, Ps& arrival) {
  // The RB ring may have been moved since its CB was fetched: check it again before writing.
  if (!hw::ring_base_aligned(p.rb_base) || p.rb_size == 0) {
    p.error_status = static_cast<std::uint32_t>(hw::ErrorKind::kQueueFault);
    return false;
  }
  hw::ResponseBlock rb = rb_in;
  rb.phase = hw::expected_phase(p.rb_pi, p.rb_size);
  const hw::RbBytes bytes = hw::encode(rb);
  const std::uint64_t iova = p.rb_base + std::uint64_t(p.rb_pi & (p.rb_size - 1)) * hw::kRbBytes;
  bool ok = true;
  link_write(iova, bytes.data(), bytes.size(), at, &arrival, ok);
  if (!ok) {
    p.error_status = static_cast<std::uint32_t>(hw::ErrorKind::kQueueFault);
    return false;
  }
  ++p.rb_pi;
  if (p.irq_enable & 1u) {
    const std::uint32_t vector = p.irq_vector;
    bool msi_ok = true;
    link_write(kMsiAddress, reinterpret_cast<const std::uint8_t*>(&vector), sizeof vector, at, nullptr, msi_ok);
    ++counters_.interrupts;
  }
  return true;
}

}  // namespace spyre_dma::rtl
