// The model's own data path (see systemc_data_path.hpp).
#include "device/systemc_data_path.hpp"

#include <algorithm>
#include <optional>

#include "pcie/link_math.hpp"
#include "base/rates.hpp"

namespace spyre_dma::model {

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

CbExecution& fail_first(CbExecution& run, hw::ErrorKind kind, hw::CbField at, std::uint64_t value) {
  if (run.outcome.good()) run.outcome = device_core::CbOutcome::fail(kind, at, value);
  return run;
}

}  // namespace

SystemcDataPath::SystemcDataPath(const DataPathContext& c)
    : config_(c.config),
      host_(c.host),
      memory_(c.memory),
      iommu_(c.iommu),
      faults_(c.faults),
      hooks_(debug_hooks()),
      layout_(c.config.device.memory_bytes),
      completion_timeout_ps_(pcie::ns_to_ps(c.config.faults.completion_timeout_ns)),
      dram_latency_ps_(pcie::ns_to_ps(c.config.device.dram_latency_ns)),
      tags_(c.config.device.read_tags),
      dma_engine_rate_(rate_for_gbps(c.config.device.dma_engine_gbps > 0 ? c.config.device.dma_engine_gbps : 1)),
      dma_engine_limited_(c.config.device.dma_engine_gbps > 0) {}

FetchTag SystemcDataPath::fetch_tag(hw::Pipeline, Ps at) {
  const pcie::TagGrant g = tags_.acquire(at);
  host_.tag_issued(g.tag, g.at_ps);
  return FetchTag{g.tag, g.at_ps};
}

void SystemcDataPath::fetch_done(hw::Pipeline, const FetchTag& tag, Ps at) {
  tags_.release(tag.tag, at);
  host_.tag_retired(tag.tag, at);
}

CbExecution SystemcDataPath::execute(hw::Pipeline pipeline, const hw::ControlBlock& cb, const std::uint8_t*, Ps t) {
  if (pipeline == hw::Pipeline::kDmai && cb.dmi.type != hw::DmaType::kImmediate) return device_side(cb, t);
  CbExecution run;
  const std::optional<HostCopy> copy = check_host_copy(cb, t, run);
  if (!copy) return run;
  return pipeline == hw::Pipeline::kDmao ? d2h(*copy, t, run) : h2d(*copy, t, run);
}

std::optional<SystemcDataPath::HostCopy> SystemcDataPath::check_host_copy(const hw::ControlBlock& cb, Ps t,
                                                                           CbExecution& run) {
  run.done_ps = run.issue_end_ps = t;
  // The device checks its access with the IOMMU (ATS) before moving data, so a fault leaves
  // memory untouched; the root complex checks every TLP again.
  device_core::CheckedCb checked = device_core::check_work(cb, layout_, &iommu_);
  if (checked.rejected) {
    run.outcome = *checked.rejected;
    return std::nullopt;
  }
  checked.work.window.release();
  if (faults_.enabled() && faults_.iommu()) {  // an injected fault
    run.outcome = device_core::CbOutcome::fail(hw::ErrorKind::kIommuFault, device_core::host_iova_field(cb),
                                               checked.work.iova);
    run.faulted = true;
    return std::nullopt;
  }
  return HostCopy{checked.work.device, checked.work.iova, checked.work.bytes};
}

std::uint8_t* SystemcDataPath::poisoned_buffer(std::uint64_t bytes) {
  // Never shrunk: a vector resized down and up again zeroes the regrown part, bytes the copy
  // overwrites at once.
  if (poisoned_data_.size() < bytes) poisoned_data_.resize(bytes);
  return poisoned_data_.data();
}

// A CB's TLPs are booked in a loop that runs ahead of the kernel's time. Past kRunAheadPs it
// yields until the kernel is half that behind, so that every other requester (the other
// pipeline, the other devices of a server) books its TLPs of the same stretch of time in between,
// as the link's and the switches' arbiters interleave them; booked a whole CB ahead, one device's
// CB would hold a shared uplink until it was over.
void SystemcDataPath::keep_pace(Ps at, Ps run_ahead) {
  // Called per TLP: the time first, the process kind (a handle built and dropped) only on a wait.
  if (!ahead(at, run_ahead)) return;
  if (sc_core::sc_get_current_process_handle().proc_kind() != sc_core::SC_THREAD_PROC_) return;
  sc_core::wait(from_ps(at - now_ps() - run_ahead / 2));
}

