// Replay of a trace through the engine on any backend (replay.hpp describes the rules).
#include "spyre_dma/traces/replay.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "shadow.hpp"
#include "spyre_dma/engine.hpp"
#include "spyre_dma/traces/trace_io.hpp"

#include "spyre_dma/model/backend.hpp"
#include "spyre_dma/model/sim_device.hpp"
#include "spyre_dma/traces/output_file.hpp"
#include "spyre_dma/deadline.hpp"

namespace spyre_dma::traces {

namespace {

using detail::Shadow;
using detail::Source;
using Clock = std::chrono::steady_clock;

// Ops in flight at once: bounds the host memory a replay holds (buffers are reused once their op
// completes) and the engine's queues, without limiting the device's overlap in practice.
constexpr std::size_t kWindowOps = 4096;
constexpr std::uint64_t kWindowBytes = 2ull << 30;

// Host buffers by size class, reused across ops. Registered ones come from the engine.
class HostPool {
 public:
  explicit HostPool(spyre_dma::Engine& engine) : engine_(engine) {}
  struct Buffer {
    std::uint8_t* data = nullptr;
    std::uint64_t cls = 0;
    bool registered = false;
    std::size_t index = 0;
  };
  Buffer take(std::uint64_t bytes, bool registered) {
    std::uint64_t cls = 4096;
    while (cls < bytes) cls <<= 1;
    auto& free = free_[{cls, registered}];
    if (!free.empty()) {
      Buffer b = free.back();
      free.pop_back();
      return b;
    }
    Buffer b;
    b.cls = cls;
    b.registered = registered;
    if (registered) {
      reg_.push_back(engine_.allocate_host(cls));
      b.data = static_cast<std::uint8_t*>(reg_.back().data());
    } else {
      // Plain heap memory, not known to the engine: the engine stages it.
      plain_.emplace_back(new std::uint8_t[cls]);
      b.data = plain_.back().get();
    }
    return b;
  }
  void give(const Buffer& b) { free_[{b.cls, b.registered}].push_back(b); }

 private:
  spyre_dma::Engine& engine_;
  std::map<std::pair<std::uint64_t, bool>, std::vector<Buffer>> free_;
  std::vector<spyre_dma::HostBuffer> reg_;
  std::vector<std::unique_ptr<std::uint8_t[]>> plain_;
};

class Replayer;

// The replayers of a multi-device trace's devices, and which device runs each op that another
// device waits for.
struct Peers {
  std::vector<Replayer*> replayers;                          // by device
  std::unordered_map<std::uint64_t, std::uint32_t> device_of;  // op id -> device
  const Replayer& replayer_of(std::uint64_t op_id) const;
};

struct InFlight {
  std::size_t index = 0;  // into trace.ops
  spyre_dma::Op op;
  bool has_buffer = false;
  HostPool::Buffer buffer;
  std::vector<Shadow::Piece> expect;  // D2H: what its buffer must hold
  std::uint64_t src_offset = 0;
};

// When honour_start_times calls the op: its captured call where the capture recorded one (the
// device start then follows from the model, as it did from the device), else its device start.
std::optional<double> held_time(const Op& op) { return op.host_start_ns ? op.host_start_ns : op.start_ns; }

// The earliest held_time() of the trace: the replay's time origin.
std::optional<double> first_held_time(const Trace& trace) {
  std::optional<double> first;
  for (const Op& op : trace.ops) {
    const std::optional<double> t = held_time(op);
    if (t && (!first || *t < *first)) first = t;
  }
  return first;
}

// What the capture's caller knew of `op` when it called `later` (a later op), from their captured
// host times: it had seen `op` done (it may have waited for it), or it called `later` while `op`
// was outstanding; nothing without host times.
enum class SeenDone : std::uint8_t { kUnknown, kSeenDone, kOutstanding };
SeenDone seen_done(const Op& op, const Op& later) {
  if (!op.host_start_ns || !op.host_duration_ns || !later.host_start_ns) return SeenDone::kUnknown;
  return *later.host_start_ns >= *op.host_start_ns + *op.host_duration_ns ? SeenDone::kSeenDone
                                                                           : SeenDone::kOutstanding;
}

class Replayer {
 public:
  Replayer(const Trace& trace, spyre_dma::backend::Instance backend, const ReplayOptions& options)
      : trace_(trace), backdoor_(backend.memory), clock_(backend.clock), options_(options) {
    const spyre_dma::DeviceDescription described = backend.device->describe();
    host_driven_ = described.progress == spyre_dma::Progress::kHostDriven;
    // The engine owns the device from here on, and this replay owns the engine.
    if (described.host_clock) host_clock_ = backend.device.get();
    spyre_dma::EngineOptions eo;
    if (options_.staging_buffer_bytes) eo.staging_buffer_bytes = options_.staging_buffer_bytes;
    engine_ = spyre_dma::Engine::open(std::move(backend.device), eo);
    pool_ = std::make_unique<HostPool>(*engine_);
    deadline_ = deadline_after<Clock>(Clock::now(), options_.timeout);
  }

