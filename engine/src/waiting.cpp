// Waiting and polling on the host side: the thread that waits reaps its own RBs (an adaptive spin
// on the rings, then the device's interrupt), the poller does it for work nobody waits for, and
// the queries step a host-driven device. docs/engine.md, "Completion", says how they fit.
#include <algorithm>
#include <array>
#include <string>
#include <thread>

#include "engine_core.hpp"
#include "spyre_dma/deadline.hpp"
#include "spyre_dma/wait_interrupt.hpp"

namespace spyre_dma::detail {

Status EngineCore::wait_until(const std::function<bool()>& pred, std::chrono::nanoseconds timeout,
                              const StreamState* held) {
  const auto start = Clock::now();
  const auto deadline = deadline_after<Clock>(start, timeout);
  Lock lock(mu_);
  const auto spin_until = start + spin_budget();
  const std::function<bool()>* interrupted = WaitInterruptScope::current();
  auto next_check = start + kWaitInterruptEvery;
  ++waiters_;
  Status result;
  while (!pred()) {
    if (closed_) {  // shutdown() failed everything it could; what is left never completes
      result = Status(ErrorCode::kClosed, "wait: engine closed");
      break;
    }
    const bool moved = progress(lock);
    if (pred()) break;
    // Checked even while work moves: on a host-driven device every step moves something, and a
    // long simulated op must not keep the waiter past its timeout.
    const auto now = Clock::now();
    if (now >= deadline) {
      // What holds it (docs/engine.md, "Stalls"): the caller learns which op to look at.
      result = Status(ErrorCode::kWaitTimeout,
                      "gave up after " + std::to_string(timeout.count()) + " ns" + stall_report(held));
      break;
    }
    if (interrupted && now >= next_check) {
      // The caller's check runs without the lock: it may take its own (a binding's interpreter lock).
      next_check = now + kWaitInterruptEvery;
      lock.unlock();
      bool stop = true;  // a check that throws ends the wait too (the waiter count stays right)
      try {
        stop = (*interrupted)();
      } catch (...) {
      }
      lock.lock();
      if (stop) {
        result = Status(ErrorCode::kWaitTimeout,
                        "interrupted after " +
                            std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(now - start).count()) +
                            " ns");
        break;
      }
      continue;
    }
    if (moved) continue;
    if (caller_driven_) {
      const auto slice = std::min<std::chrono::nanoseconds>(deadline - now, 10ms);
      lock.unlock();
      (void)device_->wait_for_interrupt(slice);
      lock.lock();
    } else {
      block(lock, deadline, spin_until);
    }
  }
  --waiters_;
  // The last waiter hands the rings back to the poller when work is still live; with nothing in
  // flight the parked poller resumes on its own slice (a round trip then costs no wake-up).
  const bool wake_poller = waiters_ == 0 && poller_parked_ && anything_live();
  // Threads on done_cv_ take the interrupt over from one that leaves.
  const bool hand_over = cv_waiters_ > 0 && !irq_held_;
  lock.unlock();
  if (wake_poller) poller_cv_.notify_one();
  if (hand_over) done_cv_.notify_all();
  return result;
}

void EngineCore::block(Lock& lock, Clock::time_point deadline, Clock::time_point spin_until) {
  // Bounds every sleep, so CB timeouts are checked and a waiter never depends on one wake-up.
  constexpr auto kSlice = 1ms;
  const auto now = Clock::now();
  const bool elsewhere = unlocked_work_ > 0 || draining_;  // another thread completes what it holds
  // One spinner at a time: it reaps for everyone, and more would only take cores from the device.
  if (now < spin_until && !elsewhere && spinning_ == 0 && spin_for_rb(lock, std::min(spin_until, deadline))) {
    return;
  }
  if (!irq_held_ && !elsewhere) {
    irq_held_ = true;
    lock.unlock();
    (void)device_->wait_for_interrupt(std::min<std::chrono::nanoseconds>(deadline - now, kSlice));
    lock.lock();
    irq_held_ = false;
    return;
  }
  ++cv_waiters_;
  done_cv_.wait_until(lock, std::min(deadline, now + kSlice));
  --cv_waiters_;
}

