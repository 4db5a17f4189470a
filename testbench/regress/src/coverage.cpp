#include "coverage.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace spyre_dma::regress {
namespace {

constexpr unsigned kFaultBin = kNeedsFaults | kNeedsModel;

std::vector<BinInfo> build_catalogue() {
  std::vector<BinInfo> b{
      {"size.tiny", "a data op of at most 1 KiB"},
      {"size.small", "1 KiB < bytes <= 64 KiB"},
      {"size.medium", "64 KiB < bytes <= 1 MiB"},
      {"size.large", "1 MiB < bytes <= 16 MiB"},
      {"size.huge", "more than 16 MiB", kNeedsHugeOps},
      {"size.flit_multiple", "a byte count that is a multiple of 128"},
      {"size.partial_flit", "a byte count that is not a multiple of 128"},
      {"cross.host_page", "a host range across a 4 KiB boundary (the PCIe 4 KiB rule)"},
      {"cross.mps", "a D2H host range across an MPS (512 B) boundary"},
      {"cross.mrrs", "an H2D of more than one MRRS (4 KiB) read request"},
      {"cross.chunk", "a device range across a chunk boundary of a multi-chunk allocation"},
      {"cross.max_cb", "an op longer than the engine's CB size (several CBs)"},
      {"dir.h2d", "host to device"},
      {"dir.d2h", "device to host"},
      {"dir.d2d", "device to device"},
      {"dir.fill", "device fill"},
      {"dir.compute", "a timed COMPUTE op"},
      {"dir.host_callback", "a host callback in a stream"},
      {"host.registered", "a copy with registered, aligned host memory (direct DMA)"},
      {"host.pageable", "a copy with pageable host memory (staged)"},
      {"host.unaligned", "a copy whose host address is not 128-byte aligned"},
      {"alloc.single_chunk", "a copy on a one-chunk allocation"},
      {"alloc.multi_chunk", "a copy on a multi-chunk allocation (scatter-gather)"},
      {"stream.strict", "an op on a strict stream"},
      {"stream.op_ordered", "an op on an op-ordered stream"},
      {"stream.pipeline_fifo", "an op on a pipeline-FIFO stream"},
      {"stream.many", "a test with four or more streams"},
      {"event.cross_stream", "a wait on an event recorded by another stream"},
      {"event.same_stream", "a wait on an event recorded by the same stream"},
      {"order.footprint", "two ops of different streams touching the same bytes, ordered by footprint (device timestamps)",
       kNeedsFootprint},
      {"pipeline.compute", "CBs on the COMPUTE queue"},
      {"pipeline.dmai", "CBs on the DMAI queue"},
      {"pipeline.dmao", "CBs on the DMAO queue"},
      {"pipeline.barrier", "a CB carrying BARRIER (strict ordering across pipelines)"},
      {"pressure.queue_full", "an op waited for a CB ring slot"},
      {"pressure.staging", "an op waited for a staging buffer"},
      {"pressure.device_tags", "the device's read engine waited for a free read tag (the SystemC data path counts it)",
       kNeedsModel | kNeedsSystemcPath},
      {"pressure.engine_tags", "the engine ran out of tags", kNeedsNothing,
       "the engine has 32768 tags and at most 3 x 1024 CBs can be in flight (rings of at most 1024 slots)"},
      {"fault.poisoned", "an injected poisoned TLP", kFaultBin},
      {"fault.unsupported_request", "an injected UR completion", kFaultBin},
      {"fault.completer_abort", "an injected CA completion", kFaultBin},
      {"fault.dropped_completion", "an injected lost completion (completion timeout)", kFaultBin},
      {"fault.lcrc", "an injected LCRC error (replayed)", kFaultBin},
      {"fault.iommu", "an injected IOMMU refusal", kFaultBin},
      {"fault.malformed_cb", "an injected corrupt CB", kFaultBin},
      {"fault.device_reset", "an injected device reset in flight", kFaultBin},
      {"rb.good", "an RB with status Good"},
      {"rb.retry", "an RB with status Retry", kNeedsNothing,
       "no backend answers Retry (the status is reserved for a device that asks for a CB again)"},
      {"rb.abend", "an RB with status Abend", kFaultBin},
      {"rb.error", "an RB with status Error", kFaultBin},
      {"error.device_error", "an op failed with kDeviceError", kFaultBin},
      {"error.iommu_fault", "an op failed with kIommuFault", kFaultBin},
      {"error.device_timeout", "an op failed with kDeviceTimeout", kNeedsNothing,
       "only a device that stops answering times a CB out, and the model's faults are all answered in an RB; "
       "the engine suites (Hang.*, Misbehaving.*/stopXanswering) cover it"},
      {"error.device_fault", "an op failed with kDeviceFault", kFaultBin},
      {"error.dependency_failed", "an op failed behind a failed op of its propagating stream (or an event it waited on)",
       kFaultBin},
      {"error.cancelled", "an op failed with kCancelled", kNeedsNothing,
       "only Engine::reset() or closing the engine with work in flight cancels, and which ops are still in "
       "flight then is the host's timing, not the test's; the engine suites (Reset.CancelsInFlightWorkExactlyOnce, Lifetime.*) cover it"},
      {"recovery.reset", "the engine was reset after a fault and new work succeeded", kFaultBin},
  };
  // Op kind x size class x host memory, each on its queue (H2D, D2D and fills on DMAI, D2H on DMAO).
  const char* sizes[] = {"tiny", "small", "medium", "large", "huge"};
  for (const auto& [kind, queue] : {std::pair<const char*, const char*>{"h2d", "DMAI"}, {"d2h", "DMAO"},
                                    {"d2d", "DMAI"}, {"fill", "DMAI"}}) {
    const bool host = std::string(kind) == "h2d" || std::string(kind) == "d2h";
    for (const char* mem : host ? std::vector<const char*>{"registered", "pageable"} : std::vector<const char*>{"device"}) {
      for (const char* size : sizes) {
        b.push_back({fmt::format("xop.{}.{}.{}", kind, size, mem),
                     fmt::format("a {} {} op with {} memory, on {}", size, kind, mem, queue),
                     std::string(size) == "huge" ? kNeedsHugeOps : kNeedsNothing});
      }
    }
  }
  // Fault kind (the RB's error) x queue x recovery: an op that failed so, after which a later op of
  // its stream succeeded (after an engine reset, for a device reset).
  for (const char* kind : {"pcie_error", "completion_timeout", "iommu_fault", "malformed_cb", "reset"}) {
    for (const char* queue : {"dmai", "dmao", "compute"}) {
      BinInfo bin{fmt::format("xfault.{}.{}", kind, queue),
                  fmt::format("an op on {} failed with an RB of error {}, and its stream went on", queue, kind),
                  kFaultBin};
      const std::string k = kind, q = queue;
      if (q == "compute" && k != "malformed_cb" && k != "reset") {
        bin.unreachable = "a COMPUTE CB moves no data: no TLP, no IOMMU check";
      } else if (k == "completion_timeout" && q == "dmao") {
        bin.unreachable = "DMAO writes host memory with posted writes: it issues no read that could time out";
      } else if (k == "pcie_error" && q == "dmao") {
        bin.needs |= kNeedsSystemcPath;  // a poisoned MWr: the RTL never poisons its own writes
      }
      b.push_back(std::move(bin));
    }
  }
  // Stream ordering x event use.
  for (const char* mode : {"strict", "op_ordered", "pipeline_fifo"}) {
    for (const auto& [use, what] : {std::pair<const char*, const char*>{"record", "records an event"},
                                    {"wait_same", "waits on an event it recorded itself"},
                                    {"wait_cross", "waits on an event another stream recorded"}}) {
      b.push_back({fmt::format("xorder.{}.{}", mode, use), fmt::format("a {} stream {}", mode, what)});
    }
  }
  return b;
}

}  // namespace

