// Staging threads: the host copies of staged transfers (pageable or unaligned host memory) run
// here, not on the thread that submits nor on the completion path, so a waiter or the poller
// keeps draining RBs while a piece is copied, and the copy of piece n+1 overlaps the DMA of
// piece n. EngineOptions::staging_threads says how many; 0 keeps the copies on those threads.
#include <cstring>

#include "engine_core.hpp"

namespace spyre_dma::detail {

void EngineCore::start_stagers() {
  for (unsigned i = 0; i < options_.staging_threads; ++i) stagers_.push_back(std::make_unique<Stager>());
  for (auto& st : stagers_) {
    Stager* me = st.get();
    // The thread holds the engine (see start()).
    me->thread = std::thread([me, keep = shared_from_this()] { keep->stager_main(*me); });
  }
}

void EngineCore::stop_stagers() {
  {
    Lock lock(mu_);
    stop_stagers_ = true;
  }
  for (auto& st : stagers_) st->cv.notify_one();
  // Ended, not removed: another thread may still look at stagers_ (under the lock); with
  // stop_stagers_ set, run_work() does the copies itself.
  for (auto& st : stagers_) end_thread(st->thread);
}

void EngineCore::hand_to_stagers(Lock& lock, Work& work) {
  // Below this a copy costs less than waking a staging thread (and being woken back): the thread
  // that found it copies it, when that keeps the stream's order (its staging thread has nothing
  // of it queued or running). Above it, the copy of one piece overlapping the DMA of the next
  // is what counts.
  constexpr std::uint64_t kInlineCopyBytes = 64 * 1024;
  if (work.copy_ins.empty() && work.copy_outs.empty()) return;
  const bool drained = !work.copy_outs.empty();  // this thread holds draining_
  std::vector<StagingJob> jobs(stagers_.size());
  std::vector<std::uint64_t> bytes(stagers_.size(), 0);
  auto index_of = [&](const StreamState* s) -> std::size_t { return (s ? s->id : 0) % jobs.size(); };
  for (auto& batch : work.copy_ins) {
    const std::size_t i = index_of(batch.first.get());
    for (const CopyIn& c : batch.second) bytes[i] += c.len;
    jobs[i].copy_ins.push_back(std::move(batch));
  }
  for (CopyOut& c : work.copy_outs) {
    const std::size_t i = index_of(c.op->stream);
    bytes[i] += c.len;
    jobs[i].copy_outs.push_back(std::move(c));
  }
  work.copy_ins.clear();
  work.copy_outs.clear();
  std::vector<Stager*> wake;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    StagingJob& job = jobs[i];
    if (job.copy_ins.empty() && job.copy_outs.empty()) continue;
    Stager& st = *stagers_[i];
    if (bytes[i] <= kInlineCopyBytes && st.jobs.empty() && !st.copying) {
      for (auto& batch : job.copy_ins) work.copy_ins.push_back(std::move(batch));
      for (CopyOut& c : job.copy_outs) work.copy_outs.push_back(std::move(c));
      continue;
    }
    st.jobs.push_back(std::move(job));
    ++unlocked_work_;  // until the job is done: reset() and shutdown() wait for it
    if (st.idle) wake.push_back(&st);
  }
  // Copy-outs queued in RB order, each stream's on one thread: the next drain may go ahead, unless
  // some stay here (run_work() lets it go on when they are done).
  if (drained && work.copy_outs.empty()) draining_ = false;
  if (wake.empty()) return;
  // Notified without the lock, so a stager does not wake into it; the queued jobs keep reset()
  // and shutdown() out meanwhile.
  lock.unlock();
  for (Stager* st : wake) st->cv.notify_one();
  lock.lock();
}

void EngineCore::settle_staging_jobs(Lock& lock, Work& work, std::chrono::nanoseconds timeout) {
  drop_staging_jobs(work);
  auto settled = [&] {
    for (const auto& st : stagers_) {
      if (st->copying) return false;
    }
    return true;
  };
  ++cv_waiters_;
  ++quiet_waiters_;
  (void)done_cv_.wait_for(lock, timeout, settled);
  --quiet_waiters_;
  --cv_waiters_;
}

void EngineCore::drop_staging_jobs(Work& work) {
  for (auto& st : stagers_) {
    while (!st->jobs.empty()) {
      StagingJob job = std::move(st->jobs.front());
      st->jobs.pop_front();
      for (auto& batch : job.copy_ins) {
        for (const CopyIn& c : batch.second) abandon_copy_in(c, work);
      }
      // Copy-outs of CBs answered Good: their ops keep their data (fail_everything lets them
      // complete as they are). Rare, and short: copied here, under the lock.
      for (const CopyOut& c : job.copy_outs) std::memcpy(c.dst, c.src, c.len);
      host_data_copied(job.copy_ins, job.copy_outs, work);
      --unlocked_work_;
    }
  }
}

void EngineCore::stager_main(Stager& me) {
  Lock lock(mu_);
  for (;;) {
    if (me.jobs.empty()) {
      if (stop_stagers_) break;
      me.idle = true;
      me.cv.wait_for(lock, std::chrono::milliseconds(100));  // bounded: a lost wake-up costs a slice
      me.idle = false;
      continue;
    }
    StagingJob job = std::move(me.jobs.front());
    me.jobs.pop_front();
    me.copying = true;
    Work work;
    lock.unlock();
    copy_host_data(lock, job.copy_ins, job.copy_outs, work);
    lock.lock();
    host_data_copied(job.copy_ins, job.copy_outs, work);
    settle(work);  // the ops it finished are done before reset() may return
    me.copying = false;
    --unlocked_work_;
    if (quiet_waiters_ > 0) done_cv_.notify_all();  // reset() or shutdown() (rare: under the lock)
    work.completed_any = true;  // a waiter on done_cv_ may wait for this job (or for quiet)
    run_work(lock, work);       // completions and callbacks; further copies are queued again
    ring_doorbells();
  }
}

}  // namespace spyre_dma::detail