Ps SystemcDataPath::through_dma_engine(Ps t, std::uint64_t bytes, Ps done) {
  if (!dma_engine_limited_) return done;
  const Ps d = dma_engine_rate_.ceil_ps(bytes);
  return std::max(done, dma_engine_.reserve(t, d) + d);
}

void SystemcDataPath::burst_read_faults(std::uint64_t iova, std::uint64_t bytes, Ps t, CbExecution& run,
                                        TlpFaults& f) {
  // One call stands for every request: the decisions are those TLP fidelity would make, request
  // by request; the clean burst's timing stays (plus the timer of a lost completion).
  const std::uint32_t mrrs = config_.link.mrrs, rcb = config_.link.rcb;
  const std::uint32_t limit = pcie::completion_limit(pcie::link_params(config_.link));
  const auto fail = [&](FaultKind k, std::uint64_t at) {
    run.faulted = true;
    if (k == FaultKind::kDroppedCompletion) {
      fail_first(run, hw::ErrorKind::kCompletionTimeout, hw::CbField::kDmiHostIova, at);
      run.done_ps = std::max(run.done_ps, t + completion_timeout_ps_);
    } else {
      fail_first(run, hw::ErrorKind::kPcieError, hw::CbField::kDmiHostIova, at);
    }
  };
  bool poisoned_first = false;
  if (faults_.armed_tlp(FaultKind::kLcrc, true)) f.force_replay = true, run.faulted = true;
  for (FaultKind k : {FaultKind::kUnsupportedRequest, FaultKind::kCompleterAbort, FaultKind::kDroppedCompletion}) {
    if (faults_.armed_tlp(k, true)) faults_.count(k), fail(k, iova);
  }
  if (faults_.armed_tlp(FaultKind::kPoisoned, true)) {
    faults_.count(FaultKind::kPoisoned);
    poisoned_first = true;
    run.faulted = true;
    fail_first(run, hw::ErrorKind::kPcieError, hw::CbField::kDmiHostIova, iova);
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
      run.faulted = true;
      fail_first(run, hw::ErrorKind::kPcieError, hw::CbField::kDmiHostIova,
                 completion_address(iova, bytes, mrrs, rcb, limit, h.first + skip));
    }
  }
}

CbExecution SystemcDataPath::h2d(const HostCopy& copy, Ps t, CbExecution run) {
  const std::uint64_t bytes = copy.bytes, iova = copy.iova, phys = copy.phys;
  bool ok = true;
  Ps issue = t, done = t;
  if (config_.fidelity == Fidelity::kBurst) {
    TlpFaults f;
    if (faults_.enabled()) burst_read_faults(iova, bytes, t, run, f);
    // The bytes go from host memory to device memory in one copy (the read's direct form): a
    // burst moves a whole CB, and a copy through a buffer doubled the memory traffic of the
    // simulation's fastest mode.
    const HostPort::Read r = host_.read(iova, nullptr, bytes, t, true, &f);
    ok = r.ok();
    run.faulted = run.faulted || r.replays > 0;
    const pcie::LinkParams lp = pcie::link_params(config_.link);
    const pcie::PsPerByte wire = pcie::tlp_ps_per_byte(lp);
    const pcie::WireBytes w = pcie::read_wire(lp, iova, bytes);
    issue = t + wire.ceil_ps(w.upstream);
    // Device memory takes the data as the completions stream in, from the first one on.
    const Ps first = r.done_ps - std::min(r.done_ps - t, wire.ceil_ps(w.downstream));
    // The last request's data is written after it arrived, as in TLP fidelity.
    const Ps last_write = rate_for_gbps(config_.device.dram_gbps)
                              .ceil_ps(std::min<std::uint64_t>(bytes, config_.link.mrrs)) +
                          pcie::ns_to_ps(config_.device.dram_latency_ns);
    // A refused read (r.host null) writes nothing into device memory, as a failed request at TLP
    // fidelity does; the write's time is booked all the same.
    done = std::max(r.done_ps + last_write, memory_.write(phys, r.host, bytes, first));
    done = std::max(done, run.done_ps);  // a lost completion's timer
  } else {
    h2d_requests(iova, phys, bytes, t, run, issue, done, ok);
  }
  run.issue_end_ps = issue;
  run.done_ps = through_dma_engine(t, bytes, done);
  if (!ok) return fail_first(run, hw::ErrorKind::kPcieError, hw::CbField::kDmiHostIova, iova);
  if (!run.outcome.good()) return run;
  run.data_ps = done;
  run.outcome = device_core::CbOutcome::done(bytes);
  return run;
}