  ReplayResult run() {
    begin();
    for (std::size_t i = 0; i < trace_.ops.size(); ++i) {
      wait_seen_done(trace_.ops[i]);
      if (options_.honour_start_times) hold_until_start(trace_.ops[i]);
      submit(i);
      while (inflight_.size() >= kWindowOps || inflight_bytes_ > kWindowBytes) reclaim_front(true);
      // Polling is a step of the device (on sim, to its next interrupt): the replay has always
      // taken one before the next op of the same stream (the calibrations were made so). Before an
      // op of another stream it takes none, so that ops meant to run together (a concurrent
      // group, copies that overlapped on two streams) are issued together rather than one step,
      // often a whole copy, apart.
      // A capture that recorded host times says more: an op its caller called before it saw the
      // previous one of the stream done was issued without that step, and is so here.
      const bool same_stream = i + 1 < trace_.ops.size() && trace_.ops[i + 1].stream == trace_.ops[i].stream;
      if ((same_stream && seen_done(trace_.ops[i], trace_.ops[i + 1]) != SeenDone::kOutstanding) ||
          i + 1 == trace_.ops.size()) {
        while (!inflight_.empty() && inflight_.front().op.done()) reclaim_front(false);
      }
    }
    while (!inflight_.empty()) reclaim_front(true);
    return finish();
  }

  // The same replay in steps that never block, for several replays driven from one thread (one
  // per device of a server): begin(), then advance() until it returns true, then finish().
  void begin() {
    prepare();
    result_.ops.resize(trace_.ops.size());
  }

  // Takes back the ops that are done, submits what the window and the captured start times
  // allow, and returns whether every op has been submitted and taken back. Each call polls the
  // engine once at least while anything is outstanding (on a simulated server: a step to the
  // next interrupt of any device).
  bool advance() {
    if (Clock::now() >= deadline_) {
      if (next_ < trace_.ops.size()) fail(fmt::format("op {} not submitted within the replay's timeout", trace_.ops[next_].id));
      next_ = trace_.ops.size();  // finish() waits out nothing more than the deadline allows
      return true;
    }
    while (!inflight_.empty() && inflight_.front().op.done()) reclaim_front(false);
    while (next_ < trace_.ops.size()) {
      if (inflight_.size() >= kWindowOps || inflight_bytes_ > kWindowBytes) return false;
      if (!remote_deps_done(next_)) return false;
      if (!seen_done_ready(trace_.ops[next_])) return false;
      if (options_.honour_start_times && !held_to_start(trace_.ops[next_])) return false;
      submit(next_++);
    }
    return inflight_.empty();
  }

  // A device's part of a multi-device trace: the ops of the other devices that op `index` waits
  // for (their ids), and this part's ops that another device waits for. `peers` finds the
  // replayer of any op's device; it outlives this replayer's run.
  void wait_for_peers(const Peers* peers, std::unordered_map<std::size_t, std::vector<std::uint64_t>> remote_deps,
                      std::unordered_set<std::uint64_t> remote_targets) {
    peers_ = peers;
    remote_deps_ = std::move(remote_deps);
    remote_targets_ = std::move(remote_targets);
  }

  // Whether op `id` of this replay has completed (failed included): another device's op may start.
  bool completed(std::uint64_t id) const {
    const auto it = watched_.find(id);
    return it != watched_.end() && it->second.done();
  }

  // Times relative to one origin for every device of a multi-device trace: its first held_time()
  // (not this part's), and the device clock's reading before any device had work.
  void share_time_origin(std::optional<double> first_start) {
    first_start_ = first_start;
    if (host_driven_ && clock_) sim_t0_ = clock_->now_ns();
  }

  ReplayResult finish() {
    while (!inflight_.empty()) reclaim_front(true);
    const auto left = std::max(Clock::duration::zero(), deadline_ - Clock::now());
    const spyre_dma::Status st = engine_->synchronize(left);
    if (!st.ok()) {
      fail(fmt::format("synchronize: {}", st.to_string()));
      // Out of time with work still on the device: cancel it now, so that closing the engine does
      // not wait out the CB timeout (the run's bound is the replay's timeout, not the engine's).
      (void)engine_->reset(std::chrono::seconds(1));
    }
    if (options_.verify_data && backdoor_) check_backdoor();
    finish_timings();
    if (!options_.perfetto_path.empty()) write_perfetto();
    return result_;
  }

