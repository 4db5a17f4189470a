// EngineCore: the engine behind the public Engine/Stream/Event/Op handles.
//
// One mutex guards all scheduling state (streams, queues, tags, in-flight CBs); host copies into
// and out of staging buffers and user callbacks run outside it. Every thread that enters
// progress() (the poller, a waiter in caller-driven mode, a submitter) does a share of the work.
#pragma once

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "device_guard.hpp"
#include "engine_state.hpp"
#include "footprint.hpp"
#include "host_memory.hpp"
#include "hw_queue.hpp"
#include "spyre_dma/engine.hpp"
#include "spyre_dma/observer.hpp"
#include "staging_pool.hpp"
#include "tag_fifo.hpp"
#include "tag_pool.hpp"

namespace spyre_dma::detail {

class EngineCore : public std::enable_shared_from_this<EngineCore> {
 public:
  using Clock = std::chrono::steady_clock;

  EngineCore(std::shared_ptr<Device> device, EngineOptions options);
  ~EngineCore();
  void start();     // after construction: identify, reset, program queues, start the poller
  // Idempotent: drain (bounded), cancel the rest, stop the engine's threads, quiesce the device.
  // Called from one of the engine's own callbacks (an Engine destroyed there), it only cancels
  // and stops: what waits (for that callback, for the thread it runs on) is left to the last
  // reference's going.
  void shutdown();

  std::shared_ptr<StreamState> create_stream(StreamOptions options);
  std::shared_ptr<StreamState> pooled_stream(bool high_priority);
  std::shared_ptr<EventState> create_event();
  std::shared_ptr<AllocationState> allocate(std::uint64_t bytes, AllocOptions options);
  std::shared_ptr<HostRegistrationState> register_host(void* ptr, std::size_t bytes, bool owned);

  // Validates, queues and starts feeding `op` (built by the caller); throws InvalidArgument or
  // Closed without side effects.
  std::shared_ptr<OpState> submit(const std::shared_ptr<StreamState>& stream,
                                  std::shared_ptr<OpState> op);
  std::shared_ptr<OpState> submit_record(const std::shared_ptr<StreamState>& stream,
                                         const std::shared_ptr<EventState>& event);
  std::shared_ptr<OpState> submit_wait(const std::shared_ptr<StreamState>& stream,
                                       const std::shared_ptr<EventState>& event);

  Status wait_op(const OpState& op, std::chrono::nanoseconds timeout);
  Status wait_stream(StreamState& stream, std::chrono::nanoseconds timeout, bool clear_error);
  Status wait_event(const EventState& event, std::chrono::nanoseconds timeout);
  Status wait_all(std::chrono::nanoseconds timeout);
  // The queries a runtime polls with. On a caller-driven engine (a host-driven device, or
  // CompletionMode::kCallerDriven) each is one step of progress, so polling alone completes work.
  bool op_done(const OpState& op);
  bool stream_idle(const StreamState& stream);
  bool event_done(const EventState& event);
  std::uint64_t event_time_ns(const EventState& event);  // 0: not recorded, not done, or failed
  Status stream_error(const StreamState& stream);

  Status reset(std::chrono::nanoseconds timeout);
  void begin_batch();
  void end_batch();
  EngineStats stats();
  std::vector<StreamStall> stalls(std::chrono::nanoseconds idle_for);
  // The watchdog (EngineOptions::stall_watchdog), on the poller thread: reports the stalls not
  // reported yet, without the lock.
  void watch_stalls(std::unique_lock<std::mutex>& lock);
  const DeviceLimits& limits() const noexcept { return limits_; }
  const EngineOptions& options() const noexcept { return options_; }
  Device& device() noexcept { return *device_->inner(); }  // the caller's, not the guard
  const std::shared_ptr<Device>& device_ptr() const noexcept { return device_->inner(); }
  // A new op of this engine, its storage from the op pool.
  std::shared_ptr<OpState> make_op(OpKind kind);
  bool owns(const AllocationState& a) const noexcept { return a.allocator == allocator_; }
  std::shared_ptr<HostRegistrationState> find_registration(const void* p, std::size_t n) const {
    return registry_->find(p, n);
  }

 private:
  using Lock = std::unique_lock<std::mutex>;

  // Marks the running thread as inside a callback of `core` (user callbacks, the observer, host
  // callbacks) for the scope's life; nests.
  class CallbackScope {
   public:
    explicit CallbackScope(const EngineCore* core) noexcept;
    ~CallbackScope();
    CallbackScope(const CallbackScope&) = delete;
    CallbackScope& operator=(const CallbackScope&) = delete;

