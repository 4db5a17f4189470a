#include "coverage.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace spyre_dma::regress {

const std::vector<BinInfo>& catalogue() {
  static const std::vector<BinInfo> bins{
      {"size.tiny", "a data op of at most 1 KiB"},
      {"size.small", "1 KiB < bytes <= 64 KiB"},
      {"size.medium", "64 KiB < bytes <= 1 MiB"},
      {"size.large", "1 MiB < bytes <= 16 MiB"},
      {"size.huge", "more than 16 MiB"},
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
      {"pipeline.compute", "CBs on the COMPUTE queue"},
      {"pipeline.dmai", "CBs on the DMAI queue"},
      {"pipeline.dmao", "CBs on the DMAO queue"},
      {"pipeline.barrier", "a CB carrying BARRIER (strict ordering across pipelines)"},
      {"pressure.queue_full", "an op waited for a CB ring slot"},
      {"pressure.staging", "an op waited for a staging buffer"},
      {"pressure.device_tags", "the device's read engine waited for a free read tag (sim)"},
      {"pressure.engine_tags", "the engine ran out of tags"},
      {"fault.poisoned", "an injected poisoned TLP"},
      {"fault.unsupported_request", "an injected UR completion"},
      {"fault.completer_abort", "an injected CA completion"},
      {"fault.dropped_completion", "an injected lost completion (completion timeout)"},
      {"fault.lcrc", "an injected LCRC error (replayed)"},
      {"fault.iommu", "an injected IOMMU refusal"},
      {"fault.malformed_cb", "an injected corrupt CB"},
      {"fault.device_reset", "an injected device reset in flight"},
      {"rb.good", "an RB with status Good"},
      {"rb.retry", "an RB with status Retry"},
      {"rb.abend", "an RB with status Abend"},
      {"rb.error", "an RB with status Error"},
      {"error.device_error", "an op failed with kDeviceError"},
      {"error.iommu_fault", "an op failed with kIommuFault"},
      {"error.device_timeout", "an op failed with kDeviceTimeout"},
      {"error.device_fault", "an op failed with kDeviceFault"},
      {"error.cancelled", "an op failed with kCancelled"},
      {"recovery.reset", "the engine was reset after a fault and new work succeeded"},
  };
  return bins;
}

namespace {
bool known(const std::string& bin) {
  const auto& c = catalogue();
  return std::any_of(c.begin(), c.end(), [&](const BinInfo& b) { return bin == b.name; });
}
}  // namespace

void Coverage::hit(const std::string& bin, std::uint64_t n) {
  if (!known(bin)) throw std::invalid_argument("coverage: unknown bin '" + bin + "'");
  bins_[bin] += n;
}

void Coverage::merge(const Coverage& other) {
  for (const auto& [bin, n] : other.bins_) bins_[bin] += n;
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

nlohmann::json Coverage::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const BinInfo& b : catalogue()) j[b.name] = count(b.name);
  return j;
}

Coverage Coverage::from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw std::invalid_argument("coverage: expected an object of bin counts");
  Coverage c;
  for (const auto& [bin, n] : j.items()) {
    if (!known(bin)) throw std::invalid_argument("coverage: unknown bin '" + bin + "'");
    if (!n.is_number_unsigned() && !(n.is_number_integer() && n.get<std::int64_t>() >= 0)) {
      throw std::invalid_argument("coverage: bin '" + bin + "': expected a count, got " + n.dump());
    }
    if (n.get<std::uint64_t>() > 0) c.bins_[bin] = n.get<std::uint64_t>();
  }
  return c;
}

std::string Coverage::table() const {
  std::string out;
  std::string group;
  std::size_t hit_bins = 0;
  for (const BinInfo& b : catalogue()) {
    const std::string name = b.name;
    const std::string g = name.substr(0, name.find('.'));
    if (g != group) {
      out += fmt::format("{}\n", g);
      group = g;
    }
    const std::uint64_t n = count(name);
    hit_bins += n > 0 ? 1 : 0;
    out += fmt::format("  {:<28} {:>12}  {}\n", name, n == 0 ? std::string("HOLE") : std::to_string(n), b.meaning);
  }
  const auto h = holes();
  out += fmt::format("coverage: {} of {} bins hit", hit_bins, catalogue().size());
  if (!h.empty()) {
    out += "; holes:";
    for (const auto& x : h) out += " " + x;
  }
  out += "\n";
  return out;
}

}  // namespace spyre_dma::regress