void SystemcDataPath::h2d_requests(std::uint64_t iova, std::uint64_t phys, std::uint64_t bytes, Ps t,
                                   CbExecution& run, Ps& issue, Ps& done, bool& ok) {
  const bool inject = faults_.enabled();
  const std::uint32_t mrrs = hooks_.reads_over_mrrs ? 2 * config_.link.mrrs : config_.link.mrrs;
  const std::uint32_t rcb = config_.link.rcb;
  const std::uint32_t limit = inject ? pcie::completion_limit(pcie::link_params(config_.link)) : 0;
  bool first_tlp = true;
  issue = done = t;
  for (std::uint64_t a = iova, left = bytes; left > 0;) {
    const pcie::Segment seg{a, pcie::request_step(a, left, mrrs)};
    a += seg.len;
    left -= seg.len;
    const pcie::TagGrant g = tags_.acquire(issue);
    if (g.at_ps > issue) ++counters_.tag_stalls, counters_.tag_stall_ps += g.at_ps - issue;
    host_.tag_issued(g.tag, g.at_ps);
    TlpFaults f;
    std::optional<FaultKind> lost;          // UR, CA or a dropped completion
    std::optional<std::uint64_t> poisoned;  // address of a poisoned CplD
    if (inject) {
      const FaultInjector::ReadFaults d =
          faults_.read_faults(pcie::count_completions(seg.addr, seg.len, rcb, limit), first_tlp);
      first_tlp = false;
      f.force_replay = d.replay;
      lost = d.lost;
      if (d.poisoned_cpl) poisoned = completion_address(seg.addr, seg.len, mrrs, rcb, limit, *d.poisoned_cpl);
      if (lost == FaultKind::kDroppedCompletion) f.drop_completion = true;
      if (lost == FaultKind::kUnsupportedRequest) f.status = CompletionStatus::kUnsupportedRequest;
      if (lost == FaultKind::kCompleterAbort) f.status = CompletionStatus::kCompleterAbort;
    }
    // The read's direct form: its bytes go from host memory to device memory in one copy.
    const HostPort::Read r = host_.read(seg.addr, nullptr, seg.len, g.at_ps, false, &f);
    const bool good = r.status == CompletionStatus::kSuccess && r.completed;
    Ps arrived = r.done_ps;
    if (f.drop_completion) arrived = g.at_ps + completion_timeout_ps_;  // the timer frees the tag
    tags_.release(g.tag, hooks_.release_tags_at_issue ? g.at_ps : arrived);
    host_.tag_retired(g.tag, arrived);
    ++counters_.read_requests;
    if (lost || poisoned || r.replays) run.faulted = true;
    if (lost == FaultKind::kDroppedCompletion) {
      fail_first(run, hw::ErrorKind::kCompletionTimeout, hw::CbField::kDmiHostIova, seg.addr);
    } else if (lost) {
      fail_first(run, hw::ErrorKind::kPcieError, hw::CbField::kDmiHostIova, seg.addr);
    } else if (poisoned) {  // the data of a poisoned completion is discarded
      fail_first(run, hw::ErrorKind::kPcieError, hw::CbField::kDmiHostIova, *poisoned);
    }
    if (!good || poisoned) {
      ok = ok && (good || lost);
      done = std::max(done, arrived);
    } else {
      done = std::max(done, memory_.write(phys + (seg.addr - iova), r.host, seg.len, arrived));
    }
    issue = g.at_ps;
    keep_pace(issue);
  }
}

