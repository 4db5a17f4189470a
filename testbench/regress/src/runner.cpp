#include "runner.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "device_monitor.hpp"
#include "scoreboard.hpp"
#include "spyre_dma/spyre_dma.hpp"

namespace spyre_dma::regress {
namespace {

using Clock = std::chrono::steady_clock;

// Host memory the engine has not registered: plain heap memory placed `misalign` bytes past a
// 128-byte boundary.
class PageableBuffer {
 public:
  PageableBuffer(std::uint64_t bytes, std::uint32_t misalign)
      : raw_(static_cast<std::uint8_t*>(std::aligned_alloc(4096, round_up(bytes + misalign)))) {
    if (!raw_) throw OutOfMemory(fmt::format("pageable host buffer of {} bytes", bytes));
    data_ = raw_ + misalign;
  }
  ~PageableBuffer() { std::free(raw_); }
  PageableBuffer(const PageableBuffer&) = delete;
  PageableBuffer& operator=(const PageableBuffer&) = delete;
  std::uint8_t* data() const noexcept { return data_; }

 private:
  static std::size_t round_up(std::uint64_t n) { return static_cast<std::size_t>((n + 4095) / 4096 * 4096); }
  std::uint8_t* raw_;
  std::uint8_t* data_;
};

class HostPort final : public MemoryPort {
 public:
  explicit HostPort(std::uint8_t* base) : base_(base) {}
  void read(std::uint64_t off, std::uint8_t* dst, std::size_t n) const override { std::memcpy(dst, base_ + off, n); }
  void write(std::uint64_t off, const std::uint8_t* src, std::size_t n) override { std::memcpy(base_ + off, src, n); }

 private:
  std::uint8_t* base_;
};

// A device allocation through the backend's memory backdoor, chunk by chunk.
class DevicePort final : public MemoryPort {
 public:
  DevicePort(backend::MemoryBackdoor& mem, CompositeAddress address) : mem_(mem), address_(std::move(address)) {}
  void read(std::uint64_t off, std::uint8_t* dst, std::size_t n) const override {
    walk(off, n, [&](std::uint64_t phys, std::size_t at, std::size_t len) { mem_.backdoor_read(phys, dst + at, len); });
  }
  void write(std::uint64_t off, const std::uint8_t* src, std::size_t n) override {
    walk(off, n, [&](std::uint64_t phys, std::size_t at, std::size_t len) { mem_.backdoor_write(phys, src + at, len); });
  }

 private:
  template <typename F>
  void walk(std::uint64_t off, std::size_t n, F&& f) const {
    std::size_t done = 0;
    while (done < n) {
      const CompositeAddress::Position p = address_.locate(off + done);
      const DeviceChunk& c = address_.chunks()[p.chunk];
      const std::size_t len = static_cast<std::size_t>(std::min<std::uint64_t>(n - done, c.size - p.offset_in_chunk));
      f(c.physical() + p.offset_in_chunk, done, len);
      done += len;
    }
  }
  backend::MemoryBackdoor& mem_;
  CompositeAddress address_;
};

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

bool crosses(std::uint64_t lo, std::uint64_t bytes, std::uint64_t unit) {
  return bytes > 0 && lo / unit != (lo + bytes - 1) / unit;
}

// Everything one test run holds.
class TestRun {
 public:
  TestRun(const Program& p, const BackendFactory& open, const RunOptions& o) : p_(p), open_(open), o_(o) {}

  TestResult run() {
    const auto t0 = Clock::now();
    if (std::string e = check_program(p_); !e.empty()) {
      findings_.add(FindingKind::kSetup, -1, "program: " + e);
      return finish(t0);
    }
    try {
      setup();
      for (std::size_t i = 0; i < p_.ops.size(); ++i) step(i);
      end_epoch(p_.ops.size());
      scoreboard_.verify_all();
      final_checks();
    } catch (const std::exception& e) {
      findings_.add(FindingKind::kSetup, -1, fmt::format("the test stopped: {}", e.what()));
    }
    return finish(t0);
  }

 private:
  struct Record {
    Op op;
    Access access;
    bool has_access = false;
    bool has_callback = false;
    int callbacks = 0;
    std::int64_t prev = -1;  // the stream's previous op with a callback (strict, op-ordered)
    Status status;
  };

