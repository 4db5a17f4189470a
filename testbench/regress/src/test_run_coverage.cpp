// The runner's coverage and figures, over one test run (test_run.hpp): the bins each data op
// hits (size class, direction, stream ordering, chunk, page and packet-size crossings, host
// memory kind), and at the end of the run the engine's and the device monitor's counters
// (pressure, response block status, pipelines), the model's statistics and the simulated time.
#include <cstdint>
#include <map>
#include <string>

#include <fmt/format.h>

#include "test_run.hpp"

namespace spyre_dma::regress::detail {
namespace {

bool crosses(std::uint64_t lo, std::uint64_t bytes, std::uint64_t unit) {
  return bytes > 0 && lo / unit != (lo + bytes - 1) / unit;
}

const char* size_class(std::uint64_t n) {
  return n <= 1024 ? "tiny" : n <= 65536 ? "small" : n <= (1u << 20) ? "medium" : n <= (16u << 20) ? "large" : "huge";
}

const char* ordering_name(Ordering o) {
  return o == Ordering::kStrict ? "strict" : o == Ordering::kOpOrdered ? "op_ordered" : "pipeline_fifo";
}

// The fault kinds of the xfault cross, by the RB error an op failed with (none for the others).
const char* fault_kind(hw::ErrorKind k) {
  switch (k) {
    case hw::ErrorKind::kPcieError: return "pcie_error";
    case hw::ErrorKind::kCompletionTimeout: return "completion_timeout";
    case hw::ErrorKind::kIommuFault: return "iommu_fault";
    case hw::ErrorKind::kMalformedCb: return "malformed_cb";
    case hw::ErrorKind::kReset: return "reset";
    default: return nullptr;
  }
}

const char* queue_name(hw::Pipeline p) {
  return p == hw::Pipeline::kCompute ? "compute" : p == hw::Pipeline::kDmai ? "dmai" : "dmao";
}

}  // namespace

void TestRun::cover(const char* bin, std::uint64_t n) {
  std::lock_guard<std::mutex> g(mu_);
  coverage_.hit(bin, n);
}

void TestRun::cover_data_op(const OpSpec& op) {
  const std::uint64_t n = op.bytes;
  cover((std::string("size.") + size_class(n)).c_str());
  cover(n % 128 == 0 ? "size.flit_multiple" : "size.partial_flit");
  if (n > max_cb_) cover("cross.max_cb");
  const Ordering o = p_.streams[op.stream].ordering;
  cover((std::string("stream.") + ordering_name(o)).c_str());
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
    cover(fmt::format("xop.{}.{}.{}", to_string(op.type), size_class(n), registered ? "registered" : "pageable").c_str());
  } else {
    cover(fmt::format("xop.{}.{}.device", to_string(op.type), size_class(n)).c_str());
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

void TestRun::cover_event(const OpSpec& op, const char* use) {
  cover(fmt::format("xorder.{}.{}", ordering_name(p_.streams[op.stream].ordering), use).c_str());
}

void TestRun::cover_recoveries() {
  // An op that failed with an RB error, after which a later op of its stream succeeded.
  std::map<std::uint32_t, std::size_t> last_good;  // stream -> the last op that completed OK
  for (std::size_t i = 0; i < p_.ops.size(); ++i) {
    const Record& r = records_[i];
    if (r.has_callback && r.callbacks == 1 && r.status.ok()) last_good[p_.ops[i].stream] = i;
  }
  for (std::size_t i = 0; i < p_.ops.size(); ++i) {
    const Record& r = records_[i];
    if (!r.has_callback || r.callbacks != 1 || r.status.ok() || !r.status.device()) continue;
    const char* kind = fault_kind(r.status.device()->kind);
    const auto good = last_good.find(p_.ops[i].stream);
    if (kind && good != last_good.end() && good->second > i) {
      coverage_.hit(fmt::format("xfault.{}.{}", kind, queue_name(r.status.device()->pipeline)));
    }
  }
}

void TestRun::final_checks() {
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
  cover_recoveries();
  if (backend_.statistics) model_checks(backend_.statistics->statistics());
  if (backend_.clock) metrics_.sim_time_ns = backend_.clock->now_ns();
}

}  // namespace spyre_dma::regress::detail
