// EngineCore life cycle and submission. The scheduling (pump, CB building) is in scheduler.cpp,
// the completion path (RBs, timeouts) in completion.cpp, waiting and polling in waiting.cpp and
// the staging threads in staging_threads.cpp.
#include "engine_core.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "op_pool.hpp"
#include "spyre_dma/deadline.hpp"

namespace spyre_dma::detail {
namespace {

std::uint32_t pick_slots(std::uint32_t requested, std::uint32_t depth, hw::Pipeline p) {
  const std::uint32_t slots = requested ? requested : depth;
  if (!hw::is_power_of_two(slots) || slots > depth) {
    throw InvalidArgument("EngineOptions::ring_slots[" + std::string(hw::to_string(p)) + "] = " +
                          std::to_string(slots) + ": must be a power of two no larger than the " +
                          "device depth " + std::to_string(depth));
  }
  return slots;
}

}  // namespace

EngineCore::EngineCore(std::shared_ptr<Device> device, EngineOptions options)
    : options_(options), inflight_(hw::kMaxTag + 1) {
  spin_budget_ = options_.poll_spin;
  if (!device) throw InvalidArgument("Engine::open: null device");
  device_ = std::make_shared<DeviceGuard>(std::move(device));
}

EngineCore::~EngineCore() {
  const CallbackScope outside(nullptr);  // the whole shutdown, whichever thread this is
  shutdown();
}

void EngineCore::start() {
  using namespace hw::reg;
  Device& d = *device_;
  limits_.id = d.read32(kId);
  limits_.version = d.read32(kVersion);
  if (device_->failed()) throw DeviceFault("Engine::open: the device failed: " + device_->failure());
  if ((limits_.version >> 16) != (hw::kContractVersion >> 16)) {
    throw DeviceFault("device reports contract version " + std::to_string(limits_.version >> 16) +
                      "." + std::to_string(limits_.version & 0xFFFF) + ", the engine speaks " +
                      std::to_string(hw::kContractVersion >> 16) + ".x");
  }
  limits_.capabilities = d.read64(kCapabilities_64);
  limits_.depth = {d.read32(kDepthCompute), d.read32(kDepthDmai), d.read32(kDepthDmao)};
  limits_.device_memory_bytes = d.read64(kDeviceMemBytes_64);
  limits_.device_memory_usable = d.read64(kDeviceMemUsable_64);
  const std::uint64_t device_max_cb = d.read32(kMaxCbBytes);

  if (options_.max_cb_bytes == 0 || options_.max_cb_bytes % hw::kFlitBytes != 0) {
    throw InvalidArgument("EngineOptions::max_cb_bytes = " + std::to_string(options_.max_cb_bytes) +
                          ": must be a nonzero multiple of 128");
  }
  if (options_.staging_buffer_bytes == 0 || options_.staging_buffer_bytes % hw::kFlitBytes != 0) {
    throw InvalidArgument("EngineOptions::staging_buffer_bytes = " +
                          std::to_string(options_.staging_buffer_bytes) +
                          ": must be a nonzero multiple of 128");
  }
  if (options_.staging_buffers == 0) throw InvalidArgument("EngineOptions::staging_buffers = 0");
  if (options_.staging_threads > kMaxStagingThreads) {
    throw InvalidArgument("EngineOptions::staging_threads = " + std::to_string(options_.staging_threads) +
                          ": at most " + std::to_string(kMaxStagingThreads));
  }
  if (options_.cb_timeout <= std::chrono::nanoseconds::zero()) {
    throw InvalidArgument("EngineOptions::cb_timeout must be positive");
  }
  if (options_.priority_share_bytes != 0 &&
      (options_.priority_share_bytes < 2 * hw::kFlitBytes || options_.priority_share_bytes % hw::kFlitBytes != 0)) {
    throw InvalidArgument("EngineOptions::priority_share_bytes = " + std::to_string(options_.priority_share_bytes) +
                          ": must be 0 (no share) or a multiple of 128 of at least 256 (two CBs of a flit)");
  }
  if (options_.pooled_streams == 0 || options_.pooled_streams > 1024) {
    throw InvalidArgument("EngineOptions::pooled_streams = " + std::to_string(options_.pooled_streams) +
                          ": expected 1..1024");
  }
  if (options_.priority_hold < std::chrono::nanoseconds::zero()) {
    throw InvalidArgument("EngineOptions::priority_hold must not be negative");
  }
  limits_.max_cb_bytes = std::min<std::uint64_t>(options_.max_cb_bytes, device_max_cb / hw::kFlitBytes * hw::kFlitBytes);
  if (limits_.max_cb_bytes == 0) throw DeviceFault("device reports MAX_CB_BYTES below one flit");
  for (unsigned p = 0; p < hw::kNumPipelines; ++p) {
    limits_.ring_slots[p] = pick_slots(options_.ring_slots[p], limits_.depth[p], static_cast<hw::Pipeline>(p));
  }
  std::uint64_t usable = options_.device_memory_bytes ? options_.device_memory_bytes : limits_.device_memory_usable;
  if (usable > limits_.device_memory_usable) {
    throw InvalidArgument("EngineOptions::device_memory_bytes = " + std::to_string(usable) +
                          " exceeds the device's usable " + std::to_string(limits_.device_memory_usable));
  }
  allocator_ = std::make_shared<DeviceAllocator>(usable);
  registry_ = std::make_shared<HostRegistry>();

  // Reset, then program the rings and enable.
  d.write32(kControl, hw::kControlReset);
  const auto deadline = Clock::now() + 5s;
  while (d.read32(kStatus) & hw::kStatusResetting) {
    if (device_->failed()) throw DeviceFault("Engine::open: the device failed: " + device_->failure());
    if (Clock::now() > deadline) throw DeviceFault("device did not come out of reset within 5 s");
    std::this_thread::yield();
  }
  for (unsigned p = 0; p < hw::kNumPipelines; ++p) {
    queues_[p] = std::make_unique<HwQueue>(d, static_cast<hw::Pipeline>(p), limits_.ring_slots[p]);
    queues_[p]->program();
  }
  staging_ = std::make_unique<StagingPool>(d, options_.staging_buffer_bytes, options_.staging_buffers);
  d.write32(kControl, hw::kControlEnable);
  if (device_->failed()) throw DeviceFault("Engine::open: the device failed: " + device_->failure());

  const DeviceDescription description = d.describe();
  const Progress progress = description.progress;
  host_clock_ = description.host_clock;
  spin_yields_ = description.spin_yields;
  caller_driven_ = options_.completion == CompletionMode::kCallerDriven ||
                   (options_.completion == CompletionMode::kAuto && progress == Progress::kHostDriven);
  if (!caller_driven_) {
    // A host-driven device runs on the caller's thread only (the copies advance its clock). The
    // staging threads exist before the poller, which may hand them work at once.
    start_stagers();
    // The engine lives while its threads run: a callback run on one may destroy the Engine, and
    // the last reference then goes when that thread is done with it (tear_down() lets it go).
    poller_ = std::thread([keep = shared_from_this()] { keep->poller_main(); });
  }
}

namespace {
// The engine whose callback this thread is running (null: none). Closing an engine from its own
// callback must not wait for that callback, nor join the thread it runs on.
thread_local const EngineCore* t_callback_engine = nullptr;
}  // namespace

EngineCore::CallbackScope::CallbackScope(const EngineCore* core) noexcept : outer_(t_callback_engine) {
  t_callback_engine = core;
}
EngineCore::CallbackScope::~CallbackScope() { t_callback_engine = outer_; }

void EngineCore::shutdown() {
  if (t_callback_engine == this) return close_from_callback();
  bool closing = false;
  {
    Lock lock(mu_);
    closing = !closed_ && !closing_;
    closing_ = true;
  }
  if (closing) {
    // Let in-flight work finish (bounded by the CB timeout, which fails what the device abandons).
    (void)wait_all(options_.cb_timeout + 1s);
    Work work;
    {
      Lock lock(mu_);
      closed_ = true;
      ++epoch_;
      fail_everything(Status(ErrorCode::kCancelled, "engine closed"), work);
      settle_staging_jobs(lock, work, options_.cb_timeout + 1s);
      stop_poller_ = true;
    }
    done_cv_.notify_all();
    poller_cv_.notify_all();
    // With nothing in flight the poller sleeps in the device's interrupt wait (up to 5 ms), where
    // only the device can reach it; the join in tear_down() would wait that out.
    device_->wake_waiter();
    Lock lock(mu_);
    run_work(lock, work);
  }
  tear_down();
}

void EngineCore::close_from_callback() {
  // Everything still queued or in flight is cancelled (its callbacks run once this one returns,
  // on this thread), and the engine's threads are told to stop. Nothing is waited for: the
  // threads are joined, the device quiesced and the rings freed by tear_down(), when the last
  // reference to the engine goes (the thread running this callback holds one).
  Work work;
  {
    Lock lock(mu_);
    if (closed_) return;
    closed_ = true;
    ++epoch_;
    fail_everything(Status(ErrorCode::kCancelled, "engine closed"), work);
    drop_staging_jobs(work);  // a copy running now sees the new epoch
    stop_poller_ = true;
    stop_stagers_ = true;
    run_work(lock, work);
  }
  done_cv_.notify_all();
  poller_cv_.notify_all();
  device_->wake_waiter();  // as in shutdown()
  for (auto& st : stagers_) st->cv.notify_one();
}

void EngineCore::end_thread(std::thread& t) {
  // The last reference may go on one of the engine's own threads (one that ran the callback
  // that closed it): that thread is let go, not joined; it touches nothing of the engine after.
  if (!t.joinable()) return;
  if (t.get_id() == std::this_thread::get_id()) t.detach();
  else t.join();
}

void EngineCore::tear_down() {
  end_thread(poller_);
  {
    Lock lock(mu_);
    if (torn_down_) return;
    // A submitting or waiting thread may still be copying or calling back outside the lock; the
    // queues and staging buffers it returns to must outlive it. (Bounded: a callback that never
    // returns must not keep the destructor forever.)
    (void)wait_for_quiet(lock, options_.cb_timeout + 1s);  // staging jobs included
    wait_for_spinners(lock);  // the rings go next
  }
  stop_stagers();
  {
    Lock lock(mu_);
    if (torn_down_) return;
    torn_down_ = true;
  }
  try {
    device_->write32(hw::reg::kControl, hw::kControlReset);
    device_->write32(hw::reg::kControl, 0);
  } catch (...) {
  }
  for (auto& q : queues_) q.reset();
  staging_.reset();
  streams_.clear();
  by_priority_.clear();
  for (auto& pool : pools_) pool.clear();
}

std::shared_ptr<StreamState> EngineCore::create_stream(StreamOptions options) {
  auto s = std::make_shared<StreamState>();
  s->core = weak_from_this();
  s->options = std::move(options);
  Lock lock(mu_);
  if (closed_ || closing_) throw Closed("create_stream: engine closed");
  s->id = ++stream_ids_;
  streams_.push_back(s);
  const auto at = std::upper_bound(by_priority_.begin(), by_priority_.end(), s->options.priority,
                                   [](int p, const StreamState* o) { return p > o->options.priority; });
  by_priority_.insert(at, s.get());
  several_priorities_ = by_priority_.front()->options.priority != by_priority_.back()->options.priority;
  return s;
}

std::shared_ptr<StreamState> EngineCore::pooled_stream(bool high_priority) {
  const unsigned c = high_priority ? 1 : 0;
  std::lock_guard<std::mutex> lock(pool_mu_);
  auto& pool = pools_[c];
  const unsigned i = pool_next_[c];
  pool_next_[c] = (i + 1) % options_.pooled_streams;
  if (i < pool.size()) return pool[i];
  StreamOptions o;
  o.priority = high_priority ? Engine::kPooledHighPriority : 0;
  o.name = std::string(high_priority ? "pool-high-" : "pool-low-") + std::to_string(i);
  pool.push_back(create_stream(std::move(o)));
  return pool.back();
}

std::shared_ptr<EventState> EngineCore::create_event() {
  auto e = std::make_shared<EventState>();
  e->core = weak_from_this();
  return e;
}

std::shared_ptr<AllocationState> EngineCore::allocate(std::uint64_t bytes, AllocOptions options) {
  {
    Lock lock(mu_);
    if (closed_ || closing_) throw Closed("allocate: engine closed");
  }
  auto a = std::make_shared<AllocationState>();
  a->allocator = allocator_;
  a->address = allocator_->allocate(bytes, options.max_chunk_bytes);
  a->size = bytes;
  a->max_chunk_bytes = options.max_chunk_bytes;
  Lock lock(mu_);
  a->id = ++alloc_ids_;
  return a;
}

std::shared_ptr<HostRegistrationState> EngineCore::register_host(void* ptr, std::size_t bytes, bool owned) {
  if (!ptr) throw InvalidArgument("register_host: null pointer");
  if (bytes == 0) throw InvalidArgument("register_host: zero bytes");
  if (bytes > std::numeric_limits<std::uintptr_t>::max() - reinterpret_cast<std::uintptr_t>(ptr)) {
    throw InvalidArgument("register_host: range at " + std::to_string(reinterpret_cast<std::uintptr_t>(ptr)) +
                          " (+" + std::to_string(bytes) + " bytes) wraps around the address space");
  }
  registry_->check_disjoint(ptr, bytes);
  auto r = std::make_shared<HostRegistrationState>();
  r->data = static_cast<std::uint8_t*>(ptr);
  r->bytes = bytes;
  r->owned = owned;
  try {
    r->iova = device_->map(ptr, bytes, DmaAccess::kBoth);
  } catch (const std::invalid_argument& e) {  // memory the device cannot map (vfio-user: not shareable)
    throw InvalidArgument(std::string("register_host: ") + e.what());
  }
  r->device = device_;
  r->registry = registry_;
  registry_->add(r);
  return r;
}

void EngineCore::notify_submit(const StreamState& stream, const OpState& op,
                               const EventState* event) const {
  OpInfo info;
  info.id = op.id;
  info.stream = stream.id;
  info.kind = op.kind;
  info.bytes = op.bytes;
  if (op.kind == OpKind::kH2D || op.kind == OpKind::kD2H) {
    info.host = op.staged ? HostAccess::kPageable : HostAccess::kRegistered;
  }
  if (op.dst) {
    info.dst_alloc = op.dst->id;
    info.dst_alloc_bytes = op.dst->size;
    info.dst_alloc_max_chunk = op.dst->max_chunk_bytes;
    info.dst_offset = op.dst_offset;
  }
  if (op.src) {
    info.src_alloc = op.src->id;
    info.src_alloc_bytes = op.src->size;
    info.src_alloc_max_chunk = op.src->max_chunk_bytes;
    info.src_offset = op.src_offset;
  }
  if (op.kind == OpKind::kFill) info.pattern = op.pattern;
  if (op.kind == OpKind::kCompute) info.compute = std::chrono::nanoseconds(op.duration_ns);
  // Events have no id of their own; their state's address names them while they live.
  info.event = reinterpret_cast<std::uintptr_t>(event);
  info.issued = std::chrono::steady_clock::now();
  try {
    const CallbackScope scope(this);
    options_.observer->on_submit(info);
  } catch (...) {
    // An observer has nobody to report to; the op goes ahead.
  }
}

std::shared_ptr<OpState> EngineCore::make_op(OpKind kind) {
  auto op = std::allocate_shared<OpState>(OpPoolAllocator<OpState>());
  op->kind = kind;
  op->core = weak_from_this();
  if (host_clock_) op->host_start_ns = device_->host_time_ns();
  return op;
}

void EngineCore::enqueue(Lock& lock, const char* what, const std::shared_ptr<StreamState>& stream,
                         const std::shared_ptr<OpState>& op, const EventState* event) {
  if (closed_ || closing_) throw Closed(std::string(what) + (closed_ ? ": engine closed" : ": engine closing"));
  // Numbered here, under the lock, rather than with an atomic counter on the way in: one atomic
  // read-modify-write less per op.
  op->id = ++op_ids_;
  if (options_.observer) {
    // on_submit names the op by its id and runs without the lock (an observer may take its time).
    lock.unlock();
    notify_submit(*stream, *op, event);
    lock.lock();
    if (closed_ || closing_) throw Closed(std::string(what) + (closed_ ? ": engine closed" : ": engine closing"));
  }
  op->stream = stream.get();
  op->seq = stream->submitted;
  // A clock read only when work comes to an idle stream: a busy stream moves when ops retire.
  if (stream->window.empty()) stream->moved = Clock::now();
  stream->window.push_back(op);
  ++stream->submitted;
  if (options_.order_by_footprint) {
    const Footprint fp = Footprint::of(*op);
    if (fp.n != 0) stats_.footprint_waits += hazards_.add(*op, fp);
  }
  ++stats_.ops_submitted;
}

std::shared_ptr<OpState> EngineCore::submit(const std::shared_ptr<StreamState>& stream,
                                            std::shared_ptr<OpState> op) {
  Work work;
  Lock lock(mu_);
  enqueue(lock, "submit", stream, op, nullptr);
  pump(stream, work, true);
  if (!work.idle() || !completions_.empty()) run_work(lock, work);  // most submissions: nothing
  if (batch_depth_ == 0) ring_doorbells();
  return op;
}

void EngineCore::begin_batch() {
  Lock lock(mu_);
  ++batch_depth_;
}

void EngineCore::end_batch() {
  Lock lock(mu_);
  if (--batch_depth_ == 0) ring_doorbells();
}

std::shared_ptr<OpState> EngineCore::submit_record(const std::shared_ptr<StreamState>& stream,
                                                   const std::shared_ptr<EventState>& event) {
  auto op = make_op(OpKind::kEventRecord);
  // The device's clock now: the record's time when nothing is ahead of it (see retire()).
  if (limits_.capabilities & hw::kCapTimestamps) op->start_ns = device_->read64(hw::reg::kTimestampNs_64);
  Work work;
  Lock lock(mu_);
  enqueue(lock, "record", stream, op, event.get());
  event->marker = op;
  retire(*stream, work);  // completes at once when nothing is ahead of it
  pump(stream, work, true);
  ring_doorbells();
  run_work(lock, work);
  return op;
}

std::shared_ptr<OpState> EngineCore::submit_wait(const std::shared_ptr<StreamState>& stream,
                                                 const std::shared_ptr<EventState>& event) {
  auto op = make_op(OpKind::kEventWait);
  Work work;
  Lock lock(mu_);
  enqueue(lock, "wait", stream, op, event.get());
  op->awaited = event->marker;  // the latest record at the time of the call, as CUDA does
  pump(stream, work, true);
  ring_doorbells();
  run_work(lock, work);
  return op;
}

Status EngineCore::stream_error(const StreamState& stream) {
  Lock lock(mu_);
  return stream.first_error;
}

Status EngineCore::reset(std::chrono::nanoseconds timeout) {
  Work work;
  Lock lock(mu_);
  if (closed_) return Status(ErrorCode::kClosed, "reset: engine closed");
  if (resetting_) {
    // Another thread's reset() is under way: this one follows it (and cancels what was submitted
    // before this call, which that one may have missed).
    ++cv_waiters_;
    ++quiet_waiters_;
    const bool over = done_cv_.wait_for(lock, timeout, [&] { return !resetting_ || closed_; });
    --quiet_waiters_;
    --cv_waiters_;
    if (!over) return Status(ErrorCode::kDeviceTimeout, "reset: another reset() was still running at the timeout");
    if (closed_) return Status(ErrorCode::kClosed, "reset: engine closed");
  }
  // From here until the rings are reprogrammed nothing is issued, though the lock is dropped on
  // the way (to wait for spinners and staging threads): ops submitted meanwhile wait, and start
  // on the reset device.
  resetting_ = true;
  struct Resume {
    EngineCore& core;
    Work& work;
    ~Resume() {
      core.resetting_ = false;
      work.repump = true;  // the streams pump() skipped meanwhile
      if (core.quiet_waiters_ > 0) core.done_cv_.notify_all();  // a reset() waiting on this one (rare: under the lock)
    }
  };
  Status result;
  {
    const Resume resume{*this, work};
    result = reset_device(lock, work, timeout);
  }
  run_work(lock, work);
  ring_doorbells();  // what the skipped streams issued
  return result;
}

Status EngineCore::reset_device(Lock& lock, Work& work, std::chrono::nanoseconds timeout) {
  if (device_->failed()) {
    (void)device_lost(work);
    return lost_device_status();
  }
  wait_for_spinners(lock);  // they read the RB rings, which are reprogrammed below
  device_->write32(hw::reg::kControl, hw::kControlReset);
  const auto deadline = deadline_after<Clock>(Clock::now(), timeout);
  while (device_->read32(hw::reg::kStatus) & hw::kStatusResetting) {
    if (device_->failed()) {
      (void)device_lost(work);
      return lost_device_status();
    }
    if (Clock::now() > deadline) {
      return Status(ErrorCode::kDeviceTimeout, "device did not come out of reset");
    }
    std::this_thread::yield();
  }
  ++epoch_;  // with fail_everything: copy-ins still running outside the lock are abandoned
  fail_everything(Status(ErrorCode::kCancelled, "device reset"), work);
  // The reset is the recovery: work submitted from here on runs (first_error still reports the
  // failure to the next synchronize).
  for (auto& s : streams_) {
    s->poison = Status();
    s->poison_seq = 0;
  }
  settle_staging_jobs(lock, work, timeout);
  for (auto& q : queues_) q->program();
  staging_->release_quarantined();
  timed_out_.fill(false);
  fatal_suspect_ = false;
  fatal_ = Status();
  device_->write32(hw::reg::kControl, hw::kControlEnable);
  if (device_->failed()) {
    (void)device_lost(work);
    return lost_device_status();
  }
  return Status();
}

EngineStats EngineCore::stats() {
  Lock lock(mu_);
  EngineStats s = stats_;
  s.tags_in_use = hw::kMaxTag - tags_.available();
  s.quarantined_staging = staging_ ? staging_->quarantined() : 0;
  s.device_memory_allocated = allocator_ ? allocator_->allocated_bytes() : 0;
  std::uint64_t q = 0;
  for (const Inflight& f : inflight_) q += f.state == CbState::kTimedOut ? 1 : 0;
  s.quarantined_tags = q;
  return s;
}

}  // namespace spyre_dma::detail
