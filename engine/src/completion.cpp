// The completion path: RBs from the rings, CB timeouts, op completion and stream retirement.
#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>

#include "engine_core.hpp"
#include "spyre_dma/hex.hpp"

namespace spyre_dma::detail {
namespace {

std::string_view kind_name(OpKind k) {
  switch (k) {
    case OpKind::kH2D: return "H2D";
    case OpKind::kD2H: return "D2H";
    case OpKind::kD2D: return "D2D";
    case OpKind::kFill: return "fill";
    case OpKind::kCompute: return "compute";
    case OpKind::kHostCallback: return "host callback";
    case OpKind::kHostTask: return "host task";
    case OpKind::kEventRecord: return "event record";
    case OpKind::kEventWait: return "event wait";
  }
  return "op";
}

}  // namespace

bool EngineCore::progress(Lock& lock) {
  Work work;
  bool moved = false;
  if (device_->failed()) moved |= device_lost(work);
  if (!draining_) moved |= drain_rbs(work);
  if (fatal_suspect_) moved |= check_fatal(work);
  moved |= expire_timeouts(work);
  moved |= work.host_work() || !work.touched.empty() || work.completed_any;
  run_work(lock, work);
  if (moved) ring_doorbells();
  return moved;
}

bool EngineCore::drain_rbs(Work& work) {
  bool any = false;
  for (unsigned p = 0; p < hw::kNumPipelines; ++p) {
    HwQueue& q = *queues_[p];
    const auto pipe = static_cast<hw::Pipeline>(p);
    while (const std::uint8_t* slot = q.peek_rb()) {
      any = true;
      const std::uint32_t index = q.rb_consumer_index();
      if (!fatal_.ok()) {  // a device that misbehaved or reset itself: its RBs mean nothing now
        q.pop_rb(false);
        continue;
      }
      const hw::RbDecodeResult d = hw::decode_rb(slot);
      if (d.error) {
        q.pop_rb(false);
        device_misbehaved(pipe, 0, index,
                          "the RB at ring index " + std::to_string(index) + " is malformed (" + std::string(*d.error) +
                              ", word 0 = " + hex(hw::load_le64(slot)) + ")", work);
        continue;
      }
      const hw::ResponseBlock& rb = d.rb;
      auto& due = answer_order_[p];
      std::string wrong;
      if (static_cast<unsigned>(rb.locator) != p) {
        wrong = "names pipeline " + std::string(hw::to_string(rb.locator));
      } else if (rb.tag == last_answered_[p] && (due.empty() || rb.tag != due.front())) {
        wrong = "repeats a tag answered just before (a repeated or stale RB)";
      } else if (due.empty()) {
        wrong = "came with no CB outstanding on this queue";
      } else if (rb.tag != due.front()) {
        const Inflight& f = inflight_[rb.tag];
        if (f.state == CbState::kFree) {
          wrong = "names a tag with no CB in flight (unknown, or answered already)";
        } else if (f.pipe != pipe) {
          wrong = "names a tag of a " + std::string(hw::to_string(f.pipe)) + " CB";
        } else {
          wrong = "is out of ring order";
        }
        wrong += "; the next RB due was for tag " + std::to_string(due.front());
      }
      if (!wrong.empty()) {
        q.pop_rb(false);
        device_misbehaved(pipe, rb.tag, index,
                          "the RB at ring index " + std::to_string(index) + " for tag " +
                              std::to_string(rb.tag) + " " + wrong, work);
        continue;
      }
      due.pop_front();
      last_answered_[p] = rb.tag;
      Inflight& f = inflight_[rb.tag];
      q.pop_rb(true);
      work.repump = true;
      if (rb.status == hw::RbStatus::kAbend && rb.error == hw::ErrorKind::kReset) fatal_suspect_ = true;
      if (f.state == CbState::kTimedOut) {
        // A late answer: the device is done with the tag and the buffer after all.
        if (f.staging != StagingPool::kNone) work.staging_releases.push_back(f.staging);
        clear_inflight(f);
        tags_.release(rb.tag);
        continue;
      }
      finish_cb(rb.tag, rb, work);
    }
    q.publish_rb_ci();
    for (const int slot : work.staging_releases) staging_->release(slot);
    work.staging_releases.clear();
  }
  if (!work.copy_outs.empty()) draining_ = true;
  return any;
}

void EngineCore::device_misbehaved(hw::Pipeline p, std::uint32_t tag, std::uint64_t index,
                                   const std::string& what, Work& work) {
  ++stats_.device_faults;
  if (!fatal_.ok()) return;  // one verdict per fault; reset() clears it
  DeviceErrorDetail detail{p, tag, hw::RbStatus::kError, hw::ErrorKind::kNone, hw::CbField::kNone, index};
  fatal_ = Status(ErrorCode::kDeviceFault,
                  "the device broke the ring contract on " + std::string(hw::to_string(p)) + ": " + what +
                      "; Engine::reset() is needed",
                  detail);
  // Stop the device fetching more (what it holds it may still finish: its staging buffers are
  // unmapped below, so it cannot reach them); copy-ins still running are abandoned.
  try {
    device_->write32(hw::reg::kControl, 0);
  } catch (...) {
  }
  ++epoch_;
  fail_everything(fatal_, work);
}

bool EngineCore::device_lost(Work& work) {
  if (device_lost_) return false;
  device_lost_ = true;
  ++stats_.device_faults;
  fatal_ = lost_device_status();
  ++epoch_;  // copy-ins still running are abandoned
  fail_everything(fatal_, work);
  return true;
}

Status EngineCore::lost_device_status() const {
  return Status(ErrorCode::kDeviceFault,
                "the device failed (" + device_->failure() + "); open the engine on a new device");
}

bool EngineCore::check_indices(unsigned p, Work& work) {
  if (!fatal_.ok()) return false;
  const HwQueue& q = *queues_[p];
  const auto pipe = static_cast<hw::Pipeline>(p);
  const std::uint32_t cb_ci = device_->read32(hw::reg::pipe(pipe, hw::reg::kCbCi));
  const std::uint32_t rb_pi = device_->read32(hw::reg::pipe(pipe, hw::reg::kRbPi));
  const std::uint32_t pi = q.published_producer_index(), rb_ci = q.rb_consumer_index();
  const std::uint32_t slots = q.slots();
  // Free-running indices, compared modulo 2^32: RB_CI <= RB_PI <= CB_CI <= CB_PI, and no two
  // more than a ring apart.
  std::string wrong;
  if (std::uint32_t(rb_pi - rb_ci) > slots) {
    wrong = "RB_PI = " + std::to_string(rb_pi) + " lies beyond the ring (" + std::to_string(rb_ci) +
            " RBs consumed, " + std::to_string(slots) + " slots)";
  } else if (std::uint32_t(pi - cb_ci) > slots) {
    wrong = "CB_CI = " + std::to_string(cb_ci) + " lies outside the CBs handed over (CB_PI " +
            std::to_string(pi) + ", " + std::to_string(slots) + " slots)";
  } else if (std::uint32_t(cb_ci - rb_pi) > slots) {
    wrong = "CB_CI = " + std::to_string(cb_ci) + " moved back below RB_PI = " + std::to_string(rb_pi) +
            " (fewer CBs fetched than answered)";
  }
  if (wrong.empty()) return false;
  device_misbehaved(pipe, 0, wrong.rfind("RB_PI", 0) == 0 ? rb_pi : cb_ci, wrong, work);
  return true;
}

Status EngineCore::status_from_rb(const OpState& op, const hw::ResponseBlock& rb) const {
  DeviceErrorDetail detail{rb.locator, rb.tag, rb.status, rb.error, rb.field, rb.detail};
  std::string msg = std::string(kind_name(op.kind)) + " op " + std::to_string(op.id) + ": " +
                    std::string(hw::to_string(rb.locator)) + " CB tag " + std::to_string(rb.tag) +
                    " answered " + std::string(hw::to_string(rb.status)) + " (" +
                    std::string(hw::to_string(rb.error));
  if (rb.field != hw::CbField::kNone) msg += ", field " + std::string(hw::to_string(rb.field));
  msg += ", detail " + hex(rb.detail) + ")";
  // Abend is the device's own abort (say, a reset it did by itself): a device error like the
  // others. kCancelled is for what the engine cancels (Engine::reset, shutdown).
  const ErrorCode code = rb.error == hw::ErrorKind::kIommuFault ? ErrorCode::kIommuFault : ErrorCode::kDeviceError;
  return Status(code, std::move(msg), detail);
}

void EngineCore::finish_cb(std::uint32_t tag, const hw::ResponseBlock& rb, Work& work) {
  Inflight& f = inflight_[tag];
  OpState* const op = f.op;
  auto& order = ring_order_[static_cast<std::size_t>(f.pipe)];
  if (!order.empty() && order.front() == tag) order.pop_front();
  else order.erase(tag);

  ++stats_.cbs_completed;
  if (rb.start_ns && (op->start_ns == 0 || rb.start_ns < op->start_ns)) op->start_ns = rb.start_ns;
  op->end_ns = std::max(op->end_ns, rb.end_ns);
  const bool good = rb.status == hw::RbStatus::kGood;
  if (!good && op->first_error.ok()) op->first_error = status_from_rb(*op, rb);
  if (good) {
    switch (op->kind) {
      case OpKind::kH2D: stats_.bytes_h2d += f.bytes; break;
      case OpKind::kD2H: stats_.bytes_d2h += f.bytes; break;
      case OpKind::kD2D: stats_.bytes_d2d += f.bytes; break;
      case OpKind::kFill: stats_.bytes_fill += f.bytes; break;
      default: break;
    }
  }
  bool copy_out = false;
  if (f.staging != StagingPool::kNone) {
    if (good && f.copy_out) {
      work.copy_outs.push_back(CopyOut{op, f.staging, f.copy_out, staging_->data(f.staging), f.bytes});
      ++op->copying_out;
      stats_.bytes_staged += f.bytes;
      copy_out = true;
    } else {
      work.staging_releases.push_back(f.staging);
    }
  }
  clear_inflight(f);
  tags_.release(tag);
  if (!copy_out) {
    --op->cbs_live;
    maybe_complete(*op, work);
  }
}

bool EngineCore::expire_timeouts(Work& work) {
  bool any = false;
  const auto now = Clock::now();
  for (unsigned p = 0; p < hw::kNumPipelines; ++p) {
    auto& order = ring_order_[p];
    // A device answers a ring's CBs in order, so only the oldest CB of a pipeline can expire, and
    // its time starts when it heads the ring (a CB queued behind slow ones is not late): the first
    // check that sees it at the head stamps its deadline.
    while (!order.empty()) {
      const std::uint32_t tag = order.front();
      Inflight& f = inflight_[tag];
      if (f.state != CbState::kLive) break;
      if (f.deadline == kUnstamped) {
        f.deadline = now + options_.cb_timeout;
        break;
      }
      if (f.deadline > now) break;
      // A device whose ring indices are impossible misbehaved rather than slowed down.
      if (check_indices(p, work)) return true;
      order.pop_front();
      f.state = CbState::kTimedOut;  // the tag (and its staging buffer) stay out of service
      timed_out_[p] = true;
      if (f.staging != StagingPool::kNone) staging_->quarantine(f.staging);
      OpState* const op = std::exchange(f.op, nullptr);  // a late RB finds no op
      if (op->first_error.ok()) {
        op->first_error = Status(ErrorCode::kDeviceTimeout,
                                 std::string(kind_name(op->kind)) + " op " + std::to_string(op->id) +
                                     ": " + std::string(hw::to_string(static_cast<hw::Pipeline>(p))) +
                                     " CB tag " + std::to_string(tag) + " got no RB within " +
                                     std::to_string(options_.cb_timeout.count() / 1000000) + " ms");
      }
      --op->cbs_live;
      maybe_complete(*op, work);
      work.repump = true;
      any = true;
    }
  }
  return any;
}

void EngineCore::maybe_complete(OpState& op, Work& work) {
  if (!op.finished && op.fully_issued() && op.cbs_live == 0) {
    complete(op, op.first_error.get(), work);
  }
}

void EngineCore::complete(OpState& op, Status status, Work& work) {
  if (op.finished) return;  // exactly once
  op.finished = true;
  // What the host has done for it (a staged D2H's copy-out) is done by now.
  if (host_clock_) op.host_end_ns = device_->host_time_ns();
  op.final_status = std::move(status);
  ++stats_.ops_completed;
  if (!op.final_status.ok()) ++stats_.ops_failed;
  // An op that is not finished has not retired: it is in its stream's window.
  StreamState& s = *op.stream;
  // Pipeline-FIFO orders nothing across pipelines, nor its completions; retire() publishes the
  // ops of the other modes in submission order.
  if (s.options.ordering == Ordering::kPipelineFifo) publish(op, work);
  if (!op.final_status.ok() && s.first_error.ok()) s.first_error = op.final_status.get();
  if (!op.final_status.ok()) poison_after(s, op);
  if (op.kind == OpKind::kD2H && op.started) {
    --s.live_d2h;
    if (op.staged) --s.live_staged_d2h;
  }
  if (s.gate.get() == &op) s.gate = nullptr;  // the window still holds it
  work.touched.push_back(&s);
  if (op.footprint_live) release_footprint(op, work);
}

void EngineCore::release_footprint(OpState& op, Work& work) {
  std::vector<OpState*> followers;
  hazards_.remove(op, followers);
  if (followers.empty()) return;
  work.repump = true;  // the streams of those it released are blocked on them
  // A failure travels to a follower on a propagating stream as it does through an event: the op
  // that failed first is named, and the follower moves no bytes.
  const Status status = op.final_status.get();
  if (status.ok() || status.code() == ErrorCode::kCancelled) return;
  const Status carried = status.code() == ErrorCode::kDependencyFailed
                             ? status
                             : Status::dependency_failed(op.id, status, to_string(op.kind));
  for (OpState* f : followers) {
    if (f->stream->options.on_failure == FailurePolicy::kPropagate && f->first_error.ok()) f->first_error = carried;
  }
}

void EngineCore::poison_after(StreamState& s, const OpState& failed) {
  if (s.options.on_failure != FailurePolicy::kPropagate) return;
  const Status status = failed.final_status.get();
  // What reset() and close cancel, they cancel whole: nothing after it is left to fail, and work
  // submitted after a reset runs.
  if (status.code() == ErrorCode::kCancelled) return;
  if (!s.poison.ok() && s.poison_seq < failed.seq) return;  // an earlier failure stands
  s.poison = Status::dependency_failed(failed.id, status, to_string(failed.kind));
  s.poison_seq = failed.seq;
  // Ops after it already under way (CBs handed over, a record or an event wait passed) issue
  // nothing more and complete with it once their CBs are back. One that has finished but is not
  // yet published (an event wait passes as soon as its record is done, ahead of the ops before it)
  // is published with it too: no op after the failed one completes well.
  for (const auto& op : s.window) {
    if (op->seq <= failed.seq || !op->started) continue;
    if (op->finished) {
      if (!op->done.load(std::memory_order_relaxed) && op->final_status.ok()) {
        op->final_status = s.poison;
        ++stats_.ops_failed;
      }
      continue;
    }
    if (op->first_error.ok()) op->first_error = s.poison;
  }
}

const std::shared_ptr<OpState>& EngineCore::owner(const OpState& op) {
  return op.stream->window[op.seq - op.stream->retired];
}

void EngineCore::publish(OpState& op, Work& work) {
  if (op.done.load(std::memory_order_relaxed)) return;
  op.done.store(true, std::memory_order_release);
  work.completed_any = true;
  // Queued at the moment it is published, so callbacks run in the order ops became done. The
  // queue holds its own reference: the op may retire (and its handles go) before they run.
  if (op.on_complete || options_.observer) completions_.push_back(owner(op));
}

void EngineCore::retire(StreamState& s, Work& work) {
  const std::uint64_t retired_before = s.retired;
  struct Moved {  // stamped once per call that retired something (Engine::stalls)
    StreamState& s;
    std::uint64_t before;
    ~Moved() {
      if (s.retired != before) s.moved = Clock::now();
    }
  } moved{s, retired_before};
  while (!s.window.empty()) {
    const std::shared_ptr<OpState>& front = s.window.front();  // popped last, below
    if (!front->finished) {
      if (front->kind != OpKind::kEventRecord) break;
      // Everything before the record has completed: its time is when the last of that finished
      // on the device, or when it was recorded if later (Event::device_time_ns).
      front->end_ns = std::max(front->start_ns, s.retired_end_ns);
      // A failure before it (on a propagating stream): the event carries it.
      Status carried = front->first_error.get();
      if (carried.ok() && s.poisoned_for(*front)) carried = s.poison;
      complete(*front, std::move(carried), work);
    }
    if (front->device_work()) s.retired_end_ns = std::max(s.retired_end_ns, front->end_ns);
    // A staged D2H is over when its bytes are out of staging, as a pageable cudaMemcpyAsync is
    // over for an event recorded after it (the call returns once they are).
    if (front->kind == OpKind::kD2H && front->staged) s.retired_end_ns = std::max(s.retired_end_ns, front->host_end_ns);
    publish(*front, work);  // every op before it is done: in submission order
    front->stream = nullptr;
    s.window.pop_front();
    if (s.cursor > 0) --s.cursor;
    ++s.retired;
  }
  // Active a while longer (yields()): a stream that submits its next op right after this one
  // completed still finds the rings shallow. Stamped (a clock read) only where it can matter: a
  // stream above the default priority (0), or any stream once there are several priorities.
  if (s.window.empty() && s.retired != retired_before && options_.priority_share_bytes != 0 &&
      (several_priorities_ || s.options.priority > 0))
    s.active_until_ns = priority_clock_ns() + static_cast<std::uint64_t>(options_.priority_hold.count());
}

void EngineCore::settle(Work& work) {
  while (!work.touched.empty() || work.repump) {
    std::vector<StreamState*> touched;
    std::swap(touched, work.touched);
    for (const auto& s : touched) retire(*s, work);
    if (work.touched.empty()) {
      work.repump = false;
      pump_blocked(work);
    }
  }
}

void EngineCore::fail_everything(const Status& why, Work& work) {
  for (std::uint32_t tag = hw::kMinTag; tag <= hw::kMaxTag; ++tag) {
    Inflight& f = inflight_[tag];
    if (f.state == CbState::kFree) continue;
    if (f.state == CbState::kStaging) {
      // A thread is copying the op's host memory into the staging buffer outside the lock: the op
      // may not complete before that copy ends (its caller may free the memory then). The thread
      // sees the new epoch and drops the CB, returning tag and buffer and completing the op.
      if (f.op->first_error.ok()) f.op->first_error = why;
      continue;
    }
    if (f.op) {
      if (f.op->first_error.ok()) f.op->first_error = why;
      --f.op->cbs_live;
      maybe_complete(*f.op, work);
    }
    if (f.staging != StagingPool::kNone) staging_->release(f.staging);
    tags_.release(tag);
    clear_inflight(f);
  }
  for (auto& order : ring_order_) order.clear();
  for (auto& due : answer_order_) due.clear();
  last_answered_.fill(0);
  for (const auto& s : streams_) {
    for (const auto& op : s->window) {
      if (op->finished) continue;
      if (op->kind == OpKind::kHostCallback && op->started) continue;  // running: completes itself
      // Every CB answered Good, only copy-outs left: the op's data is right, it completes as it is.
      if (op->fully_issued() && op->cbs_live > 0 && op->cbs_live == op->copying_out && op->first_error.ok()) continue;
      if (op->first_error.ok()) op->first_error = why;
      op->next = op->bytes;
      op->compute_issued = true;
      // `started` stays as it is: complete() undoes the D2H counts of started ops only, and the
      // cursor below keeps the rest from starting.
      if (op->cbs_live == 0) complete(*op, op->first_error.get(), work);
    }
    s->cursor = s->window.size();
    s->has_last_pipe = false;
    set_blocked(s, false);
    work.touched.push_back(s.get());
  }
}

bool EngineCore::check_fatal(Work& work) {
  if (!fatal_.ok()) return false;
  const std::uint32_t status = device_->read32(hw::reg::kStatus);
  if (!(status & hw::kStatusFatal)) return false;  // still resetting: its RBs are landing
  fatal_suspect_ = false;
  const std::uint32_t cause = device_->read32(hw::reg::kFatalCause);
  const std::uint64_t detail = device_->read64(hw::reg::kFatalDetail_64);
  fatal_ = Status(ErrorCode::kDeviceFault,
                  "the device reset itself (STATUS fatal, cause " +
                      std::string(hw::to_string(static_cast<hw::ErrorKind>(cause))) + ", detail " + hex(detail) +
                      "); Engine::reset() is needed");
  ++stats_.device_faults;
  fail_everything(fatal_, work);
  return true;
}

bool EngineCore::anything_live() const noexcept {
  for (const auto& order : ring_order_) {
    if (!order.empty()) return true;
  }
  return false;
}

bool EngineCore::wait_for_quiet(Lock& lock, std::chrono::nanoseconds timeout) {
  ++cv_waiters_;
  ++quiet_waiters_;
  const bool quiet = done_cv_.wait_for(lock, timeout, [&] { return unlocked_work_ == 0 && waking_ == 0; });
  --quiet_waiters_;
  --cv_waiters_;
  return quiet;
}

}  // namespace spyre_dma::detail
