// The clock of the RTL data path and its transactors, one cycle at a time (see rtl_data_path.hpp).
#include "rtl_state.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace spyre_dma::rtl {

using namespace sc_core;
using model::now_ps;
using model::to_ps;

namespace {
constexpr Ps kQuantumPs = 2'000'000;  // run-ahead of the clock before it yields, as the pipelines
constexpr unsigned kWideWords = RtlDataPath::kDataBytes / 4;
constexpr Ps kTxBacklogPs = 32'000;  // about 2 KiB at Gen5 x16

Ps align_up(Ps t) { return (t + RtlDataPath::kClockPs - 1) / RtlDataPath::kClockPs * RtlDataPath::kClockPs; }

template <std::size_t N>
void put_bytes(VlWide<N>& w, const std::uint8_t* src, std::size_t n) {
  constexpr std::size_t kAll = sizeof w.m_storage;
  if (n >= kAll) {  // a whole beat, the common case: a fixed-size copy the compiler inlines
    std::memcpy(w.m_storage, src, kAll);
    return;
  }
  std::memset(w.m_storage, 0, kAll);
  std::memcpy(w.m_storage, src, n);
}
}  // namespace

// ---------------------------------------------------------------------------------------------
// Fault injection: the model's fault injector, asked at the transactors' events
// ---------------------------------------------------------------------------------------------
model::TlpFaults RtlDataPath::Impl::read_faults(Read& r) {
  using model::FaultKind;
  model::TlpFaults f;
  r.error = false;
  r.poisoned_cpl = SIZE_MAX;
  const bool may_take_armed = first_tlp_may_take_armed(0);
  if (!faults.enabled()) return f;
  const model::FaultInjector::ReadFaults d = faults.read_faults(r.cplds.size(), may_take_armed);
  f.force_replay = d.replay;
  if (d.poisoned_cpl) r.poisoned_cpl = static_cast<std::size_t>(*d.poisoned_cpl);
  if (d.lost == FaultKind::kDroppedCompletion) f.drop_completion = true;
  if (d.lost == FaultKind::kUnsupportedRequest) f.status = model::CompletionStatus::kUnsupportedRequest;
  if (d.lost == FaultKind::kCompleterAbort) f.status = model::CompletionStatus::kCompleterAbort;
  return f;
}

