// Feeding streams to the device: which op may start, how an op is cut into CBs, and the host
// work (staging copies, callbacks) that runs outside the engine lock.
#include <algorithm>
#include <cstring>
#include <iterator>
#include <string>

#include "engine_core.hpp"

namespace spyre_dma::detail {

void EngineCore::set_blocked(const std::shared_ptr<StreamState>& s, bool blocked) {
  if (s->blocked == blocked) return;
  s->blocked = blocked;
  const auto key = std::make_pair(-s->options.priority, s->id);
  if (blocked) blocked_.insert(key);
  else blocked_.erase(key);
}

bool EngineCore::higher_priority_blocked(const StreamState& s) const {
  return !blocked_.empty() && blocked_.begin()->first < -s.options.priority;
}

std::uint64_t EngineCore::priority_clock_ns() {
  if (host_clock_) return device_->host_time_ns();
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count());
}

bool EngineCore::yields(const StreamState& s) {
  if (!several_priorities_ || options_.priority_share_bytes == 0) return false;
  std::uint64_t now = 0;  // read once, and only for a higher stream that is idle
  for (const StreamState* h : by_priority_) {
    if (h->options.priority <= s.options.priority) break;
    if (!h->window.empty()) return true;
    if (h->active_until_ns == 0) continue;  // never had work
    if (now == 0) now = priority_clock_ns();
    if (now < h->active_until_ns) return true;
  }
  return false;
}

void EngineCore::clear_inflight(Inflight& f) {
  if (f.yielded) yielded_bytes_[static_cast<std::size_t>(f.pipe)] -= f.bytes;
  f = Inflight{};
}

void EngineCore::pump_blocked(Work& work) {
  // Highest priority first, so that freed slots and staging buffers go to it.
  const std::vector<std::pair<int, std::uint64_t>> keys(blocked_.begin(), blocked_.end());
  for (const auto& key : keys) pump(streams_[key.second - 1], work, false);
}

// What an event wait completes with once its record has: the failure the record carries (an op
// before it failed on a propagating stream), else ok (a record a reset cancelled carries nothing).
Status EngineCore::awaited_status(const OpState& wait) {
  if (!wait.awaited) return Status();
  Status carried = wait.awaited->final_status.get();
  return carried.code() == ErrorCode::kDependencyFailed ? carried : Status();
}

bool EngineCore::can_start(StreamState& s, std::size_t index, const OpState& op) const {
  if (s.gate && !s.gate->finished) return false;
  if (op.footprint_waits != 0) return false;  // an earlier op touching its bytes is live
  auto earlier_done = [&] {
    for (std::size_t i = 0; i < index; ++i) {
      if (!s.window[i]->finished) return false;
    }
    return true;
  };
  switch (op.kind) {
    case OpKind::kHostCallback:
    case OpKind::kHostTask: return earlier_done();
    case OpKind::kEventRecord:
    case OpKind::kEventWait: return true;
    default: break;
  }
  if (s.options.ordering == Ordering::kOpOrdered) return earlier_done();
  // Host-memory hazards the device cannot see: a staged D2H lands in host memory only when the
  // engine copies it out, and a staged H2D reads host memory when it is copied in.
  if (op.kind == OpKind::kH2D && s.live_staged_d2h > 0) return earlier_done();
  if (op.kind == OpKind::kH2D && op.staged && s.live_d2h > 0) return earlier_done();
  return true;
}