CbExecution SystemcDataPath::d2h(const HostCopy& copy, Ps t, CbExecution run) {
  const std::uint64_t bytes = copy.bytes, iova = copy.iova, phys = copy.phys;
  bool ok = true;
  Ps sent = t, landed = 0;
  if (config_.fidelity == Fidelity::kBurst) {
    const Ps first = t + pcie::ns_to_ps(config_.device.dram_latency_ns);
    TlpFaults f;
    std::vector<pcie::Segment> poisoned;
    if (faults_.enabled()) {
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
        fail_first(run, hw::ErrorKind::kPcieError, hw::CbField::kDmoHostIova, poisoned.front().addr);
      }
    }
    // As each MWr at TLP fidelity (d2h_writes): the read and the writes are booked without data,
    // and the bytes are read into host memory where the writes say they go; poisoned TLPs carry
    // them in a buffer, for the root complex to write all but those.
    std::uint8_t* const carried = poisoned.empty() ? nullptr : poisoned_buffer(bytes);
    const Ps ready = memory_.read(phys, carried, bytes, t);
    const HostPort::Write w = host_.write(iova, carried, bytes, first, true, false, &f);
    if (w.host != nullptr) memory_.read_functional(phys, w.host, bytes);
    sent = std::max(ready, w.sent_ps);
    landed = w.landed_ps;
    ok = w.ok;
    ++counters_.write_tlps;
    run.faulted = !poisoned.empty() || w.replays > 0;
  } else {
    d2h_writes(iova, phys, bytes, t, run, sent, landed, ok);
  }
  run.issue_end_ps = run.done_ps = through_dma_engine(t, bytes, sent);
  if (!ok) {
    run.outcome = device_core::CbOutcome::fail(hw::ErrorKind::kIommuFault, hw::CbField::kDmoHostIova, iova);
    return run;
  }
  if (!run.outcome.good()) return run;
  run.data_ps = landed;
  run.outcome = device_core::CbOutcome::done(bytes);
  return run;
}