// ---------------------------------------------------------------------------------------------
// The clock
// ---------------------------------------------------------------------------------------------
void RtlDataPath::clock_thread() {
  Impl& s = *impl_;
  Vspyre_dma_core& c = *s.core;
  const auto edge = [&] {
    c.clk = 0;
    c.eval();
    c.clk = 1;
    c.eval();
  };
  // Reset and configuration happen before time 0 (the cycles are not counted in simulated time).
  c.rst_n = 0;
  edge();
  c.rst_n = 1;
  const std::uint64_t regs[] = {
      s.config.device.memory_bytes, s.config.device.max_cb_bytes, s.config.link.mps, s.config.link.mrrs,
      s.config.device.read_tags,
      static_cast<std::uint64_t>(s.config.faults.completion_timeout_ns * 1000.0 / double(kClockPs))};
  for (unsigned a = 0; a < 6; ++a) {
    c.cfg_valid = 1;
    c.cfg_addr = static_cast<CData>(a);
    c.cfg_data = regs[a];
    edge();
  }
  c.cfg_valid = 0;
  for (unsigned i = 0; i <= kTags && !c.dmai_cb_ready; ++i) edge();  // the tag free list fills

  StreamChecker::Channel ch_cbi("dmai_cb"), ch_cbo("dmao_cb"), ch_rq("rq"), ch_rc("rc"), ch_dw("dw"),
      ch_drq("drq"), ch_dr("dr"), ch_dc("dc"), ch_rb("rb"), ch_atsi("dmai_ats"), ch_atso("dmao_ats");
  std::uint32_t words[4 + 2 * kWideWords];

  for (;;) {
    const Ps now = now_ps();
    if (s.t < now) s.t = align_up(now);
    if (s.quiet()) {
      const Ps next = s.next_cb_ps();
      if (next == ~Ps{0}) {
        wait(s.work);
        continue;
      }
      const Ps to = std::max(s.t, align_up(next));
      counters_.skipped_cycles += (to - s.t) / kClockPs;
      s.t = to;
    }
    // --- inputs for this cycle (transactor state only: nothing depends on the RTL's outputs) ---
    for (unsigned p = 0; p < 2; ++p) {
      const bool v = !s.cbs[p].empty() && s.cbs[p].front().at_ps <= s.t;
      auto& data = p == 0 ? c.dmai_cb_data : c.dmao_cb_data;
      if (v) put_bytes(data, s.cbs[p].front().raw.data(), hw::kCbBytes);
      (p == 0 ? c.dmai_cb_valid : c.dmao_cb_valid) = v;
    }
    c.dmai_ats_ready = 1;
    c.dmao_ats_ready = 1;
    c.dmai_ats_rsp_valid = s.ats_answer[0] >= 0;
    c.dmai_ats_rsp_ok = s.ats_answer[0] == 1;
    c.dmao_ats_rsp_valid = s.ats_answer[1] >= 0;
    c.dmao_ats_rsp_ok = s.ats_answer[1] == 1;
    // The hard IP's transmit buffer: posted writes are taken while the wire's backlog of them is
    // under kTxBacklogPs, so the link never idles between back-to-back MWr. A read request is
    // taken at once and booked on the link behind that backlog, as the SystemC data path books it.
    c.rq_ready = s.t + kTxBacklogPs >= s.rq_free_ps && s.t >= s.hooks.hold_posted_writes_until_ps;
    c.rq_np_ready = 1;
    // Completion beats: the read being presented, else the earliest one whose data is in.
    if (s.current_read < 0 && !s.ready_reads.empty() && s.ready_reads.begin()->first.first <= s.t) {
      s.current_read = static_cast<int>(s.ready_reads.begin()->second);
      s.ready_reads.erase(s.ready_reads.begin());
    }
    std::uint32_t rc_len = 0;
    if (s.current_read >= 0) {
      const Impl::Read& r = s.reads[static_cast<unsigned>(s.current_read)];
      c.rc_valid = 1;
      c.rc_tag = static_cast<CData>(s.current_read);
      if (r.error) {
        c.rc_status = 1;
        c.rc_bytes = 0;
        c.rc_offset = 0;
        c.rc_eop = 1;
      } else {
        const model::AddressRange& cpl = r.cplds[r.cpl];
        const std::uint64_t off = cpl.addr + std::uint64_t(r.beat) * kDataBytes;
        rc_len = static_cast<std::uint32_t>(std::min<std::uint64_t>(kDataBytes, cpl.addr + cpl.len - off));
        c.rc_status = 0;
        c.rc_offset = static_cast<SData>(off);
        c.rc_bytes = static_cast<CData>(rc_len);
        c.rc_eop = off + rc_len == cpl.addr + cpl.len;
        put_bytes(c.rc_data, r.data.data() + off, rc_len);
        if (s.hooks.glitch_stalled_completions && (++s.glitch & 1)) c.rc_offset = static_cast<SData>(off ^ 128);
      }
      c.rc_poisoned = !r.error && r.cpl == r.poisoned_cpl;
    } else {
      c.rc_valid = 0;
    }
    c.dw_ready = !(s.hooks.stall_device_writes && (s.cycle & 1));
    c.dw_ack = !s.write_acks.empty() && s.write_acks.front() <= s.t;
    c.dc_ready = 1;
    c.dc_ack = !s.command_acks.empty() && *s.command_acks.begin() <= s.t;
    c.drq_ready = 1;
    std::uint32_t dr_len = 0;
    if (!s.pieces.empty() && s.pieces.front().ready_ps <= s.t) {
      Impl::Piece& pc = s.pieces.front();
      const std::size_t off = std::size_t(pc.beat) * kDataBytes;
      dr_len = static_cast<std::uint32_t>(std::min<std::size_t>(kDataBytes, pc.data.size() - off));
      c.dr_valid = 1;
      c.dr_bytes = static_cast<CData>(dr_len);
      c.dr_last = off + dr_len == pc.data.size();
      put_bytes(c.dr_data, pc.data.data() + off, dr_len);
    } else {
      c.dr_valid = 0;
    }
    c.rb_ready = 1;
    c.timestamp = s.t;

    // --- settle, sample the handshakes of this edge, clock it ---
    c.clk = 0;
    c.eval();
    const std::uint64_t cy = s.cycle;
    const bool cbi = c.dmai_cb_valid && c.dmai_cb_ready, cbo = c.dmao_cb_valid && c.dmao_cb_ready;
    const bool atsi = c.dmai_ats_valid && c.dmai_ats_ready, atso = c.dmao_ats_valid && c.dmao_ats_ready;
    const bool rq_taken_ready = c.rq_type != 0 ? c.rq_ready : c.rq_np_ready;
    const bool rq = c.rq_valid && rq_taken_ready, rcf = c.rc_valid && c.rc_ready, dw = c.dw_valid && c.dw_ready;
    const bool drq = c.drq_valid && c.drq_ready, dr = c.dr_valid && c.dr_ready, dc = c.dc_valid && c.dc_ready;
    const bool rb = c.rb_valid && c.rb_ready;
    // A pipeline that handed the RTL a CB goes on at the first cycle the RTL is ready again.
    const bool cb_ready[2] = {c.dmai_cb_ready != 0, c.dmao_cb_ready != 0};
    bool handed_back = false;
    for (unsigned p = 0; p < 2; ++p) {
      if (!s.taken[p] || !cb_ready[p]) continue;
      s.taken[p] = false;
      handed_back = true;
      taken_[p].queue.push_back(s.t);
      taken_[p].ready.notify(SC_ZERO_TIME);
    }
    // The checker sees each stream's header fields and its first data words, packed only on the
    // cycles it reads them.
    const auto pack = [&](std::initializer_list<std::uint64_t> fields, const std::uint32_t* data, std::size_t n) {
      std::size_t k = 0;
      for (std::uint64_t f : fields) words[k++] = static_cast<std::uint32_t>(f ^ (f >> 32));
      if (n != 0) std::memcpy(words + k, data, n * sizeof(std::uint32_t));
      return std::make_pair(static_cast<const std::uint32_t*>(words), k + n);
    };
    const auto watch = [&](StreamChecker::Channel& ch, bool valid, bool ready, auto&& payload) {
      if (!StreamChecker::wants_payload(ch, valid, ready)) return checker_.observe(ch, cy, valid, ready, nullptr, 0);
      const auto [p, n] = payload();
      checker_.observe(ch, cy, valid, ready, p, n);
    };
    const auto raw = [](const std::uint32_t* p, std::size_t n) { return [=] { return std::make_pair(p, n); }; };
    watch(ch_cbi, c.dmai_cb_valid, c.dmai_cb_ready, raw(c.dmai_cb_data.m_storage, 32));
    watch(ch_cbo, c.dmao_cb_valid, c.dmao_cb_ready, raw(c.dmao_cb_data.m_storage, 32));
    watch(ch_atsi, c.dmai_ats_valid, c.dmai_ats_ready, [&] { return pack({c.dmai_ats_iova, c.dmai_ats_bytes}, nullptr, 0); });
    watch(ch_atso, c.dmao_ats_valid, c.dmao_ats_ready, [&] { return pack({c.dmao_ats_iova, c.dmao_ats_bytes}, nullptr, 0); });
    watch(ch_rq, c.rq_valid, rq_taken_ready, [&] {
      return pack({c.rq_type, c.rq_sop, c.rq_eop, c.rq_addr, c.rq_len, c.rq_tag, c.rq_bytes}, c.rq_data.m_storage,
                  kWideWords);
    });
    watch(ch_rc, c.rc_valid, c.rc_ready, [&] {
      return pack({c.rc_tag, c.rc_offset, c.rc_bytes, c.rc_status, c.rc_eop}, c.rc_data.m_storage, kWideWords);
    });
    watch(ch_dw, c.dw_valid, c.dw_ready,
          [&] { return pack({c.dw_addr, c.dw_bytes, c.dw_last}, c.dw_data.m_storage, kWideWords); });
    watch(ch_drq, c.drq_valid, c.drq_ready, [&] { return pack({c.drq_addr, c.drq_len}, nullptr, 0); });
    watch(ch_dr, c.dr_valid, c.dr_ready, [&] { return pack({c.dr_bytes, c.dr_last}, c.dr_data.m_storage, kWideWords); });
    watch(ch_dc, c.dc_valid, c.dc_ready,
          [&] { return pack({c.dc_kind, c.dc_dst, c.dc_src, c.dc_len, c.dc_pattern}, nullptr, 0); });
    watch(ch_rb, c.rb_valid, c.rb_ready, [&] {
      return pack({c.rb_pipe, c.rb_tag, c.rb_status, c.rb_error, c.rb_field, c.rb_detail, c.rb_bytes}, nullptr, 0);
    });
    // Capture what the edge transfers before the registers move.
    struct Rq {
      bool mwr, sop, eop;
      std::uint64_t addr;
      std::uint32_t len, tag, bytes;
    } q{c.rq_type != 0, c.rq_sop != 0, c.rq_eop != 0, c.rq_addr, c.rq_len, c.rq_tag, c.rq_bytes};
    if (rq && q.mwr) {
      if (q.sop) {
        s.mwr.clear(), s.mwr_addr = q.addr, s.mwr_len = q.len, s.mwr_sop_ps = s.t;
        s.mwr_may_take_armed = s.first_tlp_may_take_armed(1);
      }
      const auto* bytes = reinterpret_cast<const std::uint8_t*>(c.rq_data.m_storage);
      s.mwr.insert(s.mwr.end(), bytes, bytes + q.bytes);
    }
    const std::uint64_t dw_addr = c.dw_addr;
    const std::uint32_t dw_bytes = c.dw_bytes;
    const bool dw_last = c.dw_last;
    if (dw) {
      if (s.burst.empty()) s.burst_addr = dw_addr;
      const auto* bytes = reinterpret_cast<const std::uint8_t*>(c.dw_data.m_storage);
      s.burst.insert(s.burst.end(), bytes, bytes + dw_bytes);
    }
    const std::uint64_t drq_addr = c.drq_addr;
    const std::uint32_t drq_len = c.drq_len;
    const bool dc_copy = c.dc_kind != 0;
    const std::uint64_t dc_dst = c.dc_dst, dc_src = c.dc_src;
    const std::uint32_t dc_len = c.dc_len, dc_pattern = c.dc_pattern;
    const std::uint64_t atsi_iova = c.dmai_ats_iova, atso_iova = c.dmao_ats_iova;
    const std::uint32_t atsi_bytes = c.dmai_ats_bytes, atso_bytes = c.dmao_ats_bytes;
    RtlAnswer resp;
    unsigned resp_pipe = 0;
    if (rb) {
      resp.end_ps = c.rb_end;
      resp.outcome.status = static_cast<hw::RbStatus>(c.rb_status);
      resp.outcome.error = static_cast<hw::ErrorKind>(c.rb_error);
      resp.outcome.field = static_cast<hw::CbField>(c.rb_field);
      resp.outcome.detail = c.rb_detail;
      resp.outcome.bytes = c.rb_bytes;
      resp_pipe = c.rb_pipe == 2 ? 1 : 0;
    }
    c.clk = 1;
    c.eval();
    if (s.vcd) s.vcd->dump(static_cast<std::uint64_t>(s.t));
    ++counters_.cycles;

    // --- the transactors act on what moved ---
    for (unsigned p = 0; p < 2; ++p) {
      if (!(p == 0 ? cbi : cbo)) continue;
      s.taken_armed[p] = s.cbs[p].front().armed;
      s.first_tlp_sent[p] = false;
      s.cbs[p].pop_front();
      s.taken[p] = true;
    }
    s.ats_answer = {-1, -1};
    // The IOMMU check (ATS): DMAI reads host memory, DMAO writes it. A translation the IOMMU
    // grants may still be refused by an injected fault (once per host-memory CB, as the SystemC
    // data path asks).
    auto ats = [&](unsigned pipe, std::uint64_t iova, std::uint32_t bytes, bool write) {
      const bool ok = static_cast<bool>(s.iommu.translate(iova, bytes, write));
      return ok && !(s.faults.enabled() && s.faults.iommu(s.taken_armed[pipe])) ? 1 : 0;
    };
    if (atsi) s.ats_answer[0] = ats(0, atsi_iova, atsi_bytes, false);
    if (atso) s.ats_answer[1] = ats(1, atso_iova, atso_bytes, true);
    if (rq && !q.mwr) {  // MRd: booked on the link now; its completions are presented as they arrive
      checker_.read_issued(cy, q.tag, q.len);
      Impl::Read& r = s.reads[q.tag];
      r.data.resize(q.len);
      r.cplds.clear();
      r.cpl = 0;
      r.beat = 0;
      std::uint64_t data_beats = 0;
      for (std::uint64_t a = q.addr, left = q.len; left > 0;) {  // how the completer cuts it
        const std::uint64_t n = s.host.completion_bytes(a, left);
        r.cplds.push_back(model::AddressRange{a - q.addr, n});
        data_beats += (n + kDataBytes - 1) / kDataBytes;
        a += n;
        left -= n;
      }
      const model::TlpFaults f = s.read_faults(r);
      s.host.tag_issued(q.tag, s.t);
      const model::HostPort::Read read = s.host.read(q.addr, r.data.data(), q.len, s.t, false, &f);
      ++counters_.read_requests;
      if (f.drop_completion) {
        // No completion ever comes: the RTL's completion timer ends the CB and frees the tag.
        s.host.tag_retired(q.tag, s.t + s.completion_timeout_ps);
        checker_.read_lost(q.tag);
      } else {
        const Ps arrived = read.done_ps;
        r.error = !read.ok();
        const std::uint64_t beats = r.error ? 1 : data_beats;
        const Ps ready = std::max(s.t + kClockPs, align_up(arrived - std::min<Ps>(arrived, beats * kClockPs)));
        s.ready_reads.emplace(std::make_pair(ready, s.read_order++), q.tag);
      }
    }
    if (rq && q.mwr && q.eop) {  // MWr: posted, booked from its first beat
      if (s.mwr.size() != s.mwr_len) {
        throw StreamProtocolError("RTL stream violation [MWr length] on rq at cycle " + std::to_string(cy) + ": " +
                                  std::to_string(s.mwr.size()) + " bytes for a header of " +
                                  std::to_string(s.mwr_len));
      }
      // An armed LCRC error may hit the first MWr of a CB; the RTL never poisons its own writes, so
      // an armed poisoned fault waits for a read's completions.
      model::TlpFaults f;
      f.force_replay = s.mwr_may_take_armed && s.faults.enabled() && s.faults.armed_tlp(model::FaultKind::kLcrc, false);
      const model::HostPort::Write w = s.host.write(s.mwr_addr, s.mwr.data(), s.mwr_len, s.mwr_sop_ps, false, false, &f);
      const Ps sent = w.sent_ps;
      s.rq_free_ps = sent;
      s.dmao_sent_ps = std::max(s.dmao_sent_ps, sent);
      s.dmao_landed_ps = std::max<Ps>(s.dmao_landed_ps, w.landed_ps);
      s.mwr.clear();
      ++counters_.write_tlps;
    }
    if (rcf) {
      const unsigned tag = c.rc_tag;
      Impl::Read& r = s.reads[tag];
      checker_.completion(cy, tag, rc_len, r.error);
      ++counters_.completion_beats;
      bool done = r.error;
      if (!r.error && ++r.beat * std::uint64_t(kDataBytes) >= r.cplds[r.cpl].len) {
        r.beat = 0;
        done = ++r.cpl == r.cplds.size();
      }
      if (done) {
        s.host.tag_retired(tag, s.t);
        s.current_read = -1;
      }
    }
    if (dw && dw_last) {  // one burst (a CplD's data) into device memory
      const Ps written = s.memory.write(s.burst_addr, s.burst.data(), s.burst.size(), s.t);
      Ps ack = std::max(s.t + kClockPs, align_up(written));
      if (!s.write_acks.empty()) ack = std::max(ack, s.write_acks.back());
      s.write_acks.push_back(ack);
      s.burst.clear();
      ++counters_.memory_writes;
    }
    if (c.dw_ack) s.write_acks.pop_front();
    if (c.dc_ack) s.command_acks.erase(s.command_acks.begin());
    if (drq) {  // a piece of device memory for one MWr; in order behind the earlier ones
      Impl::Piece pc;
      pc.data.resize(drq_len);
      const Ps done = s.memory.read(drq_addr, pc.data.data(), drq_len, s.t);
      const Ps beats = (drq_len + kDataBytes - 1) / kDataBytes;
      pc.ready_ps = std::max(s.t + kClockPs, align_up(done - std::min<Ps>(done, beats * kClockPs)));
      if (!s.pieces.empty()) pc.ready_ps = std::max(pc.ready_ps, s.pieces.back().ready_ps);
      s.pieces.push_back(std::move(pc));
      ++counters_.memory_reads;
    }
    if (dr) {
      Impl::Piece& pc = s.pieces.front();
      if (std::size_t(++pc.beat) * kDataBytes >= pc.data.size()) s.pieces.pop_front();
    }
    if (dc) {  // fill or device copy: one command to the memory controller
      Impl::Command cmd;
      cmd.copy = dc_copy;
      cmd.dst = dc_dst;
      cmd.src = dc_src;
      cmd.len = dc_len;
      cmd.pattern = dc_pattern;
      cmd.backward = dc_copy && dc_dst > dc_src && dc_dst < dc_src + dc_len;
      cmd.next_ps = cmd.done_ps = s.t;
      s.command = cmd;
    }
    if (s.command && s.command->next_ps <= s.t) {  // its next burst
      Impl::Command& cmd = *s.command;
      const std::uint64_t n = std::min<std::uint64_t>(model::kMemoryBurstBytes, cmd.len - cmd.done_bytes);
      const std::uint64_t off = cmd.backward ? cmd.len - cmd.done_bytes - n : cmd.done_bytes;
      // Booked at the instant the last burst's bus time ended (not the cycle edge after it).
      const Ps at = std::max(cmd.next_ps, s.t - std::min<Ps>(s.t, kClockPs - 1));
      cmd.done_ps = cmd.copy ? s.memory.copy(cmd.dst + off, cmd.src + off, n, at)
                             : s.memory.fill(cmd.dst + off, cmd.pattern, n, at);
      cmd.done_bytes += n;
      cmd.next_ps = cmd.done_ps - std::min(cmd.done_ps, s.dram_latency_ps);
      if (cmd.done_bytes >= cmd.len) {
        s.command_acks.insert(std::max(s.t + kClockPs, align_up(cmd.done_ps)));
        s.command.reset();
      }
    }
    if (rb) {
      resp.rb_ps = s.t;
      if (resp_pipe == 1) {
        resp.sent_ps = s.dmao_sent_ps;
        resp.landed_ps = s.dmao_landed_ps;
      }
      answers_[resp_pipe].queue.push_back(resp);
      answers_[resp_pipe].ready.notify(SC_ZERO_TIME);
      if (on_answer_) on_answer_(resp_pipe == 0 ? hw::Pipeline::kDmai : hw::Pipeline::kDmao);
    }
    ++s.cycle;
    s.t += kClockPs;
    // Bounded run-ahead keeps the clock's bookings close to the pipelines' in time. A pipeline that
    // may go on hands its next CB in zero time once it runs: simulated time catches up with the
    // clock first, so that CB is not taken later than it arrives.
    const Ps now2 = now_ps();
    if (handed_back) wait(model::from_ps(s.t - now2));
    else if (s.t > now2 + kQuantumPs) wait(model::from_ps(s.t - now2 - kQuantumPs / 2));
  }
}

}  // namespace spyre_dma::rtl