  void setup() {
    backend_ = open_(p_);
    if (!backend_.device || !backend_.memory) throw std::runtime_error("the backend did not open");
    monitor_ = std::make_shared<DeviceMonitor>(backend_.device, findings_);
    EngineOptions eo;
    eo.cb_timeout = o_.cb_timeout;
    if (p_.tuning.ring_slots) eo.ring_slots = {p_.tuning.ring_slots, p_.tuning.ring_slots, p_.tuning.ring_slots};
    if (p_.tuning.max_cb_bytes) eo.max_cb_bytes = p_.tuning.max_cb_bytes;
    if (p_.tuning.staging_buffers) eo.staging_buffers = p_.tuning.staging_buffers;
    if (p_.tuning.staging_buffer_bytes) eo.staging_buffer_bytes = p_.tuning.staging_buffer_bytes;
    engine_ = Engine::open(monitor_, eo);
    max_cb_ = engine_->limits().max_cb_bytes;
    for (std::size_t i = 0; i < p_.streams.size(); ++i) {
      StreamOptions so;
      so.ordering = p_.streams[i].ordering;
      so.priority = p_.streams[i].priority;
      so.name = fmt::format("s{}", i);
      streams_.push_back(engine_->create_stream(so));
    }
    for (std::uint32_t e = 0; e < p_.events; ++e) events_.push_back(engine_->create_event());
    for (std::size_t i = 0; i < p_.host_buffers.size(); ++i) {
      const HostBufferSpec& h = p_.host_buffers[i];
      std::uint8_t* base = nullptr;
      if (h.kind == HostKind::kRegistered) {
        registered_.push_back(engine_->allocate_host(h.bytes));
        base = static_cast<std::uint8_t*>(registered_.back().data());
      } else {
        pageable_.push_back(std::make_unique<PageableBuffer>(h.bytes, h.misalign));
        base = pageable_.back()->data();
      }
      host_.push_back(base);
      (void)scoreboard_.add_region(fmt::format("host buffer {}", i), std::make_unique<HostPort>(base), h.bytes,
                                   p_.seed);
    }
    for (std::size_t i = 0; i < p_.device_buffers.size(); ++i) {
      const DeviceBufferSpec& d = p_.device_buffers[i];
      AllocOptions ao;
      ao.max_chunk_bytes = d.max_chunk_bytes;
      device_.push_back(engine_->allocate(d.bytes, ao));
      (void)scoreboard_.add_region(fmt::format("device buffer {}", i),
                                   std::make_unique<DevicePort>(*backend_.memory, device_.back().address()), d.bytes,
                                   p_.seed);
    }
    records_.resize(p_.ops.size());
    if (p_.streams.size() >= 4) cover("stream.many");
  }

  // Coverage is hit from completions on engine threads too.
  void cover(const char* bin, std::uint64_t n = 1) {
    std::lock_guard<std::mutex> g(mu_);
    coverage_.hit(bin, n);
  }

  int host_region(std::uint32_t h) const { return static_cast<int>(h); }
  int dev_region(std::uint32_t d) const { return static_cast<int>(p_.host_buffers.size() + d); }

  Callback done_callback(std::size_t i) {
    return [this, i](const Status& s) { on_done(i, s); };
  }

  void on_done(std::size_t i, const Status& s) {
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
    if (r.has_access) {
      if (o_.corrupt_op == static_cast<std::int64_t>(i) && s.ok()) {
        scoreboard_.corrupt(r.access.dst_region, r.access.dst_offset + r.access.bytes / 2);
      }
      scoreboard_.completed(static_cast<std::int64_t>(i), r.access, s.ok());
    }
    check_status(i, s);
    {
      std::lock_guard<std::mutex> g(mu_);
      ++callbacks_done_;
    }
    cv_.notify_all();
  }

  void check_status(std::size_t i, const Status& s) {
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
    if (!s.ok() && !p_.faults.any()) {
      findings_.add(FindingKind::kUnexpectedError, static_cast<std::int64_t>(i),
                    fmt::format("op {} ({}) failed with no fault injected: {}", i, to_string(op.type), s.to_string()));
    }
  }