 private:
  void fail(const std::string& why) {
    if (result_.data_ok) {
      result_.data_ok = false;
      result_.data_error = why;
    }
  }

  void prepare() {
    for (const Allocation& a : trace_.allocations) {
      spyre_dma::AllocOptions o;
      o.max_chunk_bytes = a.max_chunk_bytes;
      buffers_.emplace(a.id, engine_->allocate(a.bytes, o));
      shadow_maps_[a.id];
    }
    // Ops that another stream depends on get an event recorded right after them.
    std::unordered_map<std::uint64_t, std::uint32_t> stream_of;
    for (const Op& op : trace_.ops) {
      stream_of.emplace(op.id, op.stream);
      for (const std::uint64_t d : op.deps) {
        if (stream_of.at(d) != op.stream) dep_targets_.insert(d);
      }
    }
    if (!first_start_) first_start_ = first_held_time(trace_);
    wall0_ = Clock::now();
  }

  spyre_dma::Stream& stream(std::uint32_t id) {
    auto it = streams_.find(id);
    if (it == streams_.end()) {
      spyre_dma::StreamOptions o;
      o.name = "trace stream " + std::to_string(id);
      it = streams_.emplace(id, engine_->create_stream(o)).first;
    }
    return it->second;
  }

  spyre_dma::Event& event(std::uint32_t id) {
    auto it = events_.find(id);
    if (it == events_.end()) it = events_.emplace(id, engine_->create_event()).first;
    return it->second;
  }

  double device_now_ns() { return clock_ ? clock_->now_ns() : 0; }

  // The host's present on a host-driven device's clock: later than the device's time while the
  // host still copies through staging (one calling thread does those before it calls again).
  double host_now_ns() {
    const double device = device_now_ns();
    return host_clock_ ? std::max(device, static_cast<double>(host_clock_->host_time_ns())) : device;
  }

  // Before an op is called: the ops its capture's caller had seen done (their captured host times
  // end before its call) are done here too, whatever the replayed device's speed: the caller's
  // waits are dependencies as much as its events are, and copies it ran one after another must not
  // overlap on a slower device. Only ops of this device; nothing for a trace without host times.
  void wait_seen_done(const Op& op) {
    for (InFlight& f : inflight_) {
      if (seen_done(trace_.ops[f.index], op) != SeenDone::kSeenDone || f.op.done()) continue;
      const auto left = std::max(Clock::duration::zero(), deadline_ - Clock::now());
      (void)f.op.wait(left);  // its status is taken when it is reclaimed
    }
  }
  // The stepping form of wait_seen_done(): whether they are done.
  bool seen_done_ready(const Op& op) {
    for (InFlight& f : inflight_) {
      if (seen_done(trace_.ops[f.index], op) == SeenDone::kSeenDone && !f.op.done()) return false;
    }
    return true;
  }

  // Holds the op until the device's time reaches its held_time(), relative to the first.
  void hold_until_start(const Op& op) {
    if (!held_time(op) || !first_start_) return;
    const double target = *held_time(op) - *first_start_;
    if (host_driven_) {
      if (!clock_) return;
      if (!sim_t0_) sim_t0_ = clock_->now_ns();
      const double now = host_now_ns() - *sim_t0_;
      if (now >= target) return;
      // Simulated time moves only while the device has work: a timed compute of the gap on a
      // stream of its own makes it reach the target, deterministically.
      if (!clock_stream_.valid()) clock_stream_ = engine_->create_stream();
      const auto gap = std::chrono::nanoseconds(static_cast<std::int64_t>(target - now));
      const spyre_dma::Op wait = clock_stream_.compute(gap);
      const auto left = std::max(Clock::duration::zero(), deadline_ - Clock::now());
      const spyre_dma::Status st = wait.wait(left);
      if (!st.ok()) fail(fmt::format("holding op {} until {} ns: {}", op.id, target, st.to_string()));
      return;
    }
    // Wall clock: bounded by the run's deadline (a start time of years must not sleep for years).
    const auto at = deadline_after<Clock>(wall0_, std::chrono::nanoseconds(static_cast<std::int64_t>(
                                                      std::min(target, 9.2e18))));
    if (at > deadline_) {
      std::this_thread::sleep_until(deadline_);
      fail(fmt::format("holding op {} until {} ns: past the replay's timeout", op.id, target));
      return;
    }
    std::this_thread::sleep_until(at);
  }

