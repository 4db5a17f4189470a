#include "link/pcie_link.hpp"

#include <algorithm>

#include "observe/state_probe.hpp"
#include "observe/trace_writer.hpp"
#include "base/debug_hooks.hpp"
#include "base/rates.hpp"
#include "base/tlp.hpp"

namespace spyre_dma::model {

using namespace sc_core;
using pcie::Ps;
using pcie::TlpType;

namespace {
// History of a shared link's calendars: room for 16 devices' CBs of 4 MiB in 512-byte requests.
constexpr std::size_t kSharedHistory = std::size_t{1} << 17;
}  // namespace

PcieLink::PcieLink(sc_module_name name, const SimConfig& config, const LinkConfig& link, pcie::Ps beyond_ps,
                   std::uint64_t salt, bool shared)
    : sc_module(name),
      device_side("device_side"),
      host_side("host_side"),
      link_(link),
      params_(pcie::link_params(link)),
      latency_ps_(pcie::ns_to_ps(link.latency_ns)),
      credit_update_ps_(pcie::ns_to_ps(link.credit_update_ns)),
      replay_ps_(pcie::ns_to_ps(link.replay_ns)),
      service_ps_(pcie::ns_to_ps(config.host.root_complex_ns + config.host.memory_latency_ns +
                                 config.host.iommu_ns) + beyond_ps),
      up_clock_(pcie::tlp_ps_per_byte(params_)),
      down_clock_(pcie::tlp_ps_per_byte(params_)),
      up_(shared ? kSharedHistory : pcie::Serializer::kDefaultMaxIntervals),
      down_(shared ? kSharedHistory : pcie::Serializer::kDefaultMaxIntervals),
      requests_(shared ? kSharedHistory : pcie::Serializer::kDefaultMaxIntervals),
      posted_(link.host_rx.posted_header, link.host_rx.posted_data,
              shared ? kSharedHistory : pcie::CreditPool::kDefaultMaxEvents),
      nonposted_(link.host_rx.nonposted_header, link.host_rx.nonposted_data,
                 shared ? kSharedHistory : pcie::CreditPool::kDefaultMaxEvents),
      checker_(params_, !debug_hooks().lenient_checker),
      hooks_(debug_hooks()),
      mwr_overhead_(pcie::tlp_overhead_bytes(params_, TlpType::kMWr)),
      cpld_overhead_(pcie::tlp_overhead_bytes(params_, TlpType::kCplD)),
      rng_(config.seed ^ 0x9e3779b97f4a7c15ull ^ (salt * 0xbf58476d1ce4e5b9ull)) {
  device_side.register_b_transport(this, &PcieLink::b_transport);
  if (params_.dllp_overhead) {
    // A symbol time carries one byte on each lane; a DLLP takes 8 bytes of the whole link.
    const pcie::PsPerByte raw = pcie::raw_ps_per_byte(params_);
    const double symbol_ps = raw.value() * params_.lanes;
    dllps_per_ps_ = 1.0 / (pcie::ack_limit_symbols(params_.generation, params_.lanes, params_.mps) * symbol_ps) +
                    1.0 / (pcie::fc_update_symbols(params_.generation, params_.lanes, params_.mps) * symbol_ps);
    dllp_batch_ps_ = raw.ceil_ps(std::uint64_t{pcie::kDllpBytes} * kDllpBatch);
  }
  checker_.set_capacity(ProtocolChecker::Pool::kPosted, link.host_rx.posted_header, link.host_rx.posted_data);
  checker_.set_capacity(ProtocolChecker::Pool::kNonPosted, link.host_rx.nonposted_header,
                        link.host_rx.nonposted_data);
}

void PcieLink::prune(Ps ps) {
  up_.prune(ps);
  requests_.prune(ps);
  for (pcie::PostedOrder& o : posted_up_) o.prune(ps);
  down_.prune(ps);
  posted_.prune(ps);
  nonposted_.prune(ps);
  checker_.prune(ps);
}

std::uint32_t PcieLink::replays_for(std::uint64_t tlps) {
  const double p = link_.lcrc_error_rate;
  if (p <= 0) return 0;
  std::uint32_t n = 0;
  // Deterministic: the generator is seeded from the configuration and drawn in call order.
  if (tlps <= 64) {
    for (std::uint64_t i = 0; i < tlps; ++i) n += uniform_(rng_) < p ? 1 : 0;
  } else {
    const double expected = p * static_cast<double>(tlps);
    n = static_cast<std::uint32_t>(expected);
    n += uniform_(rng_) < expected - n ? 1 : 0;
  }
  counters_.replays += n;
  return n;
}

void PcieLink::trace_tlps(TraceWriter& trace, const std::string& owner) {
  trace_ = &trace;
  trace_pid_ = trace.process(owner.empty() ? std::string("PCIe link") : "PCIe link (" + owner + ")");
  up_track_ = trace.thread(trace_pid_, "up (device to host)").tid;
  down_track_ = trace.thread(trace_pid_, "down (host to device)").tid;
}

PcieLink::Direction PcieLink::up() noexcept {
  return Direction{up_clock_, up_, counters_.up_bytes, up_track_, up_debt_, dllps_owed_up_, counters_.dllps_down,
                   down_debt_, down_track_};
}

PcieLink::Direction PcieLink::down() noexcept {
  return Direction{down_clock_, down_, counters_.down_bytes, down_track_, down_debt_, dllps_owed_down_,
                   counters_.dllps_up, up_debt_, up_track_};
}

void PcieLink::owe(WireDebt& debt, Ps at, Ps d) {
  if (debt.ps == 0 || at < debt.since) debt.since = at;
  debt.ps += d;
}

Ps PcieLink::send(Direction& dir, Ps earliest, std::uint64_t wire_bytes, const char* what, Ps* busy) {
  const Ps d = dir.clock.duration_ps(wire_bytes);
  if (busy) *busy = d;
  dir.wire_bytes += wire_bytes;
  // What went out between this wire's TLPs lately goes before this one (WireDebt).
  Ps owed = 0;
  if (dir.debt.ps != 0 && earliest + kDebtWindowPs >= dir.debt.since) {
    if (earliest <= dir.debt.since + kDebtWindowPs) owed = dir.debt.ps;
    dir.debt.ps = 0;
  }
  const Ps start = dir.wire.reserve(earliest, owed + d) + owed;
  if (trace_) {
    trace_->complete(what, "tlp", double(start) / 1000.0, double(d) / 1000.0, TraceTrack{trace_pid_, dir.track},
                     {{"wire_bytes", wire_bytes}});
  }
  acknowledge(dir, d, start + d + latency_ps_);
  return start + d;
}

void PcieLink::acknowledge(Direction& dir, Ps busy, Ps arrival) {
  if (dllps_per_ps_ == 0) return;
  dir.dllps_owed += static_cast<double>(busy) * dllps_per_ps_;
  if (dir.dllps_owed < kDllpBatch) return;
  const auto batches = static_cast<std::uint64_t>(dir.dllps_owed / kDllpBatch);
  dir.dllps_owed -= static_cast<double>(batches * kDllpBatch);
  dir.dllps_sent += batches * kDllpBatch;
  owe(dir.reverse, arrival, batches * dllp_batch_ps_);
}

Ps PcieLink::send_up(Ps earliest, std::uint64_t wire_bytes, const char* what) {
  Direction dir = up();
  return send(dir, earliest, wire_bytes, what);
}

Ps PcieLink::send_request(Ps earliest, std::uint64_t wire_bytes, const char* what) {
  // Timed on the requests' lane, which owes nothing itself: the writes owe its time (requests_).
  WireDebt none;
  Direction lane{up_clock_, requests_, counters_.up_bytes, up_track_, none, dllps_owed_up_, counters_.dllps_down,
                 down_debt_, down_track_};
  Ps d = 0;
  const Ps sent = send(lane, earliest, wire_bytes, what, &d);
  owe(up_debt_, sent - d, d);
  return sent;
}

Ps PcieLink::send_down(Ps earliest, std::uint64_t wire_bytes, const char* what) {
  Direction dir = down();
  return send(dir, earliest, wire_bytes, what);
}

pcie::PostedOrder& PcieLink::posted_up(std::uint16_t requester) {
  if (posted_up_.size() <= requester) posted_up_.resize(std::size_t{requester} + 1);
  return posted_up_[requester];
}

Ps PcieLink::carry(bool down, std::uint64_t addr, std::uint64_t len, Ps earliest) {
  const pcie::WireBytes w = pcie::write_wire(params_, addr, len);
  const Ps sent =
      down ? send_down(earliest, w.upstream, "peer MWr burst") : send_up(earliest, w.upstream, "peer MWr burst");
  (down ? counters_.payload_down : counters_.payload_up) += len;
  return sent + latency_ps_;
}

Ps PcieLink::forward(tlm::tlm_generic_payload& gp, Ps first, Ps arrival) {
  TlpExtension* ext = gp.get_extension<TlpExtension>();
  ext->first_ps = first;
  ext->taken_ps = 0;
  sc_time d = delay_until(arrival);
  host_side->b_transport(gp, d);
  return std::max(arrival, Ps{ext->taken_ps});
}

void PcieLink::b_transport(tlm::tlm_generic_payload& gp, sc_time& delay) {
  // Nothing is ever booked before the present (decoupled initiators run ahead of it, never
  // behind), so history before it can go: it keeps the calendars short and their searches cheap.
  if ((++counters_.transactions & 63) == 0) prune(now_ps());
  const Ps t0 = now_ps() + to_ps(delay);
  if (gp.is_read()) read(gp, t0, delay);
  else write(gp, t0, delay);
}

void PcieLink::read(tlm::tlm_generic_payload& gp, Ps t0, sc_time& delay) {
  TlpExtension* ext = gp.get_extension<TlpExtension>();
  const std::uint64_t addr = gp.get_address(), len = gp.get_data_length();
  const std::uint64_t mrd_wire = pcie::tlp_wire_bytes(params_, TlpType::kMRd, 0);
  if (!ext->burst) {
    checker_.request(TlpType::kMRd, addr, len);
    const pcie::CreditGrant g = nonposted_.acquire(t0, 1, 0);
    if (g.at_ps > t0) ++counters_.credit_stalls, counters_.credit_stall_ps += g.at_ps - t0;
    // Behind the posted writes its device queued before it, on the same wire.
    Ps earliest = g.at_ps;
    if (const Ps behind = posted_up(ext->requester).clear_at(t0); behind > earliest) {
      ++counters_.request_holds;
      counters_.request_hold_ps += behind - earliest;
      earliest = behind;
    }
    Ps sent = send_request(earliest, mrd_wire, "MRd");
    std::uint32_t replays = replays_for(1);
    if (ext->force_replay) ++replays, ++counters_.replays;
    if (replays) sent = send_request(sent + replay_ps_, mrd_wire, "MRd (replay)");
    const Ps arrival = sent + latency_ps_;
    nonposted_.release(g, arrival + credit_update_ps_);
    credits_held(ProtocolChecker::Pool::kNonPosted, g.at_ps, arrival + credit_update_ps_, 1, 0);
    ++counters_.mrd;
    if (ext->drop_completion) {  // an injected fault: the request is lost, no completion comes
      ext->replays = replays;
      delay = delay_until(arrival);
      return;
    }
    forward(gp, arrival, arrival);
    Ps t = std::max(ext->ready_ps, arrival);
    if (ext->status != CompletionStatus::kSuccess) {  // a Cpl without data
      t = send_down(t, pcie::tlp_wire_bytes(params_, TlpType::kCpl, 0), "Cpl");
      checker_.completion_order(LinkDirection::kDown, t, t + latency_ps_, "Cpl");
      ++counters_.cpl;
    } else {
      // Walk the completions without building a list: this is the hottest loop of TLP fidelity.
      const std::uint32_t limit = pcie::completion_limit(params_);
      for (std::uint64_t a = addr, left = len; left > 0;) {
        std::uint64_t n = pcie::completion_step(a, left, params_.rcb, limit);
        if (hooks_.completions_off_rcb && a == addr) n = std::min<std::uint64_t>(n, params_.rcb / 2);
        checker_.completion(a, n, n == left);
        // Overhead + payload (not tlp_wire_bytes(), which refuses an oversized TLP: the checker
        // reports those, and a lenient one lets the run go on).
        const std::uint64_t wire = cpld_overhead_ + n;
        t = send_down(t, wire, "CplD");
        if (replays_for(1)) t = send_down(t + replay_ps_, wire, "CplD (replay)"), ++replays;
        checker_.completion_order(LinkDirection::kDown, t, t + latency_ps_, "CplD");
        ++counters_.cpld;
        a += n;
        left -= n;
      }
      counters_.payload_down += len;
    }
    ext->replays = replays;
    delay = delay_until(t + latency_ps_);
    return;
  }

  // Burst: N requests with T tags in flight. Unloaded round trip of one request r0 = its MRd on
  // the wire + latency + completer service + its completions + latency; the run ends when the
  // downstream serializer has carried every completion, or after ceil(N / T) round trips when the
  // tags, not the wire, are the limit (Little's law), whichever is later.
  const pcie::WireBytes w = pcie::read_wire(params_, addr, len);
  const std::uint64_t n = w.upstream_tlps;
  const std::uint64_t first_len = std::min<std::uint64_t>(len, pcie::request_step(addr, len, params_.mrrs));
  const pcie::WireBytes w1 = pcie::read_wire(params_, addr, first_len);
  std::uint32_t replays = replays_for(w.upstream_tlps + w.downstream_tlps);
  if (ext->force_replay) ++replays, ++counters_.replays;
  ext->replays = replays;
  const Ps u1 = up_clock_.rate().ceil_ps(w1.upstream);
  const Ps d1 = down_clock_.rate().ceil_ps(w1.downstream);
  const Ps up_end = send_request(t0, w.upstream, "MRd burst");
  const Ps first_sent = up_end - up_clock_.rate().ceil_ps(w.upstream) + u1;
  const Ps arrival = first_sent + latency_ps_;
  counters_.mrd += n;
  forward(gp, arrival, arrival);
  Ps last;
  if (ext->status != CompletionStatus::kSuccess) {
    last = send_down(std::max(ext->ready_ps, arrival), pcie::tlp_wire_bytes(params_, TlpType::kCpl, 0), "Cpl");
    ++counters_.cpl;
  } else {
    // The unloaded round trip: a completer that is busy delays the start (ready_ps), not the
    // spacing of the waves.
    const Ps r0 = u1 + latency_ps_ + service_ps_ + d1 + latency_ps_;
    const std::uint64_t tags = std::max<std::uint32_t>(1, ext->tags);
    const std::uint64_t waves = (n + tags - 1) / tags;
    const Ps wire_time = down_clock_.rate().ceil_ps(w.downstream) + replays * replay_ps_;
    const Ps tag_time = (waves - 1) * r0 + d1;
    const Ps d = std::max(wire_time, tag_time);
    counters_.down_bytes += w.downstream;
    const Ps start = down_.reserve(ext->ready_ps, d);
    last = start + d;
    Direction dir = down();
    acknowledge(dir, wire_time, start + latency_ps_);
    if (trace_) {
      trace_->complete("CplD burst", "tlp", double(start) / 1000.0, double(d) / 1000.0,
                       TraceTrack{trace_pid_, down_track_}, {{"wire_bytes", w.downstream}, {"tlps", w.downstream_tlps}});
    }
    counters_.cpld += w.downstream_tlps;
    counters_.payload_down += len;
  }
  checker_.completion_order(LinkDirection::kDown, last, last + latency_ps_, "CplD burst");
  delay = delay_until(last + latency_ps_);
}

void PcieLink::write(tlm::tlm_generic_payload& gp, Ps t0, sc_time& delay) {
  TlpExtension* ext = gp.get_extension<TlpExtension>();
  const std::uint64_t addr = gp.get_address(), len = gp.get_data_length();
  const bool single = !ext->burst || ext->msi;  // one TLP, not a burst's run of them
  if (single) checker_.request(TlpType::kMWr, addr, len);
  const std::uint32_t data = single ? static_cast<std::uint32_t>(pcie::data_credits(len)) : 0;
  // Posted credits, held until the receiver takes the TLP. The deliberate bug neither waits for
  // credits nor takes them. The grant is built in place: copied whole right after its fields
  // were written, it stalled on store forwarding.
  const bool credited = single && !hooks_.ignore_posted_credits;
  const pcie::CreditGrant grant = credited ? posted_.acquire(t0, 1, data) : pcie::CreditGrant{};
  Ps sent, first;
  if (single) {
    const std::uint64_t wire = mwr_overhead_ + len;
    std::uint32_t replays = replays_for(1);
    if (ext->force_replay) ++replays, ++counters_.replays;
    Ps start = t0;
    if (credited) {
      if (grant.at_ps > t0) ++counters_.credit_stalls, counters_.credit_stall_ps += grant.at_ps - t0;
      start = grant.at_ps;
    }
    sent = send_up(start, wire, ext->msi ? "MSI-X" : "MWr");
    if (replays) sent = send_up(sent + replay_ps_, wire, "MWr (replay)");
    // Read requests its device queues from now on wait for it. (A burst's run is not recorded:
    // its TLPs are queued as they go, so a request waits for at most one, which burst fidelity
    // does not charge.)
    posted_up(ext->requester).add(t0, sent);
    first = sent;
    ext->replays = replays;
    ++counters_.mwr;
  } else {
    const pcie::WireBytes w = pcie::write_wire(params_, addr, len);
    std::uint32_t replays = replays_for(w.upstream_tlps);
    if (ext->force_replay) ++replays, ++counters_.replays;
    ext->replays = replays;
    sent = send_up(t0, w.upstream, "MWr burst") + replays * replay_ps_;
    // The run's first TLP has left once its share of the run's wire time has passed.
    const Ps whole = up_clock_.rate().ceil_ps(w.upstream);
    first = sent - std::min(sent, whole) + whole / std::max<std::uint64_t>(1, w.upstream_tlps);
    counters_.mwr += w.upstream_tlps;
  }
  counters_.payload_up += len;
  const Ps arrival = sent + latency_ps_;
  checker_.posted_write(LinkDirection::kUp, sent, arrival);
  // The receiver's buffer frees (and the credits start back) when it has passed the TLP on: at
  // once at the root complex, later at a switch whose uplink is busy.
  const Ps taken = forward(gp, first + latency_ps_, arrival);
  if (credited) {
    posted_.release(grant, taken + credit_update_ps_);
    credits_held(ProtocolChecker::Pool::kPosted, grant.at_ps, taken + credit_update_ps_, 1, data);
  } else if (single) {
    credits_held(ProtocolChecker::Pool::kPosted, t0, taken + credit_update_ps_, 1, data);
  }
  ext->ready_ps = std::max<Ps>(ext->ready_ps, arrival);  // when the write takes effect at the host
  delay = delay_until(sent);
}

void PcieLink::observe(StateProbe& probe, const std::string& scope, int trace_pid) {
  probe_ = &probe;
  const char* counter = trace_pid ? "posted credits in use" : "";
  levels_[0] = probe.level(scope, "posted_header_credits", trace_pid, counter, "header");
  levels_[1] = probe.level(scope, "posted_data_credits", trace_pid, counter, "data");
  levels_[2] = probe.level(scope, "nonposted_header_credits", trace_pid, trace_pid ? "non-posted credits in use" : "",
                           "header");
}

void PcieLink::credits_held(ProtocolChecker::Pool pool, Ps from, Ps until, std::uint32_t header, std::uint32_t data) {
  checker_.credits_held(pool, from, until, header, data);
  if (!probe_) return;
  const bool posted = pool == ProtocolChecker::Pool::kPosted;
  const int h = levels_[posted ? 0 : 2];
  probe_->add(h, from, header);
  probe_->add(h, until, -static_cast<std::int64_t>(header));
  if (posted && data) {
    probe_->add(levels_[1], from, data);
    probe_->add(levels_[1], until, -static_cast<std::int64_t>(data));
  }
}

}  // namespace spyre_dma::model