void EngineCore::pump(const std::shared_ptr<StreamState>& s, Work& work, bool from_submit) {
  if (s->busy) return;  // the thread copying into staging for it pumps again when done
  if (resetting_) {
    set_blocked(s, true);  // pump_blocked() takes it up once reset() is done
    return;
  }
  if (from_submit && higher_priority_blocked(*s)) {
    set_blocked(s, true);
    return;
  }
  if (s->gate && s->gate->kind == OpKind::kEventWait && !s->gate->finished) {
    OpState& wait = *s->gate;
    if (!wait.first_error.ok()) complete(wait, wait.first_error.get(), work);  // an op before it failed
    else if (!wait.awaited || wait.awaited->finished) complete(wait, awaited_status(wait), work);
  }
  s->yielding = yields(*s);
  std::vector<CopyIn> copy_ins;
  bool blocked = false;
  // Nothing in this loop pushes to or pops the window (submit() pushes before, retire() runs
  // from settle()): its size holds, and references into it stay valid.
  auto& window = s->window;
  const std::size_t queued = window.size();
  while (!blocked && s->cursor < queued) {
    OpState& op = *window[s->cursor];
    // The staged CBs collected so far reach the ring only after their copy-in, outside the lock.
    // A later device op pushed now would overtake them: an earlier ring index on the same
    // pipeline, a BARRIER rung before the CBs it must follow, a D2H writing host memory the
    // copy-in still reads. It starts at the pump that follows the copy-in (the stream is busy
    // until then). More staged H2D pieces join the same copy-in and keep their order.
    if (!copy_ins.empty() && op.device_work() && !(op.kind == OpKind::kH2D && op.staged)) break;
    if (!op.started) {
      if (s->poisoned_for(op)) {  // an earlier op of the stream failed: this one runs nothing
        complete(op, s->poison, work);
        ++s->cursor;
        continue;
      }
      if (!can_start(*s, s->cursor, op)) {
        blocked = true;
        break;
      }
      op.started = true;
      switch (op.kind) {
        case OpKind::kHostCallback:
        case OpKind::kHostTask:
          s->gate = s->window[s->cursor];
          work.callbacks.push_back(&op);
          if (op.kind == OpKind::kHostTask) work.tasks.push_back(s->window[s->cursor]);
          ++s->cursor;
          continue;
        case OpKind::kEventWait:
          if (!op.awaited || op.awaited->finished) complete(op, awaited_status(op), work);
          else s->gate = s->window[s->cursor];
          ++s->cursor;
          continue;
        case OpKind::kEventRecord:  // completes when it reaches the front (retire)
          ++s->cursor;
          continue;
        case OpKind::kD2H:
          ++s->live_d2h;
          if (op.staged) ++s->live_staged_d2h;
          break;
        default: break;
      }
    }
    if (!fatal_.ok() && op.first_error.ok()) op.first_error = fatal_;
    if (timed_out_[static_cast<std::size_t>(op.pipe)] && op.first_error.ok()) {
      op.first_error = Status(ErrorCode::kDeviceTimeout,
                               std::string(hw::to_string(op.pipe)) +
                                   " has a CB that timed out; reset the engine");
    }
    if (!op.first_error.ok()) {  // a failed op issues nothing more
      op.next = op.bytes;
      op.compute_issued = true;
      maybe_complete(op, work);
    }
    while (!op.fully_issued()) {
      if (!issue_cb(*s, op, copy_ins)) {
        blocked = true;
        break;
      }
    }
    if (!op.first_error.ok()) maybe_complete(op, work);
    if (!blocked) ++s->cursor;
  }
  if (s->gate && !s->gate->finished && s->gate->kind == OpKind::kEventWait) blocked = true;
  set_blocked(s, blocked);
  if (!copy_ins.empty()) {
    s->busy = true;
    work.copy_ins.emplace_back(s, std::move(copy_ins));
  }
}

namespace {
// Field by field, never through a temporary: a struct copied from a temporary is read back with
// loads wider than the stores that built it, which the CPU cannot forward from its store buffer
// (each such load stalls until the stores retire).
void clear(hw::XlatEntry& e) noexcept {
  e.mode = hw::XlatMode::kInvalid;
  e.base_flits = 0;
  e.length_flits = 0;
}
}  // namespace

bool EngineCore::barrier_before(StreamState& s, const OpState& op) {
  const bool first = op.kind == OpKind::kCompute ? !op.compute_issued : op.next == 0;
  if (!first || s.options.ordering != Ordering::kStrict) return false;
  const bool barrier = s.has_last_pipe && s.last_pipe != op.pipe;
  s.has_last_pipe = true;
  s.last_pipe = op.pipe;
  return barrier;
}