  // The stepping form of hold_until_start(): true once `op` may be submitted; until then the
  // compute op that brings a host-driven device's time to the op's start runs on its own stream.
  bool held_to_start(const Op& op) {
    if (!held_time(op) || !first_start_) return true;
    const double target = *held_time(op) - *first_start_;
    if (!host_driven_) {
      const auto at = deadline_after<Clock>(wall0_, std::chrono::nanoseconds(static_cast<std::int64_t>(
                                                        std::min(target, 9.2e18))));
      return Clock::now() >= at;
    }
    if (!clock_) return true;
    if (hold_.valid()) {
      if (!hold_.done()) return false;
      const spyre_dma::Status st = hold_.status();
      if (!st.ok()) fail(fmt::format("holding op {} until {} ns: {}", op.id, target, st.to_string()));
      hold_ = spyre_dma::Op();
      return true;
    }
    if (!sim_t0_) sim_t0_ = clock_->now_ns();
    const double now = host_now_ns() - *sim_t0_;
    if (now >= target) return true;
    if (!clock_stream_.valid()) clock_stream_ = engine_->create_stream();
    hold_ = clock_stream_.compute(std::chrono::nanoseconds(static_cast<std::int64_t>(target - now)));
    return false;
  }

  // Ops of other devices are waited for on the host: the replay submits the op once the other
  // device's engine reports them done (on a server, at the poll step of their completion).
  bool remote_deps_done(std::size_t index) const {
    if (!peers_) return true;
    const auto it = remote_deps_.find(index);
    if (it == remote_deps_.end()) return true;
    for (const std::uint64_t id : it->second) {
      if (!peers_->replayer_of(id).completed(id)) return false;
    }
    return true;
  }

  void submit(std::size_t index) {
    const Op& op = trace_.ops[index];
    spyre_dma::Stream& s = stream(op.stream);
    for (const std::uint64_t d : op.deps) {
      const auto it = dep_events_.find(d);
      if (it != dep_events_.end()) s.wait(it->second);  // same-stream deps are stream order
    }
    InFlight f;
    f.index = index;
    switch (op.kind) {
      case OpKind::kH2D: {
        f.has_buffer = true;
        f.buffer = pool_->take(op.bytes, op.host == HostMemory::kRegistered);
        const Source src{Source::kData, op.id, op.dst_offset};
        detail::generate(src, op.dst_offset, f.buffer.data, op.bytes);
        shadow_.write(shadow_maps_[op.dst_alloc], op.dst_offset, op.bytes, src);
        f.op = s.copy_h2d(buffers_.at(op.dst_alloc), op.dst_offset, f.buffer.data, op.bytes);
        inflight_bytes_ += op.bytes;
        break;
      }
      case OpKind::kD2H: {
        f.has_buffer = true;
        f.buffer = pool_->take(op.bytes, op.host == HostMemory::kRegistered);
        if (options_.verify_data) f.expect = shadow_.read(shadow_maps_[op.src_alloc], op.src_offset, op.bytes);
        f.src_offset = op.src_offset;
        f.op = s.copy_d2h(f.buffer.data, buffers_.at(op.src_alloc), op.src_offset, op.bytes);
        inflight_bytes_ += op.bytes;
        break;
      }
      case OpKind::kD2D: {
        const auto pieces = shadow_.read(shadow_maps_[op.src_alloc], op.src_offset, op.bytes);
        auto& dst = shadow_maps_[op.dst_alloc];
        for (const auto& p : pieces) {
          Source moved = p.src;
          moved.origin = p.src.origin + op.dst_offset - op.src_offset;  // modulo 2^64 on purpose
          shadow_.write(dst, p.start - op.src_offset + op.dst_offset, p.end - p.start, moved);
        }
        f.op = s.copy_d2d(buffers_.at(op.dst_alloc), op.dst_offset, buffers_.at(op.src_alloc), op.src_offset,
                          op.bytes);
        break;
      }
      case OpKind::kFill:
        shadow_.write(shadow_maps_[op.dst_alloc], op.dst_offset, op.bytes,
                      Source{Source::kFill, op.pattern, op.dst_offset});
        f.op = s.fill(buffers_.at(op.dst_alloc), op.dst_offset, op.bytes, op.pattern);
        break;
      case OpKind::kCompute:
        f.op = s.compute(std::chrono::nanoseconds(op.compute_ns));
        break;
      case OpKind::kHostCallback:
        f.op = s.host_callback([] {});
        break;
      case OpKind::kEventRecord:
        f.op = s.record(event(op.event));
        break;
      case OpKind::kEventWait:
        f.op = s.wait(event(op.event));
        break;
    }
    if (dep_targets_.count(op.id)) {
      spyre_dma::Event e = engine_->create_event();
      s.record(e);
      dep_events_.emplace(op.id, std::move(e));
    }
    if (remote_targets_.count(op.id)) watched_.emplace(op.id, f.op);
    inflight_.push_back(std::move(f));
  }