   private:
    const EngineCore* outer_;
  };
  void close_from_callback();  // shutdown() from one of this engine's callbacks
 public:
  // A host_task's end (TaskCompletion): completes the op unless it has already (exactly once).
  void finish_task(OpState& op, Status status);

 private:
  void tear_down();            // idempotent: threads ended, device quiesced, rings freed
  static void end_thread(std::thread& t);  // joins it, or lets it go when it is this thread

  enum class CbState : std::uint8_t { kFree, kStaging, kLive, kTimedOut };
  static constexpr Clock::time_point kUnstamped = Clock::time_point::max();
  // The engine's own references to an op below (CBs in flight, host copies, callbacks to run) are
  // plain pointers: each holds one of the op's CBs or its callback, so the op is not finished, so
  // it is still in its stream's window, which owns it. (A CB that timed out lets go of its op.)
  struct Inflight {
    OpState* op = nullptr;
    hw::Pipeline pipe = hw::Pipeline::kDmai;
    CbState state = CbState::kFree;
    Clock::time_point deadline{};  // kUnstamped until the CB heads its ring (expire_timeouts)
    int staging = StagingPool::kNone;
    std::uint8_t* copy_out = nullptr;  // staged D2H: where the staging buffer goes
    std::uint64_t bytes = 0;
    bool yielded = false;  // issued within a ring share: its bytes count in yielded_bytes_
  };
  // Host work collected under the lock and done outside it.
  struct CopyIn {
    OpState* op;
    std::uint32_t tag;
    hw::DmaCb cb;
    std::uint8_t* staging;
    const std::uint8_t* src;
    std::uint64_t len;
    std::uint64_t epoch;  // a reset or shutdown meanwhile abandons the CB
  };
  struct CopyOut {
    OpState* op;
    int slot;
    std::uint8_t* dst;
    const std::uint8_t* src;
    std::uint64_t len;
  };
  struct CallbackResult {
    OpState* op;
    Status status;
  };
  // A stream's staged H2D pieces of one pump, copied in by one thread in order.
  using CopyInBatches = std::vector<std::pair<std::shared_ptr<StreamState>, std::vector<CopyIn>>>;
  struct Work {
    CopyInBatches copy_ins;
    std::vector<CopyOut> copy_outs;
    std::vector<OpState*> callbacks;  // host_callback and host_task ops to run
    // The host_task ops among them, held: a task may complete (and its op retire from the window)
    // from another thread while its start runs, or be cancelled by reset meanwhile.
    std::vector<std::shared_ptr<OpState>> tasks;
    std::vector<StreamState*> touched;  // streams with newly completed ops
    bool completed_any = false;
    // Staging buffers of CBs whose RBs were consumed: unmapped only after RB_CI hands the RB slots
    // back, so no observer of the interface sees a buffer unmapped while its CB is outstanding.
    std::vector<int> staging_releases;
    // A queue slot, tag or staging buffer came back, or a CB failed: blocked streams must be fed
    // again even when no op completed (an op of many CBs waits for its own CBs' resources, and a
    // failed op that is only partly issued completes from pump()).
    bool repump = false;
    bool host_work() const noexcept {
      return !copy_ins.empty() || !copy_outs.empty() || !callbacks.empty();
    }
    // Nothing for run_work() to do (with no completions queued either).
    bool idle() const noexcept { return !host_work() && touched.empty() && !completed_any && !repump; }
  };