void SystemcDataPath::d2h_writes(std::uint64_t iova, std::uint64_t phys, std::uint64_t bytes, Ps t, CbExecution& run,
                                 Ps& sent, Ps& landed, bool& ok) {
  const std::uint32_t mps = hooks_.writes_over_mps ? 2 * config_.link.mps : config_.link.mps;
  const bool inject = faults_.enabled();
  bool first_tlp = true;
  // Each MWr's piece of device memory is read on its own, once the read buffer has room for it
  // (kDeviceReadsInFlight pieces, kDeviceReadBufferBytes), as the pieces before it leave in their
  // MWrs: the reads keep the link's pace, as the RTL's DMAO engine's do, rather than take the
  // memory bus at its own rate from `t`.
  struct Buffered {
    Ps sent;  // its MWr left
    std::uint64_t bytes;
  };
  std::array<Buffered, kDeviceReadsInFlight> buffer{};  // a ring, oldest at `head`
  std::size_t head = 0, count = 0;
  std::uint64_t buffered = 0;
  Ps requested = t;  // pieces are read in order
  // The pieces' bytes, once their MWrs say where in host memory they go, are read there in runs:
  // a run grows while the pieces lie end to end in device and in host memory, and is read before
  // the thread yields (nothing else runs in between, so nothing can tell) or at the end.
  struct Run {
    std::uint64_t phys = 0;
    std::uint8_t* host = nullptr;
    std::uint64_t bytes = 0;
  } pending;
  const auto read_pending = [&] {
    if (pending.bytes) memory_.read_functional(pending.phys, pending.host, pending.bytes);
    pending.bytes = 0;
  };
  for (std::uint64_t a = iova, left = bytes; left > 0;) {
    std::uint64_t n = pcie::request_step(a, left, mps);
    if (hooks_.writes_cross_4k) n = std::min<std::uint64_t>(left, a == iova ? hw::kFlitBytes : mps);
    while (count == buffer.size() || (count > 0 && buffered + n > kDeviceReadBufferBytes)) {
      requested = std::max(requested, buffer[head].sent);
      buffered -= buffer[head].bytes;
      head = (head + 1) % buffer.size();
      --count;
    }
    TlpFaults f;
    if (inject) {
      if (first_tlp) {
        if (faults_.armed_tlp(FaultKind::kLcrc, false)) f.force_replay = true;
        if (faults_.armed_tlp(FaultKind::kPoisoned, false)) faults_.count(FaultKind::kPoisoned), f.poisoned = true;
        first_tlp = false;
      }
      if (!f.poisoned && faults_.poisoned(1).count) f.poisoned = true;
      if (f.poisoned) fail_first(run, hw::ErrorKind::kPcieError, hw::CbField::kDmoHostIova, a);
    }
    // The piece's bytes go from device memory to host memory in one copy: its read and its MWr are
    // booked without data, and once the MWr says where in host memory they go (the write's direct
    // form), they are read there. A poisoned MWr, whose data the root complex discards, carries
    // them in a buffer.
    const std::uint64_t off = a - iova;
    std::uint8_t* const carried = f.poisoned ? poisoned_buffer(n) : nullptr;
    const Ps ready = memory_.read(phys + off, carried, n, requested);
    const HostPort::Write w = host_.write(a, carried, n, std::max(ready, sent), false, false, &f);
    if (w.host != nullptr) {
      if (pending.bytes == 0 || pending.phys + pending.bytes != phys + off || pending.host + pending.bytes != w.host) {
        read_pending();
        pending.phys = phys + off;
        pending.host = w.host;
      }
      pending.bytes += n;
    }
    sent = w.sent_ps;
    buffer[(head + count++) % buffer.size()] = Buffered{sent, n};
    buffered += n;
    landed = std::max(landed, w.landed_ps);
    ++counters_.write_tlps;
    if (f.poisoned || w.replays) run.faulted = true;
    ok = ok && w.ok;
    a += n;
    left -= n;
    if (ahead(sent)) read_pending();
    keep_pace(sent);
  }
  read_pending();
}

Ps SystemcDataPath::device_memory_work(const device_core::CbWork& w, Ps t) {
  const bool fill = w.kind == device_core::CbWork::Kind::kFill;
  // A copy whose destination overlaps its source from above goes from the end, so that every
  // chunk reads bytes no earlier chunk has overwritten (as one copy of the whole range would).
  const bool backward = !fill && w.device > w.source && w.device < w.source + w.bytes;
  Ps bus = t, done = t;
  for (std::uint64_t k = 0; k < w.bytes; k += kPaceBytes) {
    const std::uint64_t n = std::min<std::uint64_t>(kPaceBytes, w.bytes - k);
    const std::uint64_t off = backward ? w.bytes - k - n : k;
    // A fill or a copy takes every cycle of the bus the other requesters leave, so it is booked
    // only at its time: the link traffic of both pipelines (at most kRunAheadPs ahead) is booked
    // by then, and the fill takes the gaps around it, as a memory controller serves a saturating
    // requester beside paced ones. Booked ahead, it took the bus first and the D2H reads waited.
    keep_pace(bus, 0);
    done = fill ? memory_.fill(w.device + off, w.pattern, n, bus) : memory_.copy(w.device + off, w.source + off, n, bus);
    bus = done - dram_latency_ps_;
  }
  return done;
}

CbExecution SystemcDataPath::device_side(const hw::ControlBlock& cb, Ps t) {
  CbExecution run;
  run.done_ps = run.issue_end_ps = t;
  const device_core::CheckedCb checked = device_core::check_work(cb, layout_, nullptr);
  if (checked.rejected) {
    run.outcome = *checked.rejected;
    return run;
  }
  const device_core::CbWork& w = checked.work;
  run.done_ps = run.issue_end_ps = device_memory_work(w, t);
  run.data_ps = run.done_ps;
  run.outcome = device_core::CbOutcome::done(w.bytes);
  return run;
}

}  // namespace spyre_dma::model