  void reclaim_front(bool wait) {
    InFlight& f = inflight_.front();
    const Op& op = trace_.ops[f.index];
    spyre_dma::Status st;
    if (wait) {
      const auto left = std::max(Clock::duration::zero(), deadline_ - Clock::now());
      st = f.op.wait(left);
    } else {
      st = f.op.status();
    }
    if (!st.ok()) fail(fmt::format("op {} ({}): {}", op.id, to_string(op.kind), st.to_string()));
    OpTiming& t = result_.ops[f.index];
    t.id = op.id;
    raw_start_.resize(trace_.ops.size());
    if (st.ok() && f.op.device_start_ns() != 0) {
      raw_start_[f.index] = f.op.device_start_ns();
      t.duration_ns = static_cast<double>(f.op.device_end_ns() - f.op.device_start_ns());
    }
    raw_host_start_.resize(trace_.ops.size());
    if (st.ok() && f.op.host_start_ns() != 0 && f.op.host_end_ns() >= f.op.host_start_ns()) {
      raw_host_start_[f.index] = f.op.host_start_ns();
      t.host_duration_ns = static_cast<double>(f.op.host_end_ns() - f.op.host_start_ns());
    }
    if (st.ok() && op.kind == OpKind::kD2H && options_.verify_data) verify_d2h(op, f);
    if (f.has_buffer) {
      pool_->give(f.buffer);
      inflight_bytes_ -= op.bytes;
    }
    inflight_.pop_front();
  }

  void verify_d2h(const Op& op, const InFlight& f) {
    std::vector<std::uint8_t> want;
    for (const auto& p : f.expect) {
      if (p.src.kind == Source::kUnknown) continue;  // never written: no expectation
      const std::uint64_t n = p.end - p.start;
      want.resize(n);
      detail::generate(p.src, p.start, want.data(), n);
      const std::uint8_t* got = f.buffer.data + (p.start - f.src_offset);
      if (std::memcmp(want.data(), got, n) != 0) {
        std::uint64_t k = 0;
        while (want[k] == got[k]) ++k;
        fail(fmt::format("op {} (d2h from allocation {}): byte at offset {} is 0x{:02x}, expected 0x{:02x}",
                         op.id, op.src_alloc, p.start + k, got[k], want[k]));
        return;
      }
    }
  }

  // Every allocation's final content against the shadow, through the device's memory backdoor.
  void check_backdoor() {
    std::vector<std::uint8_t> want, got;
    for (const auto& [id, map] : shadow_maps_) {
      const spyre_dma::DeviceBuffer& buf = buffers_.at(id);
      for (const auto& [start, seg] : map) {
        if (seg.src.kind == Source::kUnknown) continue;
        std::uint64_t pos = start;
        while (pos < seg.end) {
          const auto where = buf.address().locate(pos);
          const spyre_dma::DeviceChunk& c = buf.address().chunks()[where.chunk];
          const std::uint64_t n = std::min(seg.end - pos, c.size - where.offset_in_chunk);
          want.resize(n);
          got.resize(n);
          detail::generate(seg.src, pos, want.data(), n);
          backdoor_->backdoor_read(c.physical() + where.offset_in_chunk, got.data(), n);
          if (want != got) {
            std::uint64_t k = 0;
            while (want[k] == got[k]) ++k;
            fail(fmt::format("allocation {}: device memory at offset {} is 0x{:02x}, expected 0x{:02x}", id,
                             pos + k, got[k], want[k]));
            return;
          }
          pos += n;
        }
      }
    }
  }

  void finish_timings() {
    raw_start_.resize(trace_.ops.size());
    std::uint64_t first = 0, last = 0;
    for (std::size_t i = 0; i < raw_start_.size(); ++i) {
      if (!raw_start_[i]) continue;
      if (!first || raw_start_[i] < first) first = raw_start_[i];
      last = std::max<std::uint64_t>(last, raw_start_[i] + static_cast<std::uint64_t>(result_.ops[i].duration_ns));
    }
    for (std::size_t i = 0; i < raw_start_.size(); ++i) {
      result_.ops[i].start_ns = raw_start_[i] ? static_cast<double>(raw_start_[i] - first) : 0.0;
    }
    raw_host_start_.resize(trace_.ops.size());
    for (std::size_t i = 0; i < raw_host_start_.size(); ++i) {
      if (raw_host_start_[i] && first)
        result_.ops[i].host_start_ns = static_cast<double>(raw_host_start_[i]) - static_cast<double>(first);
    }
    result_.total_ns = first ? static_cast<double>(last - first) : 0.0;
  }