hw::DmaCb& EngineCore::build_dma_cb(const OpState& op, int slot, std::uint64_t cap, std::uint64_t& piece) {
  // Built in a CB kept for the purpose (tag and barrier are the caller's).
  hw::DmaCb& cb = dma_scratch_;
  cb.interrupt = false;
  cb.outbound = op.kind == OpKind::kD2H;
  hw::DmaSection& sec = cb.section;
  // Only what this CB's kind leaves unset is cleared: the type, the device address, the length and
  // XLAT entry 0 are written below for every kind, the source and entry 1 only for a device copy.
  sec.host_iova_flits = 0;
  sec.fill_pattern = 0;
  if (op.kind != OpKind::kD2D) {
    sec.source.segment = 0;
    sec.source.flit_offset = 0;
    clear(cb.xlat[1]);
  }
  if (op.staged) cap = std::min<std::uint64_t>(cap, staging_->buffer_bytes());
  piece = std::min(op.bytes - op.next, cap);

  // The chunk a CB writes (or reads, for D2H) sits in XLAT entry 0, the source of a device copy in
  // entry 1; each entry spans exactly its chunk, so the device's bounds check confines the CB.
  auto place = [&](const AllocationState& a, std::uint64_t offset, unsigned entry, hw::XlatMode mode,
                   hw::DeviceVa& va) {
    const CompositeAddress::Position pos = a.address.locate(offset);
    const DeviceChunk& c = a.address.chunks()[pos.chunk];
    piece = std::min(piece, c.size - pos.offset_in_chunk);
    hw::XlatEntry& e = cb.xlat[entry];
    e.mode = mode;
    e.base_flits = c.physical() / hw::kFlitBytes;
    e.length_flits = static_cast<std::uint32_t>(c.size / hw::kFlitBytes);
    va.segment = static_cast<std::uint8_t>(entry);
    va.flit_offset = static_cast<std::uint32_t>(pos.offset_in_chunk / hw::kFlitBytes);
  };
  auto host_iova = [&](const std::uint8_t* p) -> std::uint64_t {
    if (op.staged) return staging_->iova(slot);
    return op.host->iova + static_cast<std::uint64_t>(p - op.host->data);
  };

  switch (op.kind) {
    case OpKind::kH2D:
      sec.type = hw::DmaType::kImmediate;
      place(*op.dst, op.dst_offset + op.next, 0, hw::XlatMode::kReadWrite, sec.device);
      sec.host_iova_flits = host_iova(op.host_src + op.next) / hw::kFlitBytes;
      break;
    case OpKind::kFill:
      sec.type = hw::DmaType::kMemoryFill;
      place(*op.dst, op.dst_offset + op.next, 0, hw::XlatMode::kReadWrite, sec.device);
      sec.fill_pattern = op.pattern;
      break;
    case OpKind::kD2D:
      sec.type = hw::DmaType::kDeviceCopy;
      place(*op.dst, op.dst_offset + op.next, 0, hw::XlatMode::kReadWrite, sec.device);
      place(*op.src, op.src_offset + op.next, 1, hw::XlatMode::kReadOnly, sec.source);
      break;
    case OpKind::kD2H:
      sec.type = hw::DmaType::kImmediate;
      place(*op.src, op.src_offset + op.next, 0, hw::XlatMode::kReadOnly, sec.device);
      sec.host_iova_flits = host_iova(op.host_dst + op.next) / hw::kFlitBytes;
      break;
    default: break;
  }
  sec.length_flits = static_cast<std::uint32_t>(hw::flits_for(piece));
  sec.last_flit_bytes = static_cast<std::uint8_t>(piece % hw::kFlitBytes);
  return cb;
}