  void cover_data_op(const OpSpec& op) {
    const std::uint64_t n = op.bytes;
    cover(n <= 1024 ? "size.tiny" : n <= 65536 ? "size.small" : n <= (1u << 20) ? "size.medium"
                  : n <= (16u << 20) ? "size.large" : "size.huge");
    cover(n % 128 == 0 ? "size.flit_multiple" : "size.partial_flit");
    if (n > max_cb_) cover("cross.max_cb");
    const Ordering o = p_.streams[op.stream].ordering;
    cover(o == Ordering::kStrict ? "stream.strict" : o == Ordering::kOpOrdered ? "stream.op_ordered"
                                                                                        : "stream.pipeline_fifo");
    auto device_side = [&](std::uint32_t buf, std::uint64_t off) {
      const auto& chunks = device_[buf].address().chunks();
      cover(chunks.size() > 1 ? "alloc.multi_chunk" : "alloc.single_chunk");
      if (chunks.size() > 1) {
        const auto a = device_[buf].address().locate(off);
        const auto b = device_[buf].address().locate(off + n - 1);
        if (a.chunk != b.chunk) cover("cross.chunk");
      }
    };
    if (op.type == OpType::kH2D || op.type == OpType::kD2H) {
      const auto addr = reinterpret_cast<std::uintptr_t>(host_[op.host] + op.host_offset);
      const bool registered = p_.host_buffers[op.host].kind == HostKind::kRegistered;
      if (addr % 128 != 0) cover("host.unaligned");
      if (!registered) cover("host.pageable");
      else if (addr % 128 == 0) cover("host.registered");
      if (crosses(addr, n, 4096)) cover("cross.host_page");
      if (op.type == OpType::kD2H && crosses(addr, n, 512)) cover("cross.mps");
      if (op.type == OpType::kH2D && n > 4096) cover("cross.mrrs");
    }
    switch (op.type) {
      case OpType::kH2D: cover("dir.h2d"); device_side(op.dev, op.dev_offset); break;
      case OpType::kD2H: cover("dir.d2h"); device_side(op.dev, op.dev_offset); break;
      case OpType::kD2D:
        cover("dir.d2d");
        device_side(op.dev, op.dev_offset);
        device_side(op.src_dev, op.src_offset);
        break;
      case OpType::kFill: cover("dir.fill"); device_side(op.dev, op.dev_offset); break;
      default: break;
    }
  }