const std::vector<BinInfo>& catalogue() {
  static const std::vector<BinInfo> bins = build_catalogue();
  return bins;
}

const BinInfo* find_bin(const std::string& name) {
  static const std::map<std::string, const BinInfo*> index = [] {
    std::map<std::string, const BinInfo*> m;
    for (const BinInfo& b : catalogue()) m[b.name] = &b;
    return m;
  }();
  const auto it = index.find(name);
  return it == index.end() ? nullptr : it->second;
}

bool CoverageContext::reaches(const BinInfo& b) const {
  if (b.unreachable) return false;
  return (!(b.needs & kNeedsFaults) || faults) && (!(b.needs & kNeedsModel) || model) &&
         (!(b.needs & kNeedsHugeOps) || huge_ops) && (!(b.needs & kNeedsSystemcPath) || systemc_path) &&
         (!(b.needs & kNeedsFootprint) || footprint);
}

void Coverage::hit(const std::string& bin, std::uint64_t n) {
  if (!find_bin(bin)) throw std::invalid_argument("coverage: unknown bin '" + bin + "'");
  bins_[bin] += n;
}

void Coverage::attribute(const std::string& label, std::uint64_t seed) {
  for (const auto& [bin, n] : bins_) {
    if (n == 0) continue;
    Source& s = sources_[bin];
    s.tests = 1;
    s.seeds[label] = {seed, seed};
  }
}

void Coverage::merge(const Coverage& other) {
  for (const auto& [bin, n] : other.bins_) bins_[bin] += n;
  for (const auto& [bin, src] : other.sources_) {
    Source& s = sources_[bin];
    s.tests += src.tests;
    for (const auto& [label, range] : src.seeds) {
      auto [it, fresh] = s.seeds.emplace(label, range);
      if (!fresh) it->second = {std::min(it->second.first, range.first), std::max(it->second.second, range.second)};
    }
  }
}

