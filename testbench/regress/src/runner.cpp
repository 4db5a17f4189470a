// run_program(): one test from start to end. The backend is opened, the engine, its streams and
// every buffer set up (each buffer a scoreboard region), the program's ops submitted one by one
// (a sync op ends an epoch), then everything is checked once more, torn down, and the findings,
// figures and coverage returned. The checkers and the coverage bookkeeping it calls are in
// test_run_checks.cpp and test_run_coverage.cpp.
#include "runner.hpp"

#include <cmath>
#include <exception>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "digest.hpp"
#include "test_run.hpp"

namespace spyre_dma::regress {
namespace detail {

TestResult TestRun::run() {
  const auto t0 = Clock::now();
  if (std::string e = check_program(p_); !e.empty()) {
    findings_.add(FindingKind::kSetup, -1, "program: " + e);
    return finish(t0);
  }
  try {
    auto lap = [t = t0](double* phase) mutable {
      const auto now = Clock::now();
      *phase = std::chrono::duration<double>(now - t).count();
      t = now;
    };
    setup();
    lap(&metrics_.setup_s);
    for (std::size_t i = 0; i < p_.ops.size(); ++i) step(i);
    if (!device_gone_) end_epoch(p_.ops.size());
    lap(&metrics_.run_s);
    if (!device_killed_) {  // the memory and registers of a dead device cannot be read
      scoreboard_.verify_all(&memory_digest_);
      memory_checked_ = true;
      final_checks();
    }
    lap(&metrics_.check_s);
  } catch (const std::exception& e) {
    findings_.add(FindingKind::kSetup, -1, fmt::format("the test stopped: {}", e.what()));
  }
  return finish(t0);
}

void TestRun::begin() {
  t0_ = lap_ = Clock::now();
  if (std::string e = check_program(p_); !e.empty()) {
    findings_.add(FindingKind::kSetup, -1, "program: " + e);
    stopped_ = true;
    return;
  }
  try {
    setup();
  } catch (const std::exception& e) {
    findings_.add(FindingKind::kSetup, -1, fmt::format("the test stopped: {}", e.what()));
    stopped_ = true;
  }
  const auto now = Clock::now();
  metrics_.setup_s = std::chrono::duration<double>(now - lap_).count();
  lap_ = now;
}

bool TestRun::streams_idle() {
  bool idle = true;
  for (Stream& s : streams_) idle = s.query() && idle;
  return idle;
}

bool TestRun::advance() {
  if (stopped_) return true;
  try {
    while (next_ < p_.ops.size()) {
      if (p_.ops[next_].type == OpType::kSync) {
        if (!streams_idle()) return false;
        end_epoch(next_++);
        continue;
      }
      step(next_++);
      return false;
    }
    if (!streams_idle()) return false;
    if (!device_gone_) end_epoch(p_.ops.size());
    const auto now = Clock::now();
    metrics_.run_s = std::chrono::duration<double>(now - lap_).count();
    lap_ = now;
    if (!device_killed_) {  // the memory and registers of a dead device cannot be read
      scoreboard_.verify_all(&memory_digest_);
      memory_checked_ = true;
      final_checks();
    }
    metrics_.check_s = std::chrono::duration<double>(Clock::now() - lap_).count();
  } catch (const std::exception& e) {
    findings_.add(FindingKind::kSetup, -1, fmt::format("the test stopped: {}", e.what()));
  }
  stopped_ = true;
  return true;
}

TestResult TestRun::end() { return finish(t0_); }

void TestRun::setup() {
  backend_ = open_(p_);
  if (!backend_.device || !backend_.memory) throw std::runtime_error("the backend did not open");
  monitor_ = std::make_shared<DeviceMonitor>(backend_.device, findings_);
  EngineOptions eo;
  eo.cb_timeout = o_.cb_timeout;
  if (p_.tuning.ring_slots) eo.ring_slots = {p_.tuning.ring_slots, p_.tuning.ring_slots, p_.tuning.ring_slots};
  if (p_.tuning.max_cb_bytes) eo.max_cb_bytes = p_.tuning.max_cb_bytes;
  if (p_.tuning.staging_buffers) eo.staging_buffers = p_.tuning.staging_buffers;
  if (p_.tuning.staging_buffer_bytes) eo.staging_buffer_bytes = p_.tuning.staging_buffer_bytes;
  eo.order_by_footprint = p_.tuning.order_by_footprint;
  engine_ = Engine::open(monitor_, eo);
  max_cb_ = engine_->limits().max_cb_bytes;
  for (std::size_t i = 0; i < p_.streams.size(); ++i) {
    StreamOptions so;
    so.ordering = p_.streams[i].ordering;
    so.priority = p_.streams[i].priority;
    so.on_failure = p_.streams[i].on_failure;
    so.name = fmt::format("s{}", i);
    streams_.push_back(engine_->create_stream(so));
  }
  for (std::uint32_t e = 0; e < p_.events; ++e) events_.push_back(engine_->create_event());
  for (std::size_t i = 0; i < p_.host_buffers.size(); ++i) {
    const HostBufferSpec& h = p_.host_buffers[i];
    std::uint8_t* base = nullptr;
    if (h.kind == HostKind::kRegistered) {
      // Shareable memory kept from test to test, registered here: a fresh memfd per test
      // (allocate_host) costs a page fault per 4 KiB and the kernel's clearing of every page.
      shareable_.emplace_back(h.bytes, PooledBuffer::Memory::kShareable);
      registered_.push_back(engine_->register_host(shareable_.back().data(), h.bytes));
      base = shareable_.back().data();
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

void TestRun::step(std::size_t i) {
  const OpSpec& op = p_.ops[i];
  if (device_gone_) return;  // the device died in an earlier epoch: nothing more runs
  if (o_.kill_device && o_.kill_device_at_op == static_cast<std::int64_t>(i) && !device_killed_) {
    device_killed_ = true;  // first: a check that meets the dead device knows why
    o_.kill_device(*backend_.device);
    ++metrics_.faults_injected["device_killed"];
  }
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
        cover_event(op, "record");
        last_record_[op.event] = i;
        r.op = s.record(events_[op.event]);
        break;
      case OpType::kWait: {
        auto it = last_record_.find(op.event);
        if (it != last_record_.end()) {
          const bool same = p_.ops[it->second].stream == op.stream;
          cover(same ? "event.same_stream" : "event.cross_stream");
          cover_event(op, same ? "wait_same" : "wait_cross");
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
    if (device_killed_ && dynamic_cast<const DeviceFault*>(&e)) return;  // a dead device refuses new work
    findings_.add(op.expect ? FindingKind::kWrongError : FindingKind::kSetup, static_cast<std::int64_t>(i),
                  fmt::format("op {} ({}) was refused: {}", i, to_string(op.type), e.what()));
  }
}

TestResult TestRun::finish(Clock::time_point t0) {
  metrics_.bytes_checked = scoreboard_.bytes_checked();
  // Before the teardown: what the engine does while it closes is not part of the test.
  TestDigest digest;
  if (monitor_) digest.rbs = monitor_->rb_digest();
  if (memory_checked_) digest.memory = memory_digest_.value();
  if (backend_.clock) digest.sim_time_ps = static_cast<std::uint64_t>(std::llround(metrics_.sim_time_ns * 1000.0));
  const auto teardown = Clock::now();
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
  const auto end = Clock::now();
  metrics_.teardown_s = std::chrono::duration<double>(end - teardown).count();
  metrics_.wall_s = std::chrono::duration<double>(end - t0).count();
  TestResult r;
  r.findings = findings_.list();
  r.finding_count = findings_.total();
  r.passed = r.finding_count == 0;
  r.metrics = metrics_;
  r.coverage = coverage_;
  r.digest = digest;
  return r;
}

}  // namespace detail

nlohmann::json TestMetrics::to_json() const {
  return {{"ops", ops},           {"data_ops", data_ops},   {"bytes", bytes},
          {"cbs", cbs},           {"failed_ops", failed_ops}, {"dependency_failed_ops", dependency_failed_ops},
          {"epochs", epochs},
          {"resets", resets},     {"bytes_checked", bytes_checked}, {"sim_time_ns", sim_time_ns},
          {"wall_s", wall_s},     {"faults_injected", faults_injected},
          {"phases_s", {{"setup", setup_s}, {"run", run_s}, {"check", check_s}, {"teardown", teardown_s}}}};
}

std::uint64_t TestDigest::value() const {
  Digest d;
  d.add(rbs);
  d.add(memory);
  d.add(sim_time_ps);
  return d.value();
}

nlohmann::json TestDigest::to_json() const {
  return {{"test", Digest::hex(value())},
          {"rbs", Digest::hex(rbs)},
          {"memory", Digest::hex(memory)},
          {"sim_time_ps", sim_time_ps}};
}

TestDigest TestDigest::from_json(const nlohmann::json& j) {
  auto hex = [&](const char* key) {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_string() || it->get_ref<const std::string&>().size() != 16) {
      throw std::invalid_argument(std::string("digest: key \"") + key + "\": expected 16 hex digits");
    }
    const std::string& s = it->get_ref<const std::string&>();
    std::size_t used = 0;
    std::uint64_t v = 0;
    try {
      v = std::stoull(s, &used, 16);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != s.size()) {
      throw std::invalid_argument(std::string("digest: key \"") + key + "\": \"" + s + "\" is not 16 hex digits");
    }
    return v;
  };
  if (!j.is_object()) throw std::invalid_argument("digest: expected an object");
  TestDigest d;
  d.rbs = hex("rbs");
  d.memory = hex("memory");
  const auto t = j.find("sim_time_ps");
  if (t == j.end() || !t->is_number_unsigned()) {
    throw std::invalid_argument("digest: key \"sim_time_ps\": expected an unsigned integer");
  }
  d.sim_time_ps = t->get<std::uint64_t>();
  if (hex("test") != d.value()) throw std::invalid_argument("digest: \"test\" does not match its parts");
  return d;
}

TestMetrics& TestMetrics::operator+=(const TestMetrics& o) {
  ops += o.ops, data_ops += o.data_ops, bytes += o.bytes, cbs += o.cbs, failed_ops += o.failed_ops;
  dependency_failed_ops += o.dependency_failed_ops;
  epochs += o.epochs, resets += o.resets, bytes_checked += o.bytes_checked, sim_time_ns += o.sim_time_ns;
  wall_s += o.wall_s, setup_s += o.setup_s, run_s += o.run_s, check_s += o.check_s, teardown_s += o.teardown_s;
  for (const auto& [k, n] : o.faults_injected) faults_injected[k] += n;
  return *this;
}

TestResult run_program(const Program& program, const BackendFactory& open, const RunOptions& options) {
  return detail::TestRun(program, open, options).run();
}

std::vector<TestResult> run_program_together(const Program& program, std::vector<TestBackend> devices,
                                             const RunOptions& options) {
  std::vector<BackendFactory> opens;
  for (TestBackend& d : devices) {
    opens.push_back([d](const Program&) mutable { return std::exchange(d, TestBackend{}); });
  }
  std::vector<std::unique_ptr<detail::TestRun>> runs;
  for (const BackendFactory& open : opens) runs.push_back(std::make_unique<detail::TestRun>(program, open, options));
  devices.clear();  // each run holds its device now (or will, at begin())
  for (auto& r : runs) r->begin();
  for (bool all = false; !all;) {
    all = true;
    for (auto& r : runs) all = r->advance() && all;
  }
  std::vector<TestResult> out;
  for (auto& r : runs) out.push_back(r->end());
  return out;
}

}  // namespace spyre_dma::regress