  // All of these run with the lock held.
  // Numbers `op` and appends it to its stream's window (with an observer, after on_submit, which
  // runs without the lock); throws Closed, naming `what`, once the engine is closed.
  void enqueue(Lock& lock, const char* what, const std::shared_ptr<StreamState>& stream,
               const std::shared_ptr<OpState>& op, const EventState* event);
  bool progress(Lock& lock);  // may drop and retake the lock; true if anything moved
  void poll(Lock& lock);      // a polling thread's step: progress, else one device step, then progress
  bool drain_rbs(Work& work);
  bool expire_timeouts(Work& work);
  void pump(const std::shared_ptr<StreamState>& s, Work& work, bool from_submit);
  void pump_blocked(Work& work);
  bool can_start(StreamState& s, std::size_t index, const OpState& op) const;
  bool issue_cb(StreamState& s, OpState& op, std::vector<CopyIn>& copy_ins);
  // kStrict: whether the next CB of `op` must wait for everything before it (its first CB, on
  // another pipeline than the stream's previous device op); records the pipeline.
  bool barrier_before(StreamState& s, const OpState& op);
  // The next CB of a copy or fill `op` (tag and barrier the caller's), valid until the next call;
  // `piece`: the bytes it moves, at most `cap`.
  hw::DmaCb& build_dma_cb(const OpState& op, int slot, std::uint64_t cap, std::uint64_t& piece);
  template <class Cb>  // hw::DmaCb or, for compute, hw::ControlBlock
  void push_cb(std::uint32_t tag, const Cb& cb, bool from_reservation);
  void finish_cb(std::uint32_t tag, const hw::ResponseBlock& rb, Work& work);
  void maybe_complete(OpState& op, Work& work);
  void complete(OpState& op, Status status, Work& work);
  static Status awaited_status(const OpState& wait);
  // After `failed` completed with an error, on a FailurePolicy::kPropagate stream: the ops of
  // its stream after it fail with it.
  void poison_after(StreamState& s, const OpState& failed);
  // `op` finished with a footprint (order_by_footprint): the ops that waited for its bytes may go,
  // and on a propagating stream carry its failure.
  void release_footprint(OpState& op, Work& work);
  void publish(OpState& op, Work& work);  // done + on_complete, once
  // The window's reference to `op`, while it is in its stream's window (not yet retired).
  static const std::shared_ptr<OpState>& owner(const OpState& op);
  // EngineOptions::observer's on_submit, outside the lock (only when an observer is set).
  void notify_submit(const StreamState& stream, const OpState& op, const EventState* event) const;
  void retire(StreamState& s, Work& work);
  void settle(Work& work);  // retires touched streams, feeds blocked ones, rings doorbells
  void fail_everything(const Status& why, Work& work);
  // Reads STATUS after a device-side reset was reported; true once it has gone fatal.
  bool check_fatal(Work& work);
  // The device broke the ring contract on pipeline `p` (`what` says how, naming tag and index):
  // it is not trusted again until reset(). Stops it fetching, fails everything in flight and
  // queued with kDeviceFault (exactly once each), and makes new work fail at once.
  void device_misbehaved(hw::Pipeline p, std::uint32_t tag, std::uint64_t index, const std::string& what,
                         Work& work);
  // The device failed (DeviceGuard): fails everything with kDeviceFault, once, and new work at
  // once; reset() cannot bring it back. True when this call reported it.
  bool device_lost(Work& work);
  Status lost_device_status() const;
  // On a CB timeout: reads the pipeline's CB_CI and RB_PI; an index no sane device can have is a
  // misbehaviour (true), else the timeout stands.
  bool check_indices(unsigned p, Work& work);
  void ring_doorbells();
  void set_blocked(const std::shared_ptr<StreamState>& s, bool blocked);
  void run_work(Lock& lock, Work& work);  // drops the lock while copying and calling back
  bool run_completions(Lock& lock);        // the queued completion callbacks, in order; true: ran some
  // The host side of staging: the copies themselves (called and returning without the lock; each
  // copied-in piece's CB is pushed under it), then, with the lock, what they free and feed.
  void copy_host_data(Lock& lock, CopyInBatches& copy_ins, const std::vector<CopyOut>& copy_outs, Work& work);
  void host_data_copied(CopyInBatches& copy_ins, const std::vector<CopyOut>& copy_outs, Work& work);
  void abandon_copy_in(const CopyIn& c, Work& work);  // its op was failed by reset() or shutdown()
  // Staging threads (EngineOptions::staging_threads), in staging_threads.cpp.
  void start_stagers();
  void stop_stagers();
  void hand_to_stagers(Lock& lock, Work& work);  // moves the work's host copies to their threads
  // reset() and shutdown(), after failing everything: jobs not started are done (copy-ins dropped,
  // copy-outs copied) on this thread, and the ones running are waited for, so every op is
  // settled when they return.
  void settle_staging_jobs(Lock& lock, Work& work, std::chrono::nanoseconds timeout);
  // reset()'s steps on the device and the rings, with resetting_ set.
  Status reset_device(Lock& lock, Work& work, std::chrono::nanoseconds timeout);
  void drop_staging_jobs(Work& work);  // the queued jobs (not the running ones), as above
  bool wait_for_quiet(Lock& lock, std::chrono::nanoseconds timeout);  // no work outside the lock
  // Notifies done_cv_ when a thread waits on it, with the lock dropped for the notify (a woken
  // thread must not run into a held lock); returns with it held again.
  void wake_waiters(Lock& lock);
  // `held`: the stream whose stall a timed-out wait names (null: every stalled stream).
  Status wait_until(const std::function<bool()>& pred, std::chrono::nanoseconds timeout,
                    const StreamState* held = nullptr);
  // Stalls (stalls.cpp), under the lock: what holds `s`, and the streams that do, in turn.
  StreamStall stall_of(const StreamState& s, Clock::time_point now) const;
  // What `op` (unfinished, of `s`) waits for, in words, and the op of another stream it waits on
  // (an event's record, or an op touching its bytes), if any.
  std::string waiting_for_here(const StreamState& s, const OpState& op) const;
  const OpState* awaited_op(const OpState& op) const;
  std::string stall_report(const StreamState* held) const;
  // A waiting thread's step when progress() found nothing: spin on the RB rings while the spin
  // lasts, else sleep in the device's interrupt (one thread at a time), else on done_cv_.
  void block(Lock& lock, Clock::time_point deadline, Clock::time_point spin_until);
  // Spins, without the lock, until an RB lands in a ring that has CBs outstanding or `until`;
  // false, at once and with the lock held, when no ring has CBs outstanding.
  bool spin_for_rb(Lock& lock, Clock::time_point until);
  // The watch itself, shared with the poller: without the lock, until an RB lands in a ring with
  // CBs outstanding or `until` (yielding between looks, or pausing the CPU); with it held again.
  enum class RbSpin : std::uint8_t { kNothingDue, kLanded, kSpent };
  RbSpin watch_rbs(Lock& lock, Clock::time_point until, bool yield);
  // The adaptive spin: how long a wait spins before it sleeps, and how a spin's outcome moves it.
  std::chrono::nanoseconds spin_budget();
  void adapt_spin(bool landed);
  void wait_for_spinners(Lock& lock);
  void poller_main();
  bool anything_live() const noexcept;
  bool higher_priority_blocked(const StreamState& s) const;
  // Whether `s` keeps to the ring share now: a stream of higher priority has work, or had within
  // priority_hold (scheduler.cpp).
  bool yields(const StreamState& s);
  // The clock priority_hold runs on: the host's on the device's clock where it has one (simulated
  // time on sim and rtl, so a simulation stays deterministic), else the steady clock.
  std::uint64_t priority_clock_ns();
  // A CB's ring slot is free again (answered, abandoned, failed by a reset): clears `f`.
  void clear_inflight(Inflight& f);
  Status status_from_rb(const OpState& op, const hw::ResponseBlock& rb) const;
  HwQueue& queue(hw::Pipeline p) { return *queues_[static_cast<std::size_t>(p)]; }

