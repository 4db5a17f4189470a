// TraceRecorder: OpObserver callbacks into trace records.
#include "spyre_dma/traces/recorder.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>

namespace spyre_dma::traces {

namespace {

OpKind kind_of(spyre_dma::OpKind k) {
  switch (k) {
    case spyre_dma::OpKind::kH2D: return OpKind::kH2D;
    case spyre_dma::OpKind::kD2H: return OpKind::kD2H;
    case spyre_dma::OpKind::kD2D: return OpKind::kD2D;
    case spyre_dma::OpKind::kFill: return OpKind::kFill;
    case spyre_dma::OpKind::kCompute: return OpKind::kCompute;
    case spyre_dma::OpKind::kHostCallback: return OpKind::kHostCallback;
    // A host task is host work ordered with the stream, as a callback is: replayed as one.
    case spyre_dma::OpKind::kHostTask: return OpKind::kHostCallback;
    case spyre_dma::OpKind::kEventRecord: return OpKind::kEventRecord;
    case spyre_dma::OpKind::kEventWait: return OpKind::kEventWait;
  }
  return OpKind::kHostCallback;
}

HostMemory host_of(spyre_dma::HostAccess h) {
  switch (h) {
    case spyre_dma::HostAccess::kRegistered: return HostMemory::kRegistered;
    case spyre_dma::HostAccess::kPageable: return HostMemory::kPageable;
    case spyre_dma::HostAccess::kNone: break;
  }
  return HostMemory::kNone;
}

}  // namespace

TraceRecorder::TraceRecorder(Header header) : header_(std::move(header)) {
  if (header_.source.empty()) header_.source = "capture";
}

void TraceRecorder::on_submit(const spyre_dma::OpInfo& info) {
  std::lock_guard lock(mu_);
  if (!first_issue_) first_issue_ = info.issued;
  Op op;
  op.id = info.id;
  op.stream = streams_.emplace(info.stream, static_cast<std::uint32_t>(streams_.size())).first->second;
  op.kind = kind_of(info.kind);
  op.bytes = info.bytes;
  op.host = host_of(info.host);
  if (info.dst_alloc) {
    allocs_.emplace(info.dst_alloc, Allocation{info.dst_alloc, info.dst_alloc_bytes, info.dst_alloc_max_chunk});
    op.dst_alloc = info.dst_alloc;
    op.dst_offset = info.dst_offset;
  }
  if (info.src_alloc) {
    allocs_.emplace(info.src_alloc, Allocation{info.src_alloc, info.src_alloc_bytes, info.src_alloc_max_chunk});
    op.src_alloc = info.src_alloc;
    op.src_offset = info.src_offset;
  }
  if (op.kind == OpKind::kFill) op.pattern = info.pattern;
  if (op.kind == OpKind::kCompute) op.compute_ns = static_cast<std::uint64_t>(info.compute.count());
  if (op.kind == OpKind::kEventRecord || op.kind == OpKind::kEventWait) {
    op.event = events_.emplace(info.event, static_cast<std::uint32_t>(events_.size() + 1)).first->second;
  }
  op.issue_ns = static_cast<double>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(info.issued - *first_issue_).count());
  index_.emplace(op.id, ops_.size());
  ops_.push_back(std::move(op));
  ++pending_;
}

void TraceRecorder::on_complete(std::uint64_t op_id, const spyre_dma::Status& status,
                                std::uint64_t device_start_ns, std::uint64_t device_end_ns) {
  std::lock_guard lock(mu_);
  const auto it = index_.find(op_id);
  if (it == index_.end()) return;  // submitted before the recorder saw it
  Op& op = ops_[it->second];
  if (device_start_ns != 0 && device_end_ns >= device_start_ns) {
    op.start_ns = static_cast<double>(device_start_ns);
    op.duration_ns = static_cast<double>(device_end_ns - device_start_ns);
  }
  if (!status.ok()) ++failed_;
  if (pending_ > 0 && --pending_ == 0) cv_.notify_all();
}

void TraceRecorder::on_complete_timed(std::uint64_t op_id, const spyre_dma::Status& status,
                                      const spyre_dma::OpTimes& times) {
  {
    std::lock_guard lock(mu_);
    const auto it = index_.find(op_id);
    if (it != index_.end() && times.host_start_ns != 0 && times.host_end_ns >= times.host_start_ns) {
      ops_[it->second].host_start_ns = static_cast<double>(times.host_start_ns);
      ops_[it->second].host_duration_ns = static_cast<double>(times.host_end_ns - times.host_start_ns);
    }
  }
  on_complete(op_id, status, times.device_start_ns, times.device_end_ns);
}

Trace TraceRecorder::trace(std::chrono::nanoseconds timeout) const {
  std::unique_lock lock(mu_);
  if (!cv_.wait_for(lock, timeout, [&] { return pending_ == 0; })) {
    throw spyre_dma::WaitTimeout("TraceRecorder::trace: " + std::to_string(pending_) +
                                 " ops still not completed");
  }
  Trace t;
  t.header = header_;
  t.header.extra["failed_ops"] = failed_;
  for (const auto& [id, a] : allocs_) t.allocations.push_back(a);
  std::sort(t.allocations.begin(), t.allocations.end(),
            [](const Allocation& a, const Allocation& b) { return a.id < b.id; });
  t.ops = ops_;
  std::sort(t.ops.begin(), t.ops.end(), [](const Op& a, const Op& b) { return a.id < b.id; });
  return t;
}

std::size_t TraceRecorder::ops_seen() const {
  std::lock_guard lock(mu_);
  return ops_.size();
}

std::size_t TraceRecorder::ops_failed() const {
  std::lock_guard lock(mu_);
  return failed_;
}

Header capture_header(const std::string& backend, const spyre_dma::backend::Instance& instance,
                      const nlohmann::json& configuration) {
  Header h;
  h.source = "capture";
  // A simulated device's description names its preset and link; the others go by their backend.
  h.device = instance.clock ? instance.device->describe().name : backend;
  const auto link = configuration.find("link");
  if (link != configuration.end() && link->is_object() && link->contains("generation") && link->contains("lanes"))
    h.link = fmt::format("PCIe Gen{} x{}", (*link)["generation"].get<int>(), (*link)["lanes"].get<int>());
  return h;
}

}  // namespace spyre_dma::traces