  void step(std::size_t i) {
    const OpSpec& op = p_.ops[i];
    if (op.type == OpType::kSync) {
      end_epoch(i);
      return;
    }
    Stream& s = streams_[op.stream];
    Record& r = records_[i];
    ++metrics_.ops;
    {
      std::lock_guard<std::mutex> g(mu_);
      epoch_ops_.push_back(i);
    }
    switch (op.type) {
      case OpType::kH2D:
        r.access = Access{host_region(op.host), op.host_offset, dev_region(op.dev), op.dev_offset, op.bytes, 0};
        break;
      case OpType::kD2H:
        r.access = Access{dev_region(op.dev), op.dev_offset, host_region(op.host), op.host_offset, op.bytes, 0};
        break;
      case OpType::kD2D:
        r.access = Access{dev_region(op.src_dev), op.src_offset, dev_region(op.dev), op.dev_offset, op.bytes, 0};
        break;
      case OpType::kFill: r.access = Access{-1, 0, dev_region(op.dev), op.dev_offset, op.bytes, op.pattern}; break;
      default: break;
    }
    r.has_access = op.type == OpType::kH2D || op.type == OpType::kD2H || op.type == OpType::kD2D ||
                   op.type == OpType::kFill;
    r.has_callback = r.has_access || op.type == OpType::kCompute || op.type == OpType::kHostCallback;
    if (r.has_access) {
      ++metrics_.data_ops;
      metrics_.bytes += op.bytes;
      cover_data_op(op);
      scoreboard_.submitted(static_cast<std::int64_t>(i), r.access);
    }
    if (r.has_callback) {
      ++callbacks_expected_;
      if (p_.streams[op.stream].ordering != Ordering::kPipelineFifo) {
        auto [it, fresh] = last_callback_op_.emplace(op.stream, static_cast<std::int64_t>(i));
        if (!fresh) r.prev = std::exchange(it->second, static_cast<std::int64_t>(i));
      }
    }
    try {
      switch (op.type) {
        case OpType::kH2D:
          r.op = s.copy_h2d(device_[op.dev], op.dev_offset, host_[op.host] + op.host_offset, op.bytes, done_callback(i));
          break;
        case OpType::kD2H:
          r.op = s.copy_d2h(host_[op.host] + op.host_offset, device_[op.dev], op.dev_offset, op.bytes, done_callback(i));
          break;
        case OpType::kD2D:
          r.op = s.copy_d2d(device_[op.dev], op.dev_offset, device_[op.src_dev], op.src_offset, op.bytes,
                            done_callback(i));
          break;
        case OpType::kFill:
          r.op = s.fill(device_[op.dev], op.dev_offset, op.bytes, op.pattern, done_callback(i));
          break;
        case OpType::kCompute:
          cover("dir.compute");
          r.op = s.compute(std::chrono::nanoseconds(op.duration_ns), done_callback(i));
          break;
        case OpType::kHostCallback:
          cover("dir.host_callback");
          r.op = s.host_callback([this, i] { host_callback_ran(i); }, done_callback(i));
          break;
        case OpType::kRecord:
          last_record_[op.event] = i;
          r.op = s.record(events_[op.event]);
          break;
        case OpType::kWait: {
          auto it = last_record_.find(op.event);
          if (it != last_record_.end()) {
            cover(p_.ops[it->second].stream == op.stream ? "event.same_stream" : "event.cross_stream");
            waits_.push_back(Wait{i, it->second});
          }
          r.op = s.wait(events_[op.event]);
          break;
        }
        default: break;
      }
    } catch (const std::exception& e) {
      // Submission refused: nothing was queued, so no completion will come.
      if (r.has_access) scoreboard_.completed(static_cast<std::int64_t>(i), r.access, false);
      if (r.has_callback) --callbacks_expected_;
      r.has_callback = false;
      if (op.expect && op.expect->code == ErrorCode::kInvalidArgument) return;
      findings_.add(op.expect ? FindingKind::kWrongError : FindingKind::kSetup, static_cast<std::int64_t>(i),
                    fmt::format("op {} ({}) was refused: {}", i, to_string(op.type), e.what()));
    }
  }

