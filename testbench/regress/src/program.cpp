#include "program.hpp"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace spyre_dma::regress {

const char* to_string(OpType type) noexcept {
  switch (type) {
    case OpType::kH2D: return "h2d";
    case OpType::kD2H: return "d2h";
    case OpType::kD2D: return "d2d";
    case OpType::kFill: return "fill";
    case OpType::kCompute: return "compute";
    case OpType::kHostCallback: return "host_callback";
    case OpType::kRecord: return "record";
    case OpType::kWait: return "wait";
    case OpType::kSync: return "sync";
  }
  return "?";
}

Queue queue_of(OpType type) noexcept {
  switch (type) {
    case OpType::kH2D: case OpType::kD2D: case OpType::kFill: return Queue::kDmai;
    case OpType::kD2H: return Queue::kDmao;
    case OpType::kCompute: return Queue::kCompute;
    default: return Queue::kNone;
  }
}

namespace {

std::string check_host(const Program& p, const OpSpec& op, std::size_t i) {
  if (op.host >= p.host_buffers.size()) {
    return fmt::format("op {} ({}): host buffer {} does not exist ({} declared)", i, to_string(op.type), op.host,
                       p.host_buffers.size());
  }
  const std::uint64_t size = p.host_buffers[op.host].bytes;
  if (op.host_offset > size || op.bytes > size - op.host_offset) {
    return fmt::format("op {} ({}): host range [{}, +{}) exceeds host buffer {} ({} bytes)", i, to_string(op.type),
                       op.host_offset, op.bytes, op.host, size);
  }
  return {};
}

std::string check_dev(const Program& p, const OpSpec& op, std::size_t i, std::uint32_t buf, std::uint64_t offset,
                      const char* role) {
  if (buf >= p.device_buffers.size()) {
    return fmt::format("op {} ({}): {} device buffer {} does not exist ({} declared)", i, to_string(op.type), role,
                       buf, p.device_buffers.size());
  }
  const std::uint64_t size = p.device_buffers[buf].bytes;
  if (offset % hw::kFlitBytes != 0) {
    return fmt::format("op {} ({}): {} offset {} is not a multiple of 128", i, to_string(op.type), role, offset);
  }
  if (offset > size || op.bytes > size - offset) {
    return fmt::format("op {} ({}): {} range [{}, +{}) exceeds device buffer {} ({} bytes)", i, to_string(op.type),
                       role, offset, op.bytes, buf, size);
  }
  return {};
}

}  // namespace

bool stream_orders(const Program& p, std::uint32_t stream, Queue earlier, Queue later) {
  return p.streams[stream].ordering != Ordering::kPipelineFifo || earlier == later;
}

std::vector<SpecTouch> touches(const OpSpec& op) {
  auto host = [&](std::uint64_t off, bool write) { return SpecTouch{true, op.host, off, off + op.bytes, write}; };
  auto dev = [&](std::uint32_t buf, std::uint64_t off, bool write) {
    return SpecTouch{false, buf, off, off + op.bytes, write};
  };
  switch (op.type) {
    case OpType::kH2D: return {host(op.host_offset, false), dev(op.dev, op.dev_offset, true)};
    case OpType::kD2H: return {dev(op.dev, op.dev_offset, false), host(op.host_offset, true)};
    case OpType::kD2D: return {dev(op.src_dev, op.src_offset, false), dev(op.dev, op.dev_offset, true)};
    case OpType::kFill: return {dev(op.dev, op.dev_offset, true)};
    default: return {};
  }
}

std::string check_hazards(const Program& p) {
  struct Seen {
    std::size_t op;
    SpecTouch t;
  };
  std::vector<Seen> writes, reads;
  auto ordered = [&](std::size_t writer, std::size_t reader) {
    if (p.tuning.order_by_footprint) return true;  // the engine orders a read after the write it overlaps
    const std::uint32_t stream = p.ops[reader].stream, ws = p.ops[writer].stream;
    if (ws == stream && stream_orders(p, stream, queue_of(p.ops[writer].type), queue_of(p.ops[reader].type))) return true;
    // An event recorded on the writer's stream after the write, waited on by the reader's stream
    // between the record and the read.
    for (std::size_t r = writer + 1; r < reader; ++r) {
      if (p.ops[r].type != OpType::kRecord || p.ops[r].stream != ws) continue;
      for (std::size_t k = r + 1; k < reader; ++k) {
        if (p.ops[k].type == OpType::kWait && p.ops[k].stream == stream && p.ops[k].event == p.ops[r].event) {
          return true;
        }
      }
    }
    return false;
  };
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    const OpSpec& op = p.ops[i];
    if (op.type == OpType::kSync) {
      writes.clear(), reads.clear();
      continue;
    }
    const std::vector<SpecTouch> ts = touches(op);
    for (const SpecTouch& t : ts) {
      if (t.write) {
        for (const Seen& w : writes) {
          if (w.t.overlaps(t)) return "op " + std::to_string(i) + " writes bytes op " + std::to_string(w.op) + " wrote";
        }
        for (const Seen& r : reads) {
          if (r.t.overlaps(t)) return "op " + std::to_string(i) + " writes bytes op " + std::to_string(r.op) + " read";
        }
      } else {
        for (const Seen& w : writes) {
          if (w.t.overlaps(t) && !ordered(w.op, i)) {
            return "op " + std::to_string(i) + " reads what op " + std::to_string(w.op) + " wrote, unordered";
          }
        }
      }
    }
    for (const SpecTouch& t : ts) (t.write ? writes : reads).push_back(Seen{i, t});
  }
  return {};
}