  std::shared_ptr<DeviceGuard> device_;
  EngineOptions options_;
  DeviceLimits limits_;
  bool caller_driven_ = false;
  bool host_clock_ = false;  // the device gives the host's present on its clock (host_time_ns)
  bool spin_yields_ = false;  // a waiter's spin on the rings yields between looks (DeviceDescription)

  std::mutex mu_;
  std::condition_variable done_cv_;  // an op completed, or progress happened
  // The completion path of a self-timed device. A thread that waits reaps the RBs itself: it
  // spins on the rings for poll_spin, then sleeps in Device::wait_for_interrupt, so a completion
  // wakes it directly. One thread at a time sleeps there (irq_held_); the others sleep on
  // done_cv_ and are woken by the reaper's progress. The poller stands aside (parks on
  // poller_cv_) while any thread waits, so an interrupt goes to the thread that wants it.
  int waiters_ = 0;
  int cv_waiters_ = 0;
  bool irq_held_ = false;
  int spinning_ = 0;  // threads in spin_for_rb, reading the RB rings without the lock
  int waking_ = 0;         // threads in wake_waiters, between two steps that use the rings
  int quiet_waiters_ = 0;  // reset() or shutdown() waiting for unlocked_work_, spinning_, waking_
  // A spin that ends without an RB means the device runs on no other core (one core, or all
  // busy): spinning then only delays it. Each such spin halves the budget, down to none; a spin
  // that lands restores poll_spin.
  std::chrono::nanoseconds spin_budget_{};
  unsigned spin_probe_ = 0;
  bool poller_parked_ = false;
  std::condition_variable poller_cv_;
  bool closed_ = false;
  // Set when shutdown() begins: new work is refused at once (Closed) while the work in flight
  // finishes, so that threads still submitting cannot keep a close waiting.
  bool closing_ = false;
  bool torn_down_ = false;
  // Within reset(), which drops the lock while it waits: pump() issues nothing then (a CB pushed
  // between cancelling everything and reprogramming the rings would be lost, and a slot reserved
  // for a copy-in forgotten); the streams it skips are pumped when the reset is over.
  bool resetting_ = false;
  bool device_lost_ = false;  // device_lost() has failed everything (for good)
  bool stop_poller_ = false;
  bool draining_ = false;  // one thread at a time consumes RBs (copy-outs stay in order)
  // The staging threads. A stream's copies always go to the same thread (stream id modulo their
  // number), whose queue runs in order: per-stream order holds without draining_. A queued job
  // counts in unlocked_work_ until it is done, so reset() and shutdown() wait for it.
  struct StagingJob {
    CopyInBatches copy_ins;
    std::vector<CopyOut> copy_outs;
  };
  struct Stager {
    std::thread thread;
    std::deque<StagingJob> jobs;
    std::condition_variable cv;
    bool idle = false;
    bool copying = false;  // a job taken from `jobs` is not yet settled
  };
  void stager_main(Stager& me);
  static constexpr unsigned kMaxStagingThreads = 64;
  std::vector<std::unique_ptr<Stager>> stagers_;
  bool stop_stagers_ = false;
  int unlocked_work_ = 0;  // threads copying or calling back outside the lock
  std::deque<std::shared_ptr<OpState>> completions_;  // done ops whose callbacks are still to run
  bool completions_running_ = false;                   // a thread runs completions_ now
  int batch_depth_ = 0;            // open submission batches: submit() defers doorbells
  std::uint64_t epoch_ = 0;  // bumped by reset() and shutdown(): copy-ins of an older one are abandoned
  std::array<std::unique_ptr<HwQueue>, hw::kNumPipelines> queues_;
  std::array<TagFifo, hw::kNumPipelines> ring_order_;  // tags, oldest first
  std::array<bool, hw::kNumPipelines> timed_out_{};  // a pipeline with a timed-out CB
  // Tags in ring order whose RB is still due (live and timed-out CBs): a device answers the CBs
  // of a pipeline in index order, so the next RB must carry the front tag.
  std::array<TagFifo, hw::kNumPipelines> answer_order_;
  std::array<std::uint32_t, hw::kNumPipelines> last_answered_{};  // tag of the last RB matched
  // The device reset itself: an Abend RB of kind kReset makes the engine watch STATUS; once it
  // reads FATAL, everything in flight fails and new work fails at once until reset().
  bool fatal_suspect_ = false;
  Status fatal_;
  std::unique_ptr<StagingPool> staging_;
  TagPool tags_;
  std::vector<Inflight> inflight_;  // indexed by tag
  hw::DmaCb dma_scratch_;             // build_dma_cb's
  hw::ControlBlock compute_scratch_;  // issue_cb's, for compute ops
  std::vector<std::shared_ptr<StreamState>> streams_;
  std::set<std::pair<int, std::uint64_t>> blocked_;  // (-priority, stream id)
  // Every stream, highest priority first (yields() walks only the ones above a stream), and
  // whether they have more than one priority (else nothing yields and nothing is stamped).
  std::vector<StreamState*> by_priority_;
  bool several_priorities_ = false;
  // Bytes of CBs issued within a ring share that are on each pipeline's ring.
  std::array<std::uint64_t, hw::kNumPipelines> yielded_bytes_{};
  HazardTracker hazards_;  // EngineOptions::order_by_footprint
  // Engine::pooled_stream's pools (low, high) and the next index of each; own lock, as
  // create_stream takes the engine's.
  std::mutex pool_mu_;
  std::array<std::vector<std::shared_ptr<StreamState>>, 2> pools_;
  std::array<unsigned, 2> pool_next_{};
  std::shared_ptr<DeviceAllocator> allocator_;
  std::shared_ptr<HostRegistry> registry_;
  std::thread poller_;
  // The watchdog's state (poller thread, under the lock): its next look, and the stalls it has
  // reported that still go on (stream id, holding op id).
  Clock::time_point next_watch_{};
  std::set<std::pair<std::uint64_t, std::uint64_t>> stalls_reported_;
  std::uint64_t op_ids_ = 0;
  std::uint64_t stream_ids_ = 0;
  std::uint64_t alloc_ids_ = 0;
  EngineStats stats_;
};

}  // namespace spyre_dma::detail
