// Names of the trace enums and the consistency rules (check_trace).
#include "spyre_dma/traces/trace.hpp"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <utility>

#include "trace_check.hpp"

namespace spyre_dma::traces {

namespace {

constexpr std::array<std::pair<OpKind, const char*>, 8> kOpKindNames{{
    {OpKind::kH2D, "h2d"},
    {OpKind::kD2H, "d2h"},
    {OpKind::kD2D, "d2d"},
    {OpKind::kFill, "fill"},
    {OpKind::kCompute, "compute"},
    {OpKind::kHostCallback, "host_callback"},
    {OpKind::kEventRecord, "event_record"},
    {OpKind::kEventWait, "event_wait"},
}};

constexpr std::array<std::pair<HostMemory, const char*>, 3> kHostNames{{
    {HostMemory::kNone, "none"},
    {HostMemory::kRegistered, "registered"},
    {HostMemory::kPageable, "pageable"},
}};

std::string op_where(const Op& op) { return "op " + std::to_string(op.id) + ": "; }

}  // namespace

const char* to_string(OpKind kind) {
  for (const auto& [k, name] : kOpKindNames) {
    if (k == kind) return name;
  }
  return "?";
}

std::optional<OpKind> parse_op_kind(std::string_view name) {
  for (const auto& [k, n] : kOpKindNames) {
    if (name == n) return k;
  }
  return std::nullopt;
}

const char* to_string(HostMemory host) {
  for (const auto& [h, name] : kHostNames) {
    if (h == host) return name;
  }
  return "?";
}

std::optional<HostMemory> parse_host_memory(std::string_view name) {
  for (const auto& [h, n] : kHostNames) {
    if (name == n) return h;
  }
  return std::nullopt;
}

namespace detail {

CheckFailure TraceChecker::add(const Allocation& a) {
  if (a.id == 0) return {"alloc.id", "allocation id 0 is reserved for 'none'"};
  if (allocs_.count(a.id)) return {"alloc.id", "allocation id " + std::to_string(a.id) + " repeated"};
  if (a.bytes == 0) return {"alloc.bytes", "allocation " + std::to_string(a.id) + ": bytes = 0"};
  if (a.max_chunk_bytes % kOffsetAlign != 0) {
    return {"alloc.max_chunk_bytes", "allocation " + std::to_string(a.id) + ": max_chunk_bytes = " +
                                         std::to_string(a.max_chunk_bytes) + " is not a multiple of 128"};
  }
  if (a.device >= devices_) {
    return {"alloc.device", "allocation " + std::to_string(a.id) + ": device " + std::to_string(a.device) +
                                " is not below the header's devices (" + std::to_string(devices_) + ")"};
  }
  allocs_.emplace(a.id, AllocInfo{a.bytes, a.device});
  return {};
}

CheckFailure TraceChecker::check_range(const char* field, std::uint32_t device, std::uint64_t alloc,
                                       std::uint64_t offset, std::uint64_t bytes) const {
  const std::string f = std::string("op.") + field;
  const auto it = allocs_.find(alloc);
  if (alloc == 0) return {f + "_alloc", "missing (0) for this kind"};
  if (it == allocs_.end()) return {f + "_alloc", "unknown allocation " + std::to_string(alloc)};
  // An op moves data of its own device's memory: a copy between devices is not one device's op.
  if (it->second.device != device) {
    return {f + "_alloc", "allocation " + std::to_string(alloc) + " is on device " +
                              std::to_string(it->second.device) + ", the op on device " + std::to_string(device)};
  }
  if (offset % kOffsetAlign != 0) {
    return {f + "_offset", std::to_string(offset) + " is not a multiple of 128"};
  }
  const std::uint64_t size = it->second.bytes;
  if (offset > size || bytes > size - offset) {
    return {f + "_offset", "range [" + std::to_string(offset) + ", +" + std::to_string(bytes) +
                               ") exceeds the " + std::to_string(size) + "-byte allocation " +
                               std::to_string(alloc)};
  }
  return {};
}

CheckFailure TraceChecker::add(const Op& op) {
  const std::string where = op_where(op);
  if (any_op_ && op.id <= last_op_) {
    return {"op.id", std::to_string(op.id) + " does not increase (previous op " +
                         std::to_string(last_op_) + ")"};
  }
  if (op.device >= devices_) {
    return {"op.device", where + "device " + std::to_string(op.device) + " is not below the header's devices (" +
                             std::to_string(devices_) + ")"};
  }
  const bool host_copy = op.kind == OpKind::kH2D || op.kind == OpKind::kD2H;
  const bool data = host_copy || op.kind == OpKind::kD2D || op.kind == OpKind::kFill;
  if (data && op.bytes == 0) return {"op.bytes", where + "0 bytes for a " + to_string(op.kind)};
  if (!data && op.bytes != 0) {
    return {"op.bytes", where + std::to_string(op.bytes) + " bytes for a " + to_string(op.kind)};
  }
  if (host_copy && op.host == HostMemory::kNone) {
    return {"op.host", where + "a " + std::string(to_string(op.kind)) + " needs registered or pageable"};
  }
  if (!host_copy && op.host != HostMemory::kNone) {
    return {"op.host", where + to_string(op.host) + " for a " + to_string(op.kind)};
  }
  const bool has_dst = op.kind == OpKind::kH2D || op.kind == OpKind::kD2D || op.kind == OpKind::kFill;
  const bool has_src = op.kind == OpKind::kD2H || op.kind == OpKind::kD2D;
  if (has_dst) {
    if (auto f = check_range("dst", op.device, op.dst_alloc, op.dst_offset, op.bytes)) {
      f.message = where + f.message;
      return f;
    }
  } else if (op.dst_alloc != 0 || op.dst_offset != 0) {
    return {"op.dst_alloc", where + "a " + std::string(to_string(op.kind)) + " has no destination"};
  }
  if (has_src) {
    if (auto f = check_range("src", op.device, op.src_alloc, op.src_offset, op.bytes)) {
      f.message = where + f.message;
      return f;
    }
  } else if (op.src_alloc != 0 || op.src_offset != 0) {
    return {"op.src_alloc", where + "a " + std::string(to_string(op.kind)) + " has no source"};
  }
  if (op.kind == OpKind::kD2D && op.src_alloc == op.dst_alloc && op.dst_offset < op.src_offset + op.bytes &&
      op.src_offset < op.dst_offset + op.bytes) {
    return {"op.dst_offset", where + "source and destination ranges overlap"};
  }
  if (op.kind != OpKind::kFill && op.pattern != 0) return {"op.pattern", where + "only fills have a pattern"};
  if (op.kind != OpKind::kCompute && op.compute_ns != 0) {
    return {"op.compute_ns", where + "only compute ops have a duration"};
  }
  const bool evented = op.kind == OpKind::kEventRecord || op.kind == OpKind::kEventWait;
  if (!evented && op.event != 0) return {"op.event", where + "only event_record / event_wait name an event"};
  for (const std::uint64_t dep : op.deps) {
    if (dep >= op.id || !ops_.count(dep)) {
      return {"op.deps", where + "dependency " + std::to_string(dep) + " is not an earlier op"};
    }
  }
  if (op.host_duration_ns && *op.host_duration_ns < 0) {
    return {"op.host_duration_ns", where + "negative duration " + std::to_string(*op.host_duration_ns)};
  }
  if (op.duration_ns && *op.duration_ns < 0) {
    return {"op.duration_ns", where + "negative duration " + std::to_string(*op.duration_ns)};
  }
  // Every captured time must fit the nanosecond clocks a replay converts it to (a 64-bit count):
  // 1e300 would wrap to a negative gap there.
  const std::pair<const char*, const std::optional<double>*> times[] = {
      {"op.issue_ns", &op.issue_ns},           {"op.start_ns", &op.start_ns},
      {"op.duration_ns", &op.duration_ns},     {"op.host_start_ns", &op.host_start_ns},
      {"op.host_duration_ns", &op.host_duration_ns}};
  for (const auto& [field, value] : times) {
    if (*value && !(std::fabs(**value) <= kMaxTraceTimeNs)) {
      return {field, where + "time " + fmt::format("{}", **value) + " ns is beyond the " +
                         fmt::format("{:g}", kMaxTraceTimeNs) + " ns (about 31 years) a trace may span"};
    }
  }
  any_op_ = true;
  last_op_ = op.id;
  ops_.insert(op.id);
  return {};
}

}  // namespace detail

std::string check_trace(const Trace& trace) {
  if (trace.header.version != kFormatVersion) {
    return "header: version " + std::to_string(trace.header.version) + " (this build reads " +
           std::to_string(kFormatVersion) + ")";
  }
  if (trace.header.resolution_ns < 0) return "header: negative resolution_ns";
  if (trace.header.devices == 0) return "header.devices: 0 (a trace has at least one device)";
  detail::TraceChecker checker(trace.header.devices);
  for (const Allocation& a : trace.allocations) {
    if (auto f = checker.add(a)) return f.field + ": " + f.message;
  }
  for (const Op& op : trace.ops) {
    if (auto f = checker.add(op)) return f.field + ": " + f.message;
  }
  return {};
}

}  // namespace spyre_dma::traces