  // Host callbacks run once every earlier op of their stream has completed.
  void host_callback_ran(std::size_t i) {
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
  std::vector<std::size_t> epoch_ops_snapshot(std::size_t upto) {
    std::lock_guard<std::mutex> g(mu_);
    std::vector<std::size_t> out;
    for (std::size_t k : epoch_ops_) {
      if (k < upto) out.push_back(k);
    }
    return out;
  }

  void end_epoch(std::size_t at) {
    ++metrics_.epochs;
    std::vector<bool> stream_failed(streams_.size(), false);
    std::vector<Status> sync(streams_.size());
    for (std::size_t s = 0; s < streams_.size(); ++s) sync[s] = streams_[s].synchronize(o_.wait_timeout);
    {
      // Completions are reported before their callbacks run: wait (bounded) for the callbacks.
      std::unique_lock<std::mutex> g(mu_);
      if (!cv_.wait_for(g, o_.wait_timeout, [&] { return callbacks_done_ >= callbacks_expected_; })) {
        g.unlock();
        findings_.add(FindingKind::kLostCompletion, -1,
                      fmt::format("epoch ending at op {}: {} of {} completion callbacks never ran", at,
                                  callbacks_expected_ - callbacks_done_, callbacks_expected_));
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
      const Status st = r.has_callback ? r.status : r.op.status();
      if (!st.ok()) {
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
      } else if (stream_failed[s] != !sync[s].ok()) {
        findings_.add(FindingKind::kWrongError, -1,
                      fmt::format("stream {}: {} op failed in the epoch ending at op {}, but synchronize() returned {}",
                                  s, stream_failed[s] ? "an" : "no", at, sync[s].ok() ? "ok" : sync[s].to_string()));
      }
    }
    check_order(ops);
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

  // FIFO within a stream, event order and strict-mode barriers, from completion order and from
  // the device's own timestamps.
  void check_order(const std::vector<std::size_t>& ops) {
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

  void final_checks() {
    const EngineStats es = engine_->stats();
    metrics_.cbs = es.cbs_submitted;
    if (es.queue_full_stalls) coverage_.hit("pressure.queue_full", es.queue_full_stalls);
    if (es.staging_stalls) coverage_.hit("pressure.staging", es.staging_stalls);
    const MonitorCounters mc = monitor_->counters();
    coverage_.hit("rb.good", mc.rb_status[0]);
    coverage_.hit("rb.retry", mc.rb_status[1]);
    coverage_.hit("rb.abend", mc.rb_status[2]);
    coverage_.hit("rb.error", mc.rb_status[3]);
    coverage_.hit("pipeline.barrier", mc.barriers);
    for (std::size_t i = 0; i < p_.ops.size(); ++i) {
      if (!records_[i].op.valid()) continue;
      switch (queue_of(p_.ops[i].type)) {
        case Queue::kCompute: coverage_.hit("pipeline.compute"); break;
        case Queue::kDmai: coverage_.hit("pipeline.dmai"); break;
        case Queue::kDmao: coverage_.hit("pipeline.dmao"); break;
        case Queue::kNone: break;
      }
    }
    if (backend_.statistics) model_checks(backend_.statistics->statistics());
    if (backend_.clock) metrics_.sim_time_ns = backend_.clock->now_ns();
  }

  // The model's own verdicts: its protocol checker, and whether the faults it injected show up
  // as failed ops (and only then).
  void model_checks(const nlohmann::json& stats) {
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
        const auto& cat = catalogue();
        if (std::any_of(cat.begin(), cat.end(), [&](const BinInfo& b) { return bin == b.name; })) coverage_.hit(bin, count);
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

  static const nlohmann::json* find(const nlohmann::json& j, std::initializer_list<const char*> path) {
    const nlohmann::json* at = &j;
    for (const char* k : path) {
      if (!at->is_object() || !at->contains(k)) return nullptr;
      at = &(*at)[k];
    }
    return at;
  }

  TestResult finish(Clock::time_point t0) {
    metrics_.bytes_checked = scoreboard_.bytes_checked();
    // The engine goes first: it drains, resets and unmaps through the device.
    streams_.clear();
    events_.clear();
    device_.clear();
    registered_.clear();
    try {
      engine_ = nullptr;
    } catch (const std::exception& e) {
      findings_.add(FindingKind::kSetup, -1, fmt::format("closing the engine: {}", e.what()));
    }
    metrics_.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
    TestResult r;
    r.findings = findings_.list();
    r.finding_count = findings_.total();
    r.passed = r.finding_count == 0;
    r.metrics = metrics_;
    r.coverage = coverage_;
    return r;
  }

  struct Wait {
    std::size_t wait, record;
  };

  const Program& p_;
  const BackendFactory& open_;
  const RunOptions& o_;
  Findings findings_;
  Scoreboard scoreboard_{findings_};
  TestBackend backend_;
  std::shared_ptr<DeviceMonitor> monitor_;
  std::unique_ptr<Engine> engine_;
  std::uint64_t max_cb_ = 0;
  std::vector<Stream> streams_;
  std::vector<Event> events_;
  std::vector<DeviceBuffer> device_;
  std::vector<HostBuffer> registered_;
  std::vector<std::unique_ptr<PageableBuffer>> pageable_;
  std::vector<std::uint8_t*> host_;
  std::vector<Record> records_;
  std::map<std::uint32_t, std::size_t> last_record_;
  std::map<std::uint32_t, std::int64_t> last_callback_op_;
  std::vector<Wait> waits_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::uint64_t callbacks_expected_ = 0, callbacks_done_ = 0;
  std::vector<std::size_t> epoch_ops_;
  TestMetrics metrics_;
  Coverage coverage_;
};

}  // namespace

nlohmann::json TestMetrics::to_json() const {
  return {{"ops", ops},           {"data_ops", data_ops},   {"bytes", bytes},
          {"cbs", cbs},           {"failed_ops", failed_ops}, {"epochs", epochs},
          {"resets", resets},     {"bytes_checked", bytes_checked}, {"sim_time_ns", sim_time_ns},
          {"wall_s", wall_s},     {"faults_injected", faults_injected}};
}

TestResult run_program(const Program& program, const BackendFactory& open, const RunOptions& options) {
  return TestRun(program, open, options).run();
}

}  // namespace spyre_dma::regress