  void write_perfetto() {
    write_file_atomically(options_.perfetto_path,
                          nlohmann::json{{"traceEvents", perfetto_events(0, first_raw_start())}, {"displayTimeUnit", "ns"}}
                                  .dump() +
                              "\n");
  }

 public:
  // The device time (ns) of op `index`'s start (0: it did not reach the device); after finish().
  std::uint64_t raw_start(std::size_t index) const { return index < raw_start_.size() ? raw_start_[index] : 0; }

  // The device time (ns) of the replay's first device start (0: none started); after finish().
  std::uint64_t first_raw_start() const {
    std::uint64_t first = 0;
    for (const std::uint64_t t : raw_start_) {
      if (t && (!first || t < first)) first = t;
    }
    return first;
  }

  // One slice per op that reached the device, on process `pid`, one track per trace stream, its
  // start relative to `base_ns` (device time); after finish().
  nlohmann::json perfetto_events(int pid, std::uint64_t base_ns) const {
    nlohmann::json events = nlohmann::json::array();
    for (std::size_t i = 0; i < trace_.ops.size(); ++i) {
      const Op& op = trace_.ops[i];
      if (!raw_start_[i]) continue;
      events.push_back({{"name", fmt::format("{} {}", to_string(op.kind), op.bytes)},
                        {"ph", "X"},
                        {"pid", pid},
                        {"tid", op.stream},
                        {"ts", static_cast<double>(raw_start_[i] - base_ns) / 1000.0},
                        {"dur", result_.ops[i].duration_ns / 1000.0},
                        {"args", {{"op", op.id}}}});
    }
    return events;
  }

