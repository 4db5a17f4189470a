// The runner's checkers, over one test run (test_run.hpp): every completion (exactly once, in
// FIFO order on strict and op-ordered streams, with the status the program expects; a failed
// op's error bin), the end of each epoch (lost completions, what synchronize() returned, the
// engine reset after a device fault, then the scoreboard), the order of device work from its
// timestamps (within a stream, across pipelines, after event waits), and the model's own
// verdicts at the end.
#include <algorithm>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "test_run.hpp"

namespace spyre_dma::regress::detail {
namespace {

const char* error_bin(ErrorCode c) {
  switch (c) {
    case ErrorCode::kDeviceError: return "error.device_error";
    case ErrorCode::kIommuFault: return "error.iommu_fault";
    case ErrorCode::kDeviceTimeout: return "error.device_timeout";
    case ErrorCode::kDeviceFault: return "error.device_fault";
    case ErrorCode::kCancelled: return "error.cancelled";
    default: return nullptr;
  }
}

}  // namespace

void TestRun::on_done(std::size_t i, const Status& s) {
  Record& r = records_[i];
  bool first = false;
  {
    std::lock_guard<std::mutex> g(mu_);
    first = ++r.callbacks == 1;
    if (first) {
      r.status = s;
    }
  }
  if (!first) {
    findings_.add(FindingKind::kDuplicateCompletion, static_cast<std::int64_t>(i),
                  fmt::format("op {} ({}) completed more than once", i, to_string(p_.ops[i].type)));
    return;
  }
  // FIFO: on strict and op-ordered streams an op is published only after every earlier one
  // (callbacks may run on different engine threads, so their order alone proves nothing).
  if (r.prev >= 0 && !records_[static_cast<std::size_t>(r.prev)].op.done()) {
    findings_.add(FindingKind::kOrderViolation, static_cast<std::int64_t>(i),
                  fmt::format("stream {}: op {} completed while the earlier op {} had not", p_.ops[i].stream, i,
                              r.prev));
  }
  try {
    // A dead device's memory is out of reach (and never checked again): the scoreboard only
    // follows the ops of a living one.
    if (r.has_access && !device_killed_) {
      if (o_.corrupt_op == static_cast<std::int64_t>(i) && s.ok()) {
        scoreboard_.corrupt(r.access.dst_region, r.access.dst_offset + r.access.bytes / 2);
      }
      scoreboard_.completed(static_cast<std::int64_t>(i), r.access, s.ok());
    }
    check_status(i, s);
  } catch (const std::exception& e) {
    // The callback ran: a check that could not be made is a finding, not a lost completion, unless
    // the device was killed under it (its memory is out of reach from then on).
    if (!device_killed_) {
      findings_.add(FindingKind::kSetup, static_cast<std::int64_t>(i),
                    fmt::format("checking op {} ({}) as it completed: {}", i, to_string(p_.ops[i].type), e.what()));
    }
  }
  {
    std::lock_guard<std::mutex> g(mu_);
    ++callbacks_done_;
  }
  cv_.notify_all();
}

void TestRun::check_status(std::size_t i, const Status& s) {
  const OpSpec& op = p_.ops[i];
  if (!s.ok()) {
    if (const char* bin = error_bin(s.code())) cover(bin);
  }
  if (op.expect) {
    const bool code_ok = s.code() == op.expect->code;
    const bool kind_ok = !op.expect->kind || (s.device() && s.device()->kind == *op.expect->kind);
    if (!code_ok || !kind_ok) {
      findings_.add(FindingKind::kWrongError, static_cast<std::int64_t>(i),
                    fmt::format("op {} ({}): expected {}{}, got {}", i, to_string(op.type), to_string(op.expect->code),
                                op.expect->kind ? fmt::format(" with kind {}", static_cast<int>(*op.expect->kind)) : "",
                                s.ok() ? std::string("success") : s.to_string()));
    }
    return;
  }
  if (!s.ok() && device_killed_) {
    // The device died under the op: a typed end, once, is all that can be asked.
    const ErrorCode c = s.code();
    if (c != ErrorCode::kDeviceFault && c != ErrorCode::kCancelled && c != ErrorCode::kDependencyFailed) {
      findings_.add(FindingKind::kWrongError, static_cast<std::int64_t>(i),
                    fmt::format("op {} ({}) failed after its device was killed with {}, not a device fault: {}", i,
                                to_string(op.type), to_string(c), s.to_string()));
    }
    return;
  }
  if (!s.ok() && !p_.faults.any()) {
    findings_.add(FindingKind::kUnexpectedError, static_cast<std::int64_t>(i),
                  fmt::format("op {} ({}) failed with no fault injected: {}", i, to_string(op.type), s.to_string()));
  }
}

void TestRun::host_callback_ran(std::size_t i) {
  const std::uint32_t stream = p_.ops[i].stream;
  for (std::size_t k : epoch_ops_snapshot(i)) {
    if (p_.ops[k].stream != stream || k >= i || !records_[k].op.valid()) continue;
    if (!records_[k].op.done()) {
      findings_.add(FindingKind::kOrderViolation, static_cast<std::int64_t>(i),
                    fmt::format("host callback op {} ran before op {} of its stream had completed", i, k));
      return;
    }
  }
}

std::vector<std::size_t> TestRun::epoch_ops_snapshot(std::size_t upto) {
  std::lock_guard<std::mutex> g(mu_);
  std::vector<std::size_t> out;
  for (std::size_t k : epoch_ops_) {
    if (k < upto) out.push_back(k);
  }
  return out;
}

void TestRun::end_epoch(std::size_t at) {
  ++metrics_.epochs;
  std::vector<bool> stream_failed(streams_.size(), false);
  std::vector<Status> sync(streams_.size());
  for (std::size_t s = 0; s < streams_.size(); ++s) sync[s] = streams_[s].synchronize(o_.wait_timeout);
  {
    // Completions are reported before their callbacks run: wait (bounded) for the callbacks.
    std::unique_lock<std::mutex> g(mu_);
    if (!cv_.wait_for(g, o_.wait_timeout, [&] { return callbacks_done_ >= callbacks_expected_; })) {
      g.unlock();
      // Which ones, so the report points at them (the first few, with how each op ended).
      std::string which;
      unsigned named = 0;
      for (std::size_t k : epoch_ops_) {
        const Record& r = records_[k];
        if (!r.has_callback || r.callbacks != 0 || named == 8) continue;
        ++named;
        which += fmt::format("{}op {} ({}, {})", which.empty() ? "" : ", ", k, to_string(p_.ops[k].type),
                             !r.op.valid() ? "not submitted" : r.op.done() ? r.op.status().to_string() : "pending");
      }
      findings_.add(FindingKind::kLostCompletion, -1,
                    fmt::format("epoch ending at op {}: {} of {} completion callbacks never ran: {}", at,
                                callbacks_expected_ - callbacks_done_, callbacks_expected_, which));
    }
  }
  bool needs_reset = false;
  std::vector<std::size_t> ops;
  {
    std::lock_guard<std::mutex> g(mu_);
    ops = epoch_ops_;
    epoch_ops_.clear();
  }
  for (std::size_t i : ops) {
    Record& r = records_[i];
    if (!r.op.valid()) continue;
    if (!r.op.done()) {
      findings_.add(FindingKind::kLostCompletion, static_cast<std::int64_t>(i),
                    fmt::format("op {} ({}) never completed", i, to_string(p_.ops[i].type)));
      continue;
    }
    const Status st = r.result();
    if (st.code() == ErrorCode::kDependencyFailed) {
      ++metrics_.dependency_failed_ops;
      stream_failed[p_.ops[i].stream] = true;
    } else if (!st.ok()) {
      ++metrics_.failed_ops;
      stream_failed[p_.ops[i].stream] = true;
      const ErrorCode c = st.code();
      if (c == ErrorCode::kDeviceTimeout || c == ErrorCode::kDeviceFault ||
          (st.device() && st.device()->kind == hw::ErrorKind::kReset)) {
        needs_reset = true;
      }
    }
  }
  for (std::size_t s = 0; s < streams_.size(); ++s) {
    if (sync[s].code() == ErrorCode::kWaitTimeout) {
      findings_.add(FindingKind::kLostCompletion, -1,
                    fmt::format("stream {} did not drain within {} ms", s, o_.wait_timeout.count()));
    } else if (stream_failed[s] != !sync[s].ok() && !device_killed_) {
      findings_.add(FindingKind::kWrongError, -1,
                    fmt::format("stream {}: {} op failed in the epoch ending at op {}, but synchronize() returned {}",
                                s, stream_failed[s] ? "an" : "no", at, sync[s].ok() ? "ok" : sync[s].to_string()));
    }
  }
  check_propagation(ops);
  check_order(ops);
  if (device_killed_) {  // nothing after this epoch: its memory cannot be read, nor reset
    device_gone_ = true;
    waits_.clear();
    return;
  }
  scoreboard_.verify_epoch();
  if (needs_reset) {
    const Status rs = engine_->reset();
    ++metrics_.resets;
    if (!rs.ok()) {
      findings_.add(FindingKind::kSetup, -1, "Engine::reset() after a device fault failed: " + rs.to_string());
    } else {
      cover("recovery.reset");
    }
  }
  waits_.clear();
}

void TestRun::check_propagation(const std::vector<std::size_t>& ops) {
  // An op that failed behind another names one that failed first (a root), in this epoch: each
  // stream's synchronize at the epoch's end clears what it carries.
  std::map<std::uint64_t, std::size_t> by_id;
  for (std::size_t i : ops) {
    if (records_[i].op.valid()) by_id[records_[i].op.id()] = i;
  }
  auto status_of = [&](std::size_t i) { return records_[i].result(); };
  for (std::size_t i : ops) {
    if (!records_[i].op.valid() || !records_[i].op.done()) continue;
    const Status st = status_of(i);
    if (st.code() != ErrorCode::kDependencyFailed) continue;
    const auto root = by_id.find(st.failed_op());
    const Status rs = root == by_id.end() ? Status() : status_of(root->second);
    if (root == by_id.end() || rs.ok() || rs.code() == ErrorCode::kDependencyFailed) {
      findings_.add(FindingKind::kWrongError, static_cast<std::int64_t>(i),
                    fmt::format("op {} ({}) failed behind op id {}, which is not an op of this epoch that failed first: {}",
                                i, to_string(p_.ops[i].type), st.failed_op(), st.to_string()));
    } else {
      cover("error.dependency_failed");
    }
  }
  // On a propagating stream that orders its ops (strict, op-ordered), nothing after a root
  // failure runs: every later op of the epoch fails.
  std::map<std::uint32_t, std::size_t> first_root;
  for (std::size_t i : ops) {
    const OpSpec& op = p_.ops[i];
    const StreamSpec& s = p_.streams[op.stream];
    if (s.on_failure != FailurePolicy::kPropagate || s.ordering == Ordering::kPipelineFifo) continue;
    if (!records_[i].op.valid() || !records_[i].op.done()) continue;
    const Status st = status_of(i);
    const auto root = first_root.find(op.stream);
    if (root != first_root.end()) {
      if (st.ok()) {
        findings_.add(FindingKind::kMissedError, static_cast<std::int64_t>(i),
                      fmt::format("stream {} propagates failures, but op {} ({}) ran after op {} had failed", op.stream,
                                  i, to_string(op.type), root->second));
      }
    } else if (!st.ok() && st.code() != ErrorCode::kDependencyFailed) {
      first_root[op.stream] = i;
    }
  }
}

void TestRun::check_order(const std::vector<std::size_t>& ops) {
  // The previous device op of each stream (per pipeline on pipeline-FIFO streams).
  std::map<std::pair<std::uint32_t, Queue>, std::size_t> prev_device;
  for (std::size_t i : ops) {
    const Record& r = records_[i];
    const OpSpec& op = p_.ops[i];
    if (!r.has_callback || !r.op.valid() || !r.op.done()) continue;
    const Ordering o = p_.streams[op.stream].ordering;
    // Device timestamps of consecutive device ops of a stream.
    const Queue pipe = queue_of(op.type);
    if (pipe == Queue::kNone || !r.status.ok() || r.op.device_end_ns() == 0) continue;
    const auto key = std::make_pair(op.stream, o == Ordering::kPipelineFifo ? pipe : Queue::kNone);
    if (auto it = prev_device.find(key); it != prev_device.end()) {
      const std::size_t prev = it->second;
      const Record& q = records_[prev];
      const bool same_pipe = queue_of(p_.ops[prev].type) == pipe;
      // On one pipeline CBs retire in order but may overlap (a read engine issues the next CB's
      // requests while the last completions arrive), so only the ring order binds them, and the
      // completion order above checks it. Across pipelines, and on op-ordered streams, the
      // later op starts only after the earlier one ended (a BARRIER, or the host's round trip).
      if ((!same_pipe || o == Ordering::kOpOrdered) && r.op.device_start_ns() < q.op.device_end_ns()) {
        findings_.add(FindingKind::kOrderViolation, static_cast<std::int64_t>(i),
                      fmt::format("stream {}: op {} started at {} ns, before the earlier op {} ended ({} ns)",
                                  op.stream, i, r.op.device_start_ns(), prev, q.op.device_end_ns()));
      }
    }
    prev_device[key] = i;
  }
  if (p_.tuning.order_by_footprint) check_footprint_order(ops);
  // Event order: device work after a wait starts after the recording stream's earlier work.
  for (const Wait& w : waits_) {
    const std::uint32_t from = p_.ops[w.record].stream, to = p_.ops[w.wait].stream;
    std::uint64_t end = 0;
    std::size_t last_before = 0;
    for (std::size_t k : ops) {
      if (k >= w.record) break;
      const Record& r = records_[k];
      if (p_.ops[k].stream == from && queue_of(p_.ops[k].type) != Queue::kNone && r.op.valid() && r.status.ok() &&
          r.op.device_end_ns() > end) {
        end = r.op.device_end_ns();
        last_before = k;
      }
    }
    if (end == 0) continue;
    for (std::size_t k : ops) {
      if (k <= w.wait || p_.ops[k].stream != to || queue_of(p_.ops[k].type) == Queue::kNone) continue;
      const Record& r = records_[k];
      if (!r.op.valid() || !r.status.ok() || r.op.device_start_ns() == 0) continue;
      if (r.op.device_start_ns() < end) {
        findings_.add(FindingKind::kOrderViolation, static_cast<std::int64_t>(k),
                      fmt::format("op {} on stream {} started at {} ns, before op {} (recorded into event {} by op {}) "
                                  "ended at {} ns",
                                  k, to, r.op.device_start_ns(), last_before, p_.ops[w.record].event, w.record, end));
      }
      break;  // later ops of the stream follow this one
    }
  }
}

void TestRun::check_footprint_order(const std::vector<std::size_t>& ops) {
  // Every later op that touches a byte an earlier one touched, one of the two writing, on another
  // stream (or another pipeline of a pipeline-FIFO stream), starts on the device after the earlier
  // one ended there.
  std::vector<std::pair<std::size_t, std::vector<SpecTouch>>> done;
  for (std::size_t i : ops) {
    const Record& r = records_[i];
    if (!r.op.valid() || !r.status.ok() || r.op.device_end_ns() == 0) continue;
    std::vector<SpecTouch> ts = touches(p_.ops[i]);
    if (ts.empty()) continue;
    for (const auto& [k, earlier] : done) {
      const OpSpec &a = p_.ops[k], &b = p_.ops[i];
      if (a.stream == b.stream && stream_orders(p_, b.stream, queue_of(a.type), queue_of(b.type))) {
        continue;  // the stream's own order (checked above)
      }
      const bool conflict = std::any_of(earlier.begin(), earlier.end(), [&](const SpecTouch& x) {
        return std::any_of(ts.begin(), ts.end(), [&](const SpecTouch& y) { return (x.write || y.write) && x.overlaps(y); });
      });
      if (!conflict) continue;
      cover("order.footprint");
      if (r.op.device_start_ns() < records_[k].op.device_end_ns()) {
        findings_.add(FindingKind::kOrderViolation, static_cast<std::int64_t>(i),
                      fmt::format("op {} on stream {} started at {} ns, before op {} on stream {}, which touches its "
                                  "bytes, ended ({} ns; ordering by footprint)",
                                  i, b.stream, r.op.device_start_ns(), k, a.stream, records_[k].op.device_end_ns()));
      }
    }
    done.emplace_back(i, std::move(ts));
  }
}

void TestRun::model_checks(const nlohmann::json& stats) {
  if (const auto* c = find(stats, {"link", "protocol", "violations"}); c && c->is_number() && c->get<std::uint64_t>() > 0) {
    const auto* last = find(stats, {"link", "protocol", "last_violation"});
    findings_.add(FindingKind::kProtocol, -1,
                  fmt::format("the model's protocol checker counted {} violation(s); last: {}", c->get<std::uint64_t>(),
                              last && last->is_string() ? last->get<std::string>() : "?"));
  }
  if (const auto* tags = find(stats, {"controller", "tag_stalls"}); tags && tags->is_number()) {
    coverage_.hit("pressure.device_tags", tags->get<std::uint64_t>());
  }
  std::uint64_t erroring = 0;
  if (const auto* inj = find(stats, {"faults", "injected"}); inj && inj->is_object()) {
    for (const auto& [kind, n] : inj->items()) {
      if (!n.is_number()) continue;
      const auto count = n.get<std::uint64_t>();
      metrics_.faults_injected[kind] = count;
      const std::string bin = "fault." + kind;
      if (find_bin(bin)) coverage_.hit(bin, count);
      if (kind != "lcrc") erroring += count;  // an LCRC error is replayed: no op may fail of it
    }
  }
  // One fault at a chosen CB fails exactly the op that CB belongs to (a device reset fails
  // everything in flight; an LCRC error is replayed and fails nothing).
  const FaultPlan& f = p_.faults;
  const bool single = f.at_cb > 0 && f.poisoned_rate == 0 && f.unsupported_request_rate == 0 &&
                      f.completer_abort_rate == 0 && f.dropped_completion_rate == 0 && f.lcrc_rate == 0 &&
                      f.iommu_fault_rate == 0 && f.malformed_cb_rate == 0 && f.device_reset_rate == 0;
  if (single && erroring == 1 && f.at_cb_fault != "device_reset" && metrics_.failed_ops != 1) {
    findings_.add(FindingKind::kWrongError, -1,
                  fmt::format("one {} fault at CB {} should fail exactly one op, but {} failed", f.at_cb_fault,
                              f.at_cb, metrics_.failed_ops));
  }
  if (erroring > 0 && metrics_.failed_ops == 0) {
    findings_.add(FindingKind::kMissedError, -1,
                  fmt::format("the model injected {} data-path fault(s) but no op failed", erroring));
  }
  if (erroring == 0 && metrics_.failed_ops > 0 && p_.faults.any()) {
    findings_.add(FindingKind::kUnexpectedError, -1,
                  fmt::format("{} op(s) failed but the model injected no fault that fails a CB", metrics_.failed_ops));
  }
}

const nlohmann::json* TestRun::find(const nlohmann::json& j, std::initializer_list<const char*> path) {
  const nlohmann::json* at = &j;
  for (const char* k : path) {
    if (!at->is_object() || !at->contains(k)) return nullptr;
    at = &(*at)[k];
  }
  return at;
}

}  // namespace spyre_dma::regress::detail