std::string check_program(const Program& p) {
  if (p.streams.empty()) return "the program declares no stream";
  for (std::size_t b = 0; b < p.host_buffers.size(); ++b) {
    if (p.host_buffers[b].bytes == 0) return fmt::format("host buffer {}: zero bytes", b);
    if (p.host_buffers[b].misalign >= hw::kFlitBytes) {
      return fmt::format("host buffer {}: misalign {} is not below 128", b, p.host_buffers[b].misalign);
    }
  }
  for (std::size_t b = 0; b < p.device_buffers.size(); ++b) {
    if (p.device_buffers[b].bytes == 0) return fmt::format("device buffer {}: zero bytes", b);
    if (p.device_buffers[b].max_chunk_bytes % hw::kFlitBytes != 0) {
      return fmt::format("device buffer {}: max_chunk_bytes {} is not a multiple of 128", b,
                         p.device_buffers[b].max_chunk_bytes);
    }
  }
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    const OpSpec& op = p.ops[i];
    if (op.type == OpType::kSync) continue;
    if (op.stream >= p.streams.size()) {
      return fmt::format("op {} ({}): stream {} does not exist ({} declared)", i, to_string(op.type), op.stream,
                         p.streams.size());
    }
    std::string e;
    switch (op.type) {
      case OpType::kH2D:
      case OpType::kD2H:
        if (op.bytes == 0) return fmt::format("op {} ({}): zero bytes", i, to_string(op.type));
        e = check_host(p, op, i);
        if (e.empty()) e = check_dev(p, op, i, op.dev, op.dev_offset, op.type == OpType::kH2D ? "destination" : "source");
        break;
      case OpType::kD2D:
        if (op.bytes == 0) return fmt::format("op {} ({}): zero bytes", i, to_string(op.type));
        e = check_dev(p, op, i, op.dev, op.dev_offset, "destination");
        if (e.empty()) e = check_dev(p, op, i, op.src_dev, op.src_offset, "source");
        if (e.empty() && op.dev == op.src_dev && op.dev_offset < op.src_offset + op.bytes &&
            op.src_offset < op.dev_offset + op.bytes) {
          e = fmt::format("op {} (d2d): source and destination ranges overlap", i);
        }
        break;
      case OpType::kFill:
        if (op.bytes == 0) return fmt::format("op {} (fill): zero bytes", i);
        e = check_dev(p, op, i, op.dev, op.dev_offset, "destination");
        break;
      case OpType::kRecord:
      case OpType::kWait:
        if (op.event >= p.events) {
          e = fmt::format("op {} ({}): event {} does not exist ({} declared)", i, to_string(op.type), op.event,
                          p.events);
        }
        break;
      case OpType::kCompute:
      case OpType::kHostCallback:
      case OpType::kSync: break;
    }
    if (!e.empty()) return e;
  }
  return {};
}

const std::array<std::pair<const char*, double FaultPlan::*>, 8>& FaultPlan::rates() {
  static const std::array<std::pair<const char*, double FaultPlan::*>, 8> all{{
      {"poisoned_rate", &FaultPlan::poisoned_rate},
      {"unsupported_request_rate", &FaultPlan::unsupported_request_rate},
      {"completer_abort_rate", &FaultPlan::completer_abort_rate},
      {"dropped_completion_rate", &FaultPlan::dropped_completion_rate},
      {"lcrc_rate", &FaultPlan::lcrc_rate},
      {"iommu_fault_rate", &FaultPlan::iommu_fault_rate},
      {"malformed_cb_rate", &FaultPlan::malformed_cb_rate},
      {"device_reset_rate", &FaultPlan::device_reset_rate},
  }};
  return all;
}

nlohmann::json FaultPlan::config_patch() const {
  if (!any()) return nullptr;
  nlohmann::json faults = {{"poisoned_rate", poisoned_rate},
                           {"unsupported_request_rate", unsupported_request_rate},
                           {"completer_abort_rate", completer_abort_rate},
                           {"dropped_completion_rate", dropped_completion_rate},
                           {"iommu_fault_rate", iommu_fault_rate},
                           {"malformed_cb_rate", malformed_cb_rate},
                           {"device_reset_rate", device_reset_rate}};
  if (at_cb > 0) {
    faults["at_cb"] = at_cb;
    faults["at_cb_fault"] = at_cb_fault;
  }
  nlohmann::json patch = {{"faults", faults}};
  if (lcrc_rate > 0) patch["link"] = {{"lcrc_error_rate", lcrc_rate}};
  return patch;
}

}  // namespace spyre_dma::regress