 private:
  const Trace& trace_;
  spyre_dma::backend::MemoryBackdoor* backdoor_;
  spyre_dma::backend::SimulatedClock* clock_;
  spyre_dma::Device* host_clock_ = nullptr;  // the device, where it gives the host's present
  const ReplayOptions& options_;
  bool host_driven_ = false;
  std::optional<double> sim_t0_;
  std::unique_ptr<spyre_dma::Engine> engine_;
  std::unique_ptr<HostPool> pool_;
  Clock::time_point deadline_, wall0_;
  std::optional<double> first_start_;  // the captured origin of honour_start_times: first_held_time()
  std::unordered_map<std::uint64_t, spyre_dma::DeviceBuffer> buffers_;
  std::map<std::uint64_t, Shadow::Map> shadow_maps_;
  Shadow shadow_;
  std::map<std::uint32_t, spyre_dma::Stream> streams_;
  std::map<std::uint32_t, spyre_dma::Event> events_;
  spyre_dma::Stream clock_stream_;
  spyre_dma::Op hold_;     // advance(): the compute op holding the next op to its start
  std::size_t next_ = 0;   // advance(): the next op to submit
  std::unordered_set<std::uint64_t> dep_targets_;
  std::unordered_map<std::uint64_t, spyre_dma::Event> dep_events_;
  std::deque<InFlight> inflight_;
  std::uint64_t inflight_bytes_ = 0;
  std::vector<std::uint64_t> raw_start_;
  std::vector<std::uint64_t> raw_host_start_;  // the ops' calls, on the device's clock (0: none)
  ReplayResult result_;
  const Peers* peers_ = nullptr;  // a device's part of a multi-device trace: the other devices
  std::unordered_map<std::size_t, std::vector<std::uint64_t>> remote_deps_;  // op index -> other devices' op ids
  std::unordered_set<std::uint64_t> remote_targets_;                    // ids another device waits for
  std::unordered_map<std::uint64_t, spyre_dma::Op> watched_;          // those of them submitted
};

const Replayer& Peers::replayer_of(std::uint64_t op_id) const { return *replayers.at(device_of.at(op_id)); }

// One device's part of a multi-device trace: its allocations and ops (deps on other devices' ops
// taken out), where each op sits in the whole trace, and what crosses devices.
struct DevicePart {
  Trace trace;
  std::vector<std::size_t> index;  // part op i -> index in the whole trace
  std::unordered_map<std::size_t, std::vector<std::uint64_t>> remote_deps;  // part op index -> other devices' op ids
  std::unordered_set<std::uint64_t> remote_targets;  // this part's op ids another device waits for
};

std::vector<DevicePart> split_by_device(const Trace& trace, std::unordered_map<std::uint64_t, std::uint32_t>& device_of) {
  std::vector<DevicePart> parts(trace.header.devices);
  for (DevicePart& p : parts) {
    p.trace.header = trace.header;
    p.trace.header.devices = 1;
  }
  for (const Allocation& a : trace.allocations) {
    Allocation own = a;
    own.device = 0;
    parts[a.device].trace.allocations.push_back(own);
  }
  for (std::size_t i = 0; i < trace.ops.size(); ++i) {
    const Op& op = trace.ops[i];
    device_of.emplace(op.id, op.device);
    DevicePart& p = parts[op.device];
    Op own = op;
    own.device = 0;
    own.deps.clear();
    std::vector<std::uint64_t> remote;
    for (const std::uint64_t d : op.deps) {
      const std::uint32_t dev = device_of.at(d);
      if (dev == op.device) {
        own.deps.push_back(d);
      } else {
        remote.push_back(d);
        parts[dev].remote_targets.insert(d);
      }
    }
    if (!remote.empty()) p.remote_deps.emplace(p.trace.ops.size(), std::move(remote));
    p.index.push_back(i);
    p.trace.ops.push_back(std::move(own));
  }
  return parts;
}

// Drives every replayer from the calling thread in turn until all are done, then finishes each:
// each step takes back what is done, submits what the window, the captured start times and the
// other devices allow, and polls its engine once, so every device's host side keeps up with
// every other's, deterministically. With options.perfetto_path, one timeline with a process per
// device. Shared by replay_together() and the replay of a multi-device trace.
std::vector<ReplayResult> drive_together(std::vector<std::unique_ptr<Replayer>>& replayers, const ReplayOptions& options,
                                         std::optional<double> shared_first_start = std::nullopt,
                                         bool share_origin = false) {
  for (auto& r : replayers) r->begin();
  if (share_origin) {
    for (auto& r : replayers) r->share_time_origin(shared_first_start);
  }
  for (bool all = false; !all;) {
    all = true;
    for (auto& r : replayers) all = r->advance() && all;
  }
  std::vector<ReplayResult> out;
  for (auto& r : replayers) out.push_back(r->finish());
  if (!options.perfetto_path.empty()) {
    std::uint64_t base = 0;
    for (const auto& r : replayers) {
      const std::uint64_t f = r->first_raw_start();
      if (f && (!base || f < base)) base = f;
    }
    nlohmann::json events = nlohmann::json::array();
    for (std::size_t i = 0; i < replayers.size(); ++i) {
      events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", i}, {"args", {{"name", fmt::format("device {}", i)}}}});
      for (auto& e : replayers[i]->perfetto_events(static_cast<int>(i), base)) events.push_back(std::move(e));
    }
    write_file_atomically(options.perfetto_path,
                          nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ns"}}.dump() + "\n");
  }
  return out;
}

}  // namespace

nlohmann::json ReplayResult::to_json() const {
  nlohmann::json ops_json = nlohmann::json::array();
  for (const OpTiming& t : ops) {
    ops_json.push_back({{"id", t.id}, {"start_ns", t.start_ns}, {"duration_ns", t.duration_ns},
                        {"host_start_ns", t.host_start_ns}, {"host_duration_ns", t.host_duration_ns}});
  }
  return {{"total_ns", total_ns}, {"data_ok", data_ok}, {"data_error", data_error}, {"ops", ops_json}};
}

std::string ReplayResult::summary() const {
  return fmt::format("{} ops, {:.0f} ns device time span, data {}{}\n", ops.size(), total_ns,
                     data_ok ? "ok" : "NOT OK", data_ok ? "" : ": " + data_error);
}

ReplayResult replay(const Trace& trace, spyre_dma::backend::Instance backend, const ReplayOptions& options) {
  if (const std::string bad = check_trace(trace); !bad.empty()) throw TraceError("<trace>", 0, "", bad);
  if (!backend.device) throw std::invalid_argument("replay: null device");
  if (trace.header.devices > 1) {
    throw std::invalid_argument(fmt::format(
        "replay: the trace runs on {0} devices (header.devices); open {0} together (Registry::open_devices with "
        "Settings::devices = {0}) and replay it on them",
        trace.header.devices));
  }
  Replayer r(trace, std::move(backend), options);
  return r.run();
}

ReplayResult replay(const Trace& trace, std::vector<spyre_dma::backend::Instance> devices, const ReplayOptions& options) {
  if (const std::string bad = check_trace(trace); !bad.empty()) throw TraceError("<trace>", 0, "", bad);
  if (devices.size() != trace.header.devices) {
    throw std::invalid_argument(fmt::format("replay: the trace runs on {} devices (header.devices), given {}",
                                            trace.header.devices, devices.size()));
  }
  for (std::size_t d = 0; d < devices.size(); ++d) {
    if (!devices[d].device) throw std::invalid_argument("replay: null device " + std::to_string(d));
  }
  if (devices.size() == 1) {
    Replayer r(trace, std::move(devices[0]), options);
    return r.run();
  }
  Peers peers;
  std::vector<DevicePart> parts = split_by_device(trace, peers.device_of);
  ReplayOptions each = options;
  each.perfetto_path.clear();  // one file for every device (drive_together)
  std::vector<std::unique_ptr<Replayer>> replayers;
  for (std::size_t d = 0; d < parts.size(); ++d) {
    replayers.push_back(std::make_unique<Replayer>(parts[d].trace, std::move(devices[d]), each));
    peers.replayers.push_back(replayers.back().get());
    replayers.back()->wait_for_peers(&peers, std::move(parts[d].remote_deps), std::move(parts[d].remote_targets));
  }
  std::vector<ReplayResult> per_device = drive_together(replayers, options, first_held_time(trace), true);

  // One result keyed by the trace's op ids, in trace order, every start relative to the first
  // device start of any device (a server's devices share one clock).
  ReplayResult out;
  out.ops.resize(trace.ops.size());
  std::uint64_t first = 0, last = 0;
  for (const auto& r : replayers) {
    const std::uint64_t f = r->first_raw_start();
    if (f && (!first || f < first)) first = f;
  }
  for (std::size_t d = 0; d < parts.size(); ++d) {
    for (std::size_t i = 0; i < parts[d].index.size(); ++i) {
      const OpTiming& t = per_device[d].ops[i];
      const std::uint64_t raw = replayers[d]->raw_start(i);
      OpTiming& o = out.ops[parts[d].index[i]];
      o.id = trace.ops[parts[d].index[i]].id;
      o.duration_ns = t.duration_ns;
      o.start_ns = raw ? static_cast<double>(raw - first) : 0.0;
      if (raw) last = std::max<std::uint64_t>(last, raw + static_cast<std::uint64_t>(t.duration_ns));
    }
    if (!per_device[d].data_ok && out.data_ok) {
      out.data_ok = false;
      out.data_error = fmt::format("device {}: {}", d, per_device[d].data_error);
    }
  }
  out.total_ns = first ? static_cast<double>(last - first) : 0.0;
  return out;
}

std::vector<ReplayResult> replay_together(const std::vector<const Trace*>& traces,
                                          std::vector<spyre_dma::backend::Instance> devices,
                                          const ReplayOptions& options) {
  if (traces.size() != devices.size()) {
    throw std::invalid_argument(fmt::format("replay_together: {} traces for {} devices", traces.size(), devices.size()));
  }
  for (std::size_t i = 0; i < traces.size(); ++i) {
    if (const std::string bad = check_trace(*traces[i]); !bad.empty()) {
      throw TraceError("<trace " + std::to_string(i) + ">", 0, "", bad);
    }
    if (traces[i]->header.devices > 1) {
      throw std::invalid_argument(fmt::format(
          "replay_together: trace {} runs on {} devices itself (header.devices): replay it alone on a server of as many",
          i, traces[i]->header.devices));
    }
    if (!devices[i].device) throw std::invalid_argument("replay_together: null device " + std::to_string(i));
  }
  ReplayOptions each = options;
  each.perfetto_path.clear();  // one file for every device (drive_together)
  std::vector<std::unique_ptr<Replayer>> replayers;
  for (std::size_t i = 0; i < traces.size(); ++i) {
    replayers.push_back(std::make_unique<Replayer>(*traces[i], std::move(devices[i]), each));
  }
  return drive_together(replayers, options);
}

ReplayResult replay_on_sim(const Trace& trace, const spyre_dma::model::SimConfig& config,
                           const ReplayOptions& options) {
  if (trace.header.devices > 1) {
    // A server of at least the trace's devices, arranged as the configuration says (devices on
    // root ports of their own unless it puts them behind switches); device d runs device d's ops.
    spyre_dma::model::SimConfig server = config;
    server.topology.devices = std::max(server.topology.devices, trace.header.devices);
    std::vector<spyre_dma::backend::Instance> devices = spyre_dma::model::open_server(server);
    // A configuration of more devices than the trace's: the others stay idle (and alive) meanwhile.
    std::vector<spyre_dma::backend::Instance> idle(std::make_move_iterator(devices.begin() + trace.header.devices),
                                                   std::make_move_iterator(devices.end()));
    devices.resize(trace.header.devices);
    return replay(trace, std::move(devices), options);
  }
  auto device = std::make_shared<spyre_dma::model::SimDevice>(config);
  spyre_dma::backend::Instance backend;
  backend.memory = device.get();
  backend.clock = device.get();
  backend.device = std::move(device);
  return replay(trace, std::move(backend), options);
}

}  // namespace spyre_dma::traces