bool EngineCore::issue_cb(StreamState& s, OpState& op, std::vector<CopyIn>& copy_ins) {
  HwQueue& q = queue(op.pipe);
  if (!q.has_space()) {
    ++stats_.queue_full_stalls;
    return false;
  }
  if (tags_.empty()) return false;
  // Below an active higher priority: at most the share on this ring (a CB of at most half of it),
  // and always one CB, so that the stream moves and its answer pumps it again.
  std::uint64_t cap = limits_.max_cb_bytes;
  const bool yielded = s.yielding && op.kind != OpKind::kCompute;
  std::uint64_t& on_ring = yielded_bytes_[static_cast<std::size_t>(op.pipe)];
  if (yielded) {
    const std::uint64_t share = options_.priority_share_bytes;
    cap = std::min(cap, share / 2 / hw::kFlitBytes * hw::kFlitBytes);
    if (on_ring != 0 && on_ring + std::min(cap, op.bytes - op.next) > share) {
      ++stats_.priority_yields;
      return false;
    }
  }
  int slot = StagingPool::kNone;
  if (op.staged) {
    slot = staging_->acquire();
    if (slot == StagingPool::kNone) {
      ++stats_.staging_stalls;
      return false;
    }
    if (slot == StagingPool::kMapFailed) {  // the op fails; what it issued already completes it
      if (op.first_error.ok()) op.first_error = Status(staging_->map_error_code(), staging_->map_error());
      op.next = op.bytes;
      return true;
    }
  }
  const std::uint32_t tag = tags_.acquire();
  const bool barrier = barrier_before(s, op);
  Inflight& f = inflight_[tag];
  f.op = &op;
  f.pipe = op.pipe;
  f.staging = slot;
  f.copy_out = nullptr;
  ++op.cbs_live;
  if (op.kind == OpKind::kCompute) {
    // Its own scratch CB, which only ever holds a compute section: nothing else to clear.
    hw::ControlBlock& cb = compute_scratch_;
    cb.tag = tag;
    cb.barrier = barrier;
    cb.cmpt.type = hw::ComputeType::kTimed;
    cb.cmpt.duration_ns = op.duration_ns;
    f.bytes = 0;
    op.compute_issued = true;
    push_cb(tag, cb, false);
    return true;
  }
  std::uint64_t piece = 0;
  hw::DmaCb& cb = build_dma_cb(op, slot, cap, piece);
  cb.tag = tag;
  cb.barrier = barrier;
  f.bytes = piece;
  f.yielded = yielded;
  if (yielded) on_ring += piece;
  const std::uint64_t start = op.next;
  op.next += piece;
  if (op.staged && op.kind == OpKind::kH2D) {
    f.state = CbState::kStaging;
    q.reserve();
    copy_ins.push_back(CopyIn{&op, tag, cb, staging_->data(slot), op.host_src + start, piece, epoch_});
  } else {
    if (op.staged) f.copy_out = op.host_dst + start;
    push_cb(tag, cb, false);
  }
  return true;
}

template <class Cb>
void EngineCore::push_cb(std::uint32_t tag, const Cb& cb, bool from_reservation) {
  // A barrier orders a CB after the CBs of *earlier doorbells*: hand over everything pushed so
  // far first, or a CB pushed before it on another pipeline could share a later doorbell.
  if (cb.barrier) ring_doorbells();
  Inflight& f = inflight_[tag];
  f.state = CbState::kLive;
  // No clock read on the submission path: expire_timeouts() stamps the deadline once the CB heads
  // its ring.
  f.deadline = kUnstamped;
  queue(f.pipe).push(cb, from_reservation);
  ring_order_[static_cast<std::size_t>(f.pipe)].push_back(tag);
  answer_order_[static_cast<std::size_t>(f.pipe)].push_back(tag);
  ++stats_.cbs_submitted;
}

void EngineCore::ring_doorbells() {
  for (auto& q : queues_) {
    if (q && q->doorbell()) ++stats_.doorbells;
  }
}

void EngineCore::copy_host_data(Lock& lock, CopyInBatches& copy_ins, const std::vector<CopyOut>& copy_outs,
                                Work& work) {
  // Copy-outs, in RB order. Their ops complete together afterwards, so that completion callbacks
  // keep the order completions happen in.
  for (const CopyOut& c : copy_outs) {
    std::memcpy(c.dst, c.src, c.len);
    device_->host_copied(c.len);
  }
  // Copy-ins: each CB goes to the device as soon as its piece is in staging, so the DMA of one
  // piece overlaps the host copy of the next (the stream stays busy, so order is kept).
  for (auto& batch : copy_ins) {
    for (const CopyIn& c : batch.second) {
      std::memcpy(c.staging, c.src, c.len);
      device_->host_copied(c.len);  // before the doorbell below: a simulated host pays for it
      lock.lock();
      if (c.epoch != epoch_) {
        abandon_copy_in(c, work);
      } else {
        stats_.bytes_staged += c.len;
        push_cb(c.tag, c.cb, true);
        ring_doorbells();
      }
      lock.unlock();
    }
  }
}

void EngineCore::abandon_copy_in(const CopyIn& c, Work& work) {
  // A reset or shutdown failed the op meanwhile and left this CB to whoever holds its copy-in; the
  // rings were reprogrammed, so there is no reservation to consume either.
  Inflight& f = inflight_[c.tag];
  staging_->release(f.staging);
  clear_inflight(f);
  tags_.release(c.tag);
  --c.op->cbs_live;
  maybe_complete(*c.op, work);
  work.repump = true;
}