bool EngineCore::spin_for_rb(Lock& lock, Clock::time_point until) {
  const RbSpin r = watch_rbs(lock, until, spin_yields_);
  if (r == RbSpin::kNothingDue) return false;
  adapt_spin(r == RbSpin::kLanded);
  return true;
}

EngineCore::RbSpin EngineCore::watch_rbs(Lock& lock, Clock::time_point until, bool yield) {
  // reset() reprograms the rings after waiting for spinners, and drops the lock on the way (for
  // staging threads): no spin may start in between.
  if (resetting_ || closed_) return RbSpin::kNothingDue;
  std::array<HwQueue::RbWatch, hw::kNumPipelines> watch{};
  std::size_t n = 0;
  for (auto& q : queues_) {
    if (q && q->occupied() > 0) watch[n++] = q->rb_watch();
  }
  if (n == 0) return RbSpin::kNothingDue;  // no RB is due: the wait is for something else
  ++spinning_;  // reset() and shutdown() leave the rings alone until it is back
  lock.unlock();
  bool landed = false;
  for (unsigned round = 0; !landed; ++round) {
    for (std::size_t i = 0; i < n && !landed; ++i) landed = watch[i].landed();
    if (landed) break;
    if (yield) {
      if (Clock::now() >= until) break;
      std::this_thread::yield();
    } else {
      if (round % 64 == 63 && Clock::now() >= until) break;
      HwQueue::cpu_relax();
    }
  }
  lock.lock();
  if (--spinning_ == 0) wake_waiters(lock);
  return landed ? RbSpin::kLanded : RbSpin::kSpent;
}

std::chrono::nanoseconds EngineCore::spin_budget() {
  // With the budget spent, every kSpinProbe-th wait spins in full once more: the device may have
  // become fast again (a core freed up) and a landing spin restores the budget.
  constexpr unsigned kSpinProbe = 64;
  if (spin_budget_ == std::chrono::nanoseconds::zero() && ++spin_probe_ % kSpinProbe == 0) {
    return options_.poll_spin;
  }
  return spin_budget_;
}

void EngineCore::adapt_spin(bool landed) {
  // Below this a spin is shorter than the wake-up it tries to save.
  constexpr std::chrono::nanoseconds kShortestSpin = 500ns;
  if (landed) {
    spin_budget_ = options_.poll_spin;
  } else {
    spin_budget_ /= 2;
    if (spin_budget_ < kShortestSpin) spin_budget_ = std::chrono::nanoseconds::zero();
  }
}

void EngineCore::wait_for_spinners(Lock& lock) {
  ++cv_waiters_;
  ++quiet_waiters_;
  // A spin lasts poll_spin at most, a wake-up one notify.
  done_cv_.wait(lock, [&] { return spinning_ == 0 && waking_ == 0; });
  --quiet_waiters_;
  --cv_waiters_;
}

void EngineCore::wake_waiters(Lock& lock) {
  if (cv_waiters_ == 0) return;
  // The lock is dropped mid-way through the caller's step: waking_ keeps reset() and shutdown()
  // from reprogramming or freeing the rings and staging buffers the caller goes on to use.
  ++waking_;
  lock.unlock();
  done_cv_.notify_all();
  lock.lock();
  // Only reset() and shutdown() wait for waking_ to fall; they are told under the lock (rare).
  if (--waking_ == 0 && quiet_waiters_ > 0) done_cv_.notify_all();
}

Status EngineCore::wait_op(const OpState& op, std::chrono::nanoseconds timeout) {
  const StreamState* held;
  {
    Lock lock(mu_);
    held = op.stream;  // null once the op has retired: then it is done
  }
  Status s = wait_until([&] { return op.done.load(std::memory_order_acquire); }, timeout, held);
  if (!s.ok()) return s;
  return op.final_status.get();
}

Status EngineCore::wait_stream(StreamState& stream, std::chrono::nanoseconds timeout, bool clear_error) {
  std::uint64_t target;
  {
    Lock lock(mu_);
    target = stream.submitted;
  }
  Status s = wait_until([&] { return stream.retired >= target; }, timeout, &stream);
  if (!s.ok()) return s;
  Lock lock(mu_);
  Status first = stream.first_error;
  if (clear_error) {
    stream.first_error = Status();
    // The failure this synchronize saw is the caller's now: later ops run again.
    if (!stream.poison.ok() && stream.poison_seq < target) {
      stream.poison = Status();
      stream.poison_seq = 0;
    }
  }
  return first;
}