std::uint64_t Coverage::count(const std::string& bin) const {
  auto it = bins_.find(bin);
  return it == bins_.end() ? 0 : it->second;
}

std::vector<std::string> Coverage::holes() const {
  std::vector<std::string> out;
  for (const BinInfo& b : catalogue()) {
    if (count(b.name) == 0) out.emplace_back(b.name);
  }
  return out;
}

std::vector<std::string> Coverage::holes(const CoverageContext& context) const {
  std::vector<std::string> out;
  for (const BinInfo& b : catalogue()) {
    if (count(b.name) == 0 && context.reaches(b)) out.emplace_back(b.name);
  }
  return out;
}

nlohmann::json Coverage::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const BinInfo& b : catalogue()) j[b.name] = count(b.name);
  return j;
}

nlohmann::json Coverage::sources_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [bin, s] : sources_) {
    nlohmann::json seeds = nlohmann::json::object();
    for (const auto& [label, range] : s.seeds) seeds[label] = {range.first, range.second};
    j[bin] = {{"tests", s.tests}, {"seeds", seeds}};
  }
  return j;
}

Coverage Coverage::from_json(const nlohmann::json& j, const nlohmann::json& sources) {
  if (!j.is_object()) throw std::invalid_argument("coverage: expected an object of bin counts");
  Coverage c;
  for (const auto& [bin, n] : j.items()) {
    if (!find_bin(bin)) throw std::invalid_argument("coverage: unknown bin '" + bin + "'");
    if (!n.is_number_unsigned() && !(n.is_number_integer() && n.get<std::int64_t>() >= 0)) {
      throw std::invalid_argument("coverage: bin '" + bin + "': expected a count, got " + n.dump());
    }
    if (n.get<std::uint64_t>() > 0) c.bins_[bin] = n.get<std::uint64_t>();
  }
  if (sources.is_null()) return c;
  if (!sources.is_object()) throw std::invalid_argument("coverage sources: expected an object");
  for (const auto& [bin, s] : sources.items()) {
    const std::string at = "coverage sources: bin '" + bin + "'";
    if (!find_bin(bin)) throw std::invalid_argument(at + ": unknown bin");
    if (!s.is_object() || !s.contains("tests") || !s["tests"].is_number_unsigned() || !s.contains("seeds") ||
        !s["seeds"].is_object()) {
      throw std::invalid_argument(at + ": expected {\"tests\": n, \"seeds\": {label: [first, last]}}");
    }
    Source& src = c.sources_[bin];
    src.tests = s["tests"].get<std::uint64_t>();
    for (const auto& [label, range] : s["seeds"].items()) {
      if (!range.is_array() || range.size() != 2 || !range[0].is_number_unsigned() || !range[1].is_number_unsigned()) {
        throw std::invalid_argument(at + ": seeds of '" + label + "': expected [first, last]");
      }
      src.seeds[label] = {range[0].get<std::uint64_t>(), range[1].get<std::uint64_t>()};
    }
  }
  return c;
}

std::string Coverage::table() const {
  std::string out;
  std::string group;
  std::size_t hit_bins = 0;
  for (const BinInfo& b : catalogue()) {
    const std::string g = b.name.substr(0, b.name.find('.'));
    if (g != group) {
      out += fmt::format("{}\n", g);
      group = g;
    }
    const std::uint64_t n = count(b.name);
    hit_bins += n > 0 ? 1 : 0;
    std::string by;
    if (const auto it = sources_.find(b.name); it != sources_.end()) {
      by = fmt::format("{} test(s):", it->second.tests);
      for (const auto& [label, range] : it->second.seeds) {
        by += range.first == range.second ? fmt::format(" {} seed {}", label, range.first)
                                          : fmt::format(" {} seeds {}..{}", label, range.first, range.second);
      }
    }
    out += fmt::format("  {:<34} {:>12}  {:<40} {}\n", b.name,
                       n > 0 ? std::to_string(n) : b.unreachable ? std::string("-") : std::string("HOLE"), by,
                       b.meaning);
  }
  std::vector<std::string> holes, never;
  for (const BinInfo& b : catalogue()) {
    if (count(b.name) > 0) continue;
    if (b.unreachable) {
      never.push_back(b.name + ": " + b.unreachable);
    } else {
      holes.push_back(b.name);
    }
  }
  out += fmt::format("coverage: {} of {} bins hit", hit_bins, catalogue().size());
  if (!holes.empty()) out += "; holes: " + fmt::format("{}", fmt::join(holes, " "));
  out += "\n";
  if (!never.empty()) {
    out += "no regression can hit (docs/regress.md):\n";
    for (const std::string& n : never) out += "  " + n + "\n";
  }
  return out;
}

}  // namespace spyre_dma::regress