void EngineCore::host_data_copied(CopyInBatches& copy_ins, const std::vector<CopyOut>& copy_outs, Work& work) {
  for (const CopyOut& c : copy_outs) {
    staging_->release(c.slot);
    work.repump = true;
    --c.op->cbs_live;
    --c.op->copying_out;
    maybe_complete(*c.op, work);
  }
  for (auto& batch : copy_ins) {
    batch.first->busy = false;
    pump(batch.first, work, false);
  }
}

void EngineCore::finish_task(OpState& op, Status status) {
  Lock lock(mu_);
  if (op.finished) return;  // ended already, or cancelled by reset or close
  Work work;
  complete(op, std::move(status), work);
  settle(work);
  ring_doorbells();
  run_work(lock, work);
}

void EngineCore::run_work(Lock& lock, Work& work) {
  settle(work);
  bool unlocked = false;  // this thread copied or called back without the lock
  for (;;) {
    if (!stagers_.empty() && !stop_stagers_) hand_to_stagers(lock, work);  // large copies, queued
    if (work.copy_ins.empty() && work.copy_outs.empty() && work.callbacks.empty()) break;
    Work w;
    std::swap(w.copy_ins, work.copy_ins);
    std::swap(w.copy_outs, work.copy_outs);
    std::swap(w.callbacks, work.callbacks);
    std::swap(w.tasks, work.tasks);
    ++unlocked_work_;
    unlocked = true;
    lock.unlock();
    copy_host_data(lock, w.copy_ins, w.copy_outs, work);
    std::vector<CallbackResult> results;
    for (OpState* op : w.callbacks) {
      Status st;
      const bool task = op->kind == OpKind::kHostTask;  // completes through its TaskCompletion
      try {
        const CallbackScope scope(this);
        (*op->host_fn)();
      } catch (const std::exception& e) {
        st = Status(ErrorCode::kCallbackFailed, std::string(task ? "host task" : "host callback") + " threw: " + e.what());
      } catch (...) {
        st = Status(ErrorCode::kCallbackFailed, std::string(task ? "host task" : "host callback") +
                                                    " threw a non-std exception");
      }
      if (!task || !st.ok()) results.push_back({op, std::move(st)});
    }
    lock.lock();
    --unlocked_work_;
    if (!w.copy_outs.empty()) draining_ = false;
    host_data_copied(w.copy_ins, w.copy_outs, work);
    for (auto& r : results) {
      if (!r.op->finished) complete(*r.op, std::move(r.status), work);  // a task may have ended itself
    }
    settle(work);
    ring_doorbells();
  }
  unlocked |= run_completions(lock);
  // Waiters learn of completions; reset() and shutdown() may wait for quiet.
  if (work.completed_any || (unlocked && unlocked_work_ == 0)) {
    work.completed_any = false;
    wake_waiters(lock);
  }
}

bool EngineCore::run_completions(Lock& lock) {
  // Ops become done on several threads (a waiter, the poller, a staging thread); their callbacks
  // run on one at a time, in the order the ops became done. Whoever finds none running runs
  // them all; the others go on.
  if (completions_running_ || completions_.empty()) return false;
  completions_running_ = true;
  while (!completions_.empty()) {
    std::vector<std::shared_ptr<OpState>> batch(std::make_move_iterator(completions_.begin()),
                                                std::make_move_iterator(completions_.end()));
    completions_.clear();
    ++unlocked_work_;
    lock.unlock();
    const CallbackScope scope(this);
    for (const auto& op : batch) {
      try {
        if (options_.observer) {
          options_.observer->on_complete_timed(op->id, op->final_status.get(),
                                               OpTimes{op->start_ns, op->end_ns, op->host_start_ns, op->host_end_ns});
        }
        if (op->on_complete) op->on_complete(op->final_status.get());
      } catch (...) {
        // A completion callback has nobody to report to; the op's status stands.
      }
    }
    batch.clear();  // the last references may run destructors: still without the lock
    lock.lock();
    --unlocked_work_;
  }
  completions_running_ = false;
  return true;
}

}  // namespace spyre_dma::detail