Status EngineCore::wait_event(const EventState& event, std::chrono::nanoseconds timeout) {
  std::shared_ptr<OpState> marker;
  {
    Lock lock(mu_);
    marker = event.marker;
  }
  if (!marker) return Status();
  // The failure before the record that the event carries (docs/engine.md, "When an op fails"),
  // else ok: a record a reset cancelled carries nothing.
  Status s = wait_op(*marker, timeout);
  return s.code() == ErrorCode::kWaitTimeout || s.code() == ErrorCode::kDependencyFailed ? s : Status();
}

Status EngineCore::wait_all(std::chrono::nanoseconds timeout) {
  std::vector<std::pair<StreamState*, std::uint64_t>> targets;
  {
    Lock lock(mu_);
    for (auto& s : streams_) targets.emplace_back(s.get(), s->submitted);
  }
  return wait_until(
      [&] {
        return std::all_of(targets.begin(), targets.end(),
                           [](const auto& t) { return t.first->retired >= t.second; });
      },
      timeout);
}

void EngineCore::poll(Lock& lock) {
  if (!caller_driven_ || closed_) return;
  if (progress(lock)) return;
  // Nothing in the rings yet: give the device its one step. A host-driven device advances its
  // time inside wait_for_interrupt (to its next interrupt, or until it has nothing left to do);
  // a self-timed one in caller-driven mode only reports what is pending.
  lock.unlock();
  (void)device_->wait_for_interrupt(std::chrono::nanoseconds::zero());
  lock.lock();
  if (!closed_) progress(lock);  // shutdown() may have freed the rings meanwhile
}

bool EngineCore::op_done(const OpState& op) {
  if (op.done.load(std::memory_order_acquire)) return true;
  Lock lock(mu_);
  poll(lock);
  return op.done.load(std::memory_order_acquire);
}

bool EngineCore::stream_idle(const StreamState& stream) {
  Lock lock(mu_);
  if (!stream.window.empty()) poll(lock);
  return stream.window.empty();
}

std::uint64_t EngineCore::event_time_ns(const EventState& event) {
  Lock lock(mu_);
  const auto& m = event.marker;
  if (!m || !m->done.load(std::memory_order_acquire) || !m->final_status.ok()) return 0;
  return m->end_ns;
}

bool EngineCore::event_done(const EventState& event) {
  Lock lock(mu_);
  if (event.marker && !event.marker->done) poll(lock);
  return !event.marker || event.marker->done.load(std::memory_order_acquire);
}

void EngineCore::poller_main() {
  Lock lock(mu_);
  auto idle_since = Clock::now();
  while (!stop_poller_) {
    watch_stalls(lock);
    if (stop_poller_) break;  // a report may have closed the engine
    if (waiters_ > 0) {
      // A waiting thread reaps (and runs what completes); the poller would only take its
      // interrupts. Bounded, so the poller resumes when waiters leave with work still live.
      poller_parked_ = true;
      poller_cv_.wait_for(lock, 1ms, [&] { return stop_poller_ || waiters_ == 0; });
      poller_parked_ = false;
      idle_since = Clock::now();
      continue;
    }
    if (progress(lock)) {
      idle_since = Clock::now();
      continue;
    }
    // A short spin on the RB rings before sleeping, without the engine lock: a poller that took
    // the lock to look would meet every submitting thread on it. It yields between looks (the
    // device may need this core), and with no RB due it sleeps at once.
    if (Clock::now() - idle_since < options_.poll_spin && spinning_ == 0 &&
        watch_rbs(lock, idle_since + options_.poll_spin, true) != RbSpin::kNothingDue) {
      continue;
    }
    // Sleep until the device raises an interrupt; the bound keeps CB timeouts checked. A thread
    // that starts waiting meanwhile sleeps on done_cv_ and is woken by this one's progress.
    const bool live = anything_live();
    irq_held_ = true;
    lock.unlock();
    (void)device_->wait_for_interrupt(live ? 1ms : 5ms);
    lock.lock();
    irq_held_ = false;
    idle_since = Clock::now();
  }
}

}  // namespace spyre_dma::detail
