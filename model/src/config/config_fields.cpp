// The field table of SimConfig and the value checks it drives.
#include "config/config_fields.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>

#include "spyre_dma/model/fault_kinds.hpp"
#include "spyre_dma/hw/contract.hpp"
#include "spyre_dma/model/config_loader.hpp"
#include "spyre_dma/device_core/misbehave.hpp"
#include "spyre_dma/hex.hpp"

namespace spyre_dma::model::config {

// A field added to one of these structs must be added to the table below (and so to the loader,
// to_json(), operator== and docs/model-config.md). These sizes are the x86-64 / AArch64 LP64
// layouts; when one fails, add the new field's row to fields() and update the size here.
static_assert(sizeof(void*) != 8 || sizeof(Credits) == 24, "Credits changed: update fields()");
static_assert(sizeof(void*) != 8 || sizeof(LinkConfig) == 104,
              "LinkConfig changed: update fields()");
static_assert(sizeof(void*) != 8 || sizeof(HostConfig) == 64,
              "HostConfig changed: update fields()");
static_assert(sizeof(void*) != 8 || sizeof(DeviceConfig) == 80,
              "DeviceConfig changed: update fields()");
static_assert(sizeof(void*) != 8 || sizeof(HostCostConfig) == 24,
              "HostCostConfig changed: update fields()");
static_assert(sizeof(void*) != 8 || sizeof(SwitchConfig) == 24, "SwitchConfig changed: update fields()");
static_assert(sizeof(void*) != 8 || sizeof(TopologyConfig) == 40, "TopologyConfig changed: update fields()");
static_assert(sizeof(void*) != 8 || sizeof(MisbehaveConfig) == sizeof(std::string) + 24,
              "MisbehaveConfig changed: update fields()");
static_assert(sizeof(void*) != 8 || sizeof(FaultConfig) == 2 * sizeof(std::string) + 96,
              "FaultConfig changed: update fields()");
static_assert(sizeof(void*) != 8 || sizeof(NicConfig) == 40, "NicConfig changed: update fields()");
static_assert(sizeof(void*) != 8 || sizeof(NetworkConfig) == 2 * sizeof(std::string) + 88,
              "NetworkConfig changed: update fields()");
static_assert(sizeof(void*) != 8 || sizeof(SimConfig) == 5 * sizeof(std::string) + 520,
              "SimConfig changed: update fields()");

const char* type_name(ValueType type) {
  switch (type) {
    case ValueType::kBool: return "bool";
    case ValueType::kUint32: return "uint32";
    case ValueType::kUint64: return "uint64";
    case ValueType::kDouble: return "double";
    case ValueType::kString: return "string";
  }
  return "?";
}

// ---------------------------------------------------------------------------------------------
// Rules
// ---------------------------------------------------------------------------------------------
Rule any() { return Rule{}; }
Rule int_range(std::uint64_t lo, std::uint64_t hi) {
  Rule r;
  r.kind = Rule::Kind::kIntRange;
  r.ilo = lo;
  r.ihi = hi;
  return r;
}
Rule pow2(std::uint64_t lo, std::uint64_t hi) {
  Rule r = int_range(lo, hi);
  r.kind = Rule::Kind::kPow2;
  return r;
}
Rule multiple_of(std::uint64_t step, std::uint64_t lo, std::uint64_t hi) {
  Rule r = int_range(lo, hi);
  r.kind = Rule::Kind::kMultiple;
  r.step = step;
  return r;
}
Rule one_of(std::vector<std::uint64_t> values) {
  Rule r;
  r.kind = Rule::Kind::kOneOf;
  r.values = std::move(values);
  return r;
}
Rule mask(std::uint64_t bits) {
  Rule r;
  r.kind = Rule::Kind::kMask;
  r.step = bits;
  return r;
}
Rule non_negative() {
  Rule r;
  r.kind = Rule::Kind::kRealRange;
  r.rlo = 0.0;
  r.rhi = std::numeric_limits<double>::infinity();
  return r;
}
// A time the model adds per TLP, per CB or per register write: at most 1000 s. Past that it is no
// device, and such times summed over a run could not be kept in the model's 64-bit picoseconds.
constexpr double kLongestCostNs = 1e12;
Rule duration_ns() {
  Rule r = non_negative();
  r.rhi = kLongestCostNs;
  return r;
}
Rule positive_duration_ns() {
  Rule r = duration_ns();
  r.lo_open = true;
  return r;
}
// A bandwidth: 1 MB/s to 1 PB/s. Slower would make one TLP take longer than any time above.
Rule bandwidth_gbps() {
  Rule r = non_negative();
  r.rlo = 1e-3;
  r.rhi = 1e6;
  return r;
}
// The same, or 0 for "no limit".
Rule bandwidth_or_zero_gbps() {
  Rule r = bandwidth_gbps();
  r.or_zero = true;
  return r;
}
// A root port carries at least one direction of its link and at most both: [1, 2], or 0 for
// "no limit".
Rule root_port_ratio() {
  Rule r = non_negative();
  r.rlo = 1.0;
  r.rhi = 2.0;
  r.or_zero = true;
  return r;
}
Rule unit_interval() {
  Rule r = non_negative();
  r.rhi = 1.0;
  return r;
}
Rule names(std::vector<std::string> names) {
  Rule r;
  r.kind = Rule::Kind::kNames;
  r.names = std::move(names);
  return r;
}

namespace {

std::string join_quoted(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += (i + 1 == names.size()) ? " or " : ", ";
    out += '"' + names[i] + '"';
  }
  return out;
}

// 1 -> "1", 0.5 -> "0.5".
std::string real_text(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
  return nlohmann::json(v).dump();
}

}  // namespace

std::string describe(const Rule& rule, ValueType type) {
  using K = Rule::Kind;
  switch (rule.kind) {
    case K::kAny:
      switch (type) {
        case ValueType::kBool: return "true or false";
        case ValueType::kUint32:
          return "0.." + std::to_string(std::numeric_limits<std::uint32_t>::max());
        case ValueType::kUint64:
          return "0.." + std::to_string(std::numeric_limits<std::uint64_t>::max());
        case ValueType::kDouble: return "any number";
        case ValueType::kString: return "any string";
      }
      return "any";
    case K::kIntRange: return std::to_string(rule.ilo) + ".." + std::to_string(rule.ihi);
    case K::kPow2:
      return std::to_string(rule.ilo) + ".." + std::to_string(rule.ihi) + ", power of two";
    case K::kMultiple:
      return std::to_string(rule.ilo) + ".." + std::to_string(rule.ihi) + ", multiple of " +
             std::to_string(rule.step);
    case K::kOneOf: {
      std::string out = "one of ";
      for (std::size_t i = 0; i < rule.values.size(); ++i)
        out += (i ? ", " : "") + std::to_string(rule.values[i]);
      return out;
    }
    case K::kMask: return "0.." + hex(rule.step) + ", no bits outside " + hex(rule.step);
    case K::kRealRange: {
      if (std::isinf(rule.rhi)) return rule.lo_open ? "> 0" : ">= 0";
      if (rule.lo_open) return "> " + real_text(rule.rlo) + ", <= " + real_text(rule.rhi);
      return std::string(rule.or_zero ? "0, or " : "") + real_text(rule.rlo) + ".." + real_text(rule.rhi);
    }
    case K::kNames: return join_quoted(rule.names);
  }
  return "?";
}

namespace {

bool allows_int(const Rule& rule, std::uint64_t v) {
  using K = Rule::Kind;
  switch (rule.kind) {
    case K::kAny: return true;
    case K::kIntRange: return v >= rule.ilo && v <= rule.ihi;
    case K::kPow2: return v >= rule.ilo && v <= rule.ihi && (v & (v - 1)) == 0;
    case K::kMultiple: return v >= rule.ilo && v <= rule.ihi && v % rule.step == 0;
    case K::kOneOf:
      return std::find(rule.values.begin(), rule.values.end(), v) != rule.values.end();
    case K::kMask: return (v & ~rule.step) == 0;
    default: return false;
  }
}

bool allows_real(const Rule& rule, double v) {
  if (rule.kind == Rule::Kind::kAny) return std::isfinite(v);
  if (!std::isfinite(v)) return false;
  if (rule.or_zero && v == 0.0) return true;
  if (rule.lo_open ? !(v > rule.rlo) : !(v >= rule.rlo)) return false;
  return v <= rule.rhi;
}

// How a wrong value is shown: strings with their quotes and the word "string".
std::string shown(const nlohmann::json& v) {
  if (v.is_string()) return "string " + v.dump();
  if (v.is_object()) return "an object";
  if (v.is_array()) return "an array";
  return v.dump();
}

std::string out_of_range(const nlohmann::json& v, const Field& f) {
  return v.dump() + " is out of range (allowed: " + describe(f.rule, f.type) + ")";
}

}  // namespace

std::optional<std::string> check_value(const Field& f, const nlohmann::json& v) {
  switch (f.type) {
    case ValueType::kBool:
      if (!v.is_boolean()) return "expected true or false, got " + shown(v);
      return std::nullopt;
    case ValueType::kUint32:
    case ValueType::kUint64: {
      if (v.is_number_float()) return "expected an integer, got " + shown(v);
      if (!v.is_number_integer()) return "expected an unsigned integer, got " + shown(v);
      // Parsed text stores non-negative integers as unsigned; json built in C++ from an int
      // holds a signed one.
      if (!v.is_number_unsigned() && v.get<std::int64_t>() < 0) return out_of_range(v, f);
      const auto u = v.get<std::uint64_t>();
      if (f.type == ValueType::kUint32 && u > std::numeric_limits<std::uint32_t>::max())
        return out_of_range(v, f);
      if (!allows_int(f.rule, u)) return out_of_range(v, f);
      return std::nullopt;
    }
    case ValueType::kDouble:
      if (!v.is_number()) return "expected a number, got " + shown(v);
      if (!allows_real(f.rule, v.get<double>())) return out_of_range(v, f);
      return std::nullopt;
    case ValueType::kString: {
      if (!v.is_string()) return "expected a string, got " + shown(v);
      if (f.rule.kind != Rule::Kind::kNames) return std::nullopt;
      const auto s = v.get<std::string>();
      if (std::find(f.rule.names.begin(), f.rule.names.end(), s) != f.rule.names.end())
        return std::nullopt;
      std::string msg = v.dump() + " is not allowed (allowed: " + describe(f.rule, f.type) + ")";
      std::size_t best = std::string::npos;
      std::string hint;
      for (const auto& n : f.rule.names) {
        const auto d = edit_distance(s, n);
        if (d < best) best = d, hint = n;
      }
      if (best <= std::max<std::size_t>(2, s.size() / 3))
        msg += " (did you mean \"" + hint + "\"?)";
      return msg;
    }
  }
  return "unsupported type";
}

// ---------------------------------------------------------------------------------------------
// The table
// ---------------------------------------------------------------------------------------------
namespace {

const char* fidelity_name(Fidelity f) { return f == Fidelity::kBurst ? "burst" : "tlp"; }

template <class T>
constexpr ValueType value_type_of() {
  if constexpr (std::is_same_v<T, bool>)
    return ValueType::kBool;
  else if constexpr (std::is_same_v<T, std::uint32_t>)
    return ValueType::kUint32;
  else if constexpr (std::is_same_v<T, std::uint64_t>)
    return ValueType::kUint64;
  else if constexpr (std::is_same_v<T, double>)
    return ValueType::kDouble;
  else
    return ValueType::kString;  // std::string, Fidelity and DataPathKind
}

// `access` is a generic lambda returning a reference to the field of a (const or not) SimConfig.
template <class Access>
Field field(std::string path, Access access, Rule rule, std::string unit, std::string doc) {
  using T = std::remove_reference_t<decltype(access(std::declval<SimConfig&>()))>;
  Field f;
  f.path = std::move(path);
  f.type = value_type_of<T>();
  f.rule = std::move(rule);
  f.unit = std::move(unit);
  f.doc = std::move(doc);
  if constexpr (std::is_same_v<T, DataPathKind>) {
    f.get = [access](const SimConfig& c) { return nlohmann::json(model::to_string(access(c))); };
    f.put = [access](SimConfig& c, const nlohmann::json& v) {
      access(c) = v.get<std::string>() == "rtl" ? DataPathKind::kRtl : DataPathKind::kSystemC;
    };
  } else if constexpr (std::is_same_v<T, Fidelity>) {
    f.get = [access](const SimConfig& c) { return nlohmann::json(fidelity_name(access(c))); };
    f.put = [access](SimConfig& c, const nlohmann::json& v) {
      access(c) = v.get<std::string>() == "burst" ? Fidelity::kBurst : Fidelity::kTlp;
    };
  } else {
    f.get = [access](const SimConfig& c) { return nlohmann::json(access(c)); };
    f.put = [access](SimConfig& c, const nlohmann::json& v) { access(c) = v.get<T>(); };
  }
  return f;
}

#define SPYRE_FIELD(expr) \
  [](auto& c) -> auto& { return c.expr; }

void add_credits(std::vector<Field>& out, const std::string& side, const std::string& who,
                 Credits LinkConfig::*member) {
  struct Kind {
    const char* key;
    std::uint32_t Credits::*m;
    const char* unit;
    const char* what;
  };
  static const Kind kinds[] = {
      {"posted_header", &Credits::posted_header, "TLPs", "posted header credits (one per MWr)"},
      {"posted_data", &Credits::posted_data, "16 B", "posted data credits (16 bytes each)"},
      {"nonposted_header", &Credits::nonposted_header, "TLPs",
       "non-posted header credits (one per MRd)"},
      {"nonposted_data", &Credits::nonposted_data, "16 B",
       "non-posted data credits (16 bytes each)"},
      {"completion_header", &Credits::completion_header, "TLPs",
       "completion header credits (one per CplD)"},
      {"completion_data", &Credits::completion_data, "16 B",
       "completion data credits (16 bytes each)"},
  };
  for (const auto& k : kinds) {
    auto access = [ member, m = k.m ](auto& c) -> auto& { return (c.link.*member).*m; };
    out.push_back(
        field("link." + side + "." + k.key, access, any(), k.unit,
              std::string("Initial ") + k.what + " " + who + " advertises; 0: infinite."));
  }
}

std::vector<Field> build_fields() {
  std::vector<Field> f;
  f.push_back(field("preset", SPYRE_FIELD(preset), names(preset_names()), "",
                    "Base preset. Every key a file omits takes this preset's value; a resolved "
                    "configuration names the preset it started from."));

  // --- link ------------------------------------------------------------------------------
  f.push_back(field("link.generation", SPYRE_FIELD(link.generation), int_range(1, 5), "",
                    "PCIe generation: 2.5, 5, 8, 16 or 32 GT/s per lane; 8b/10b encoding for "
                    "Gen1-2, 128b/130b for Gen3-5."));
  f.push_back(field("link.lanes", SPYRE_FIELD(link.lanes), one_of({1, 2, 4, 8, 16, 32}),
                    "lanes", "Negotiated link width."));
  f.push_back(field("link.mps", SPYRE_FIELD(link.mps), pow2(128, 4096), "bytes",
                    "Max Payload Size: the largest data payload of one MWr or CplD TLP."));
  f.push_back(field("link.mrrs", SPYRE_FIELD(link.mrrs), pow2(128, 4096), "bytes",
                    "Max Read Request Size: the largest byte count of one MRd."));
  f.push_back(field("link.rcb", SPYRE_FIELD(link.rcb), one_of({64, 128}), "bytes",
                    "Read Completion Boundary: completions of a read may be split at multiples "
                    "of it."));
  f.push_back(field("link.ecrc", SPYRE_FIELD(link.ecrc), any(), "",
                    "End-to-end CRC: 4 more bytes on every TLP."));
  f.push_back(field("link.addr64", SPYRE_FIELD(link.addr64), any(), "",
                    "64-bit addressing: 16-byte MRd/MWr headers (12 bytes when false)."));
  f.push_back(field("link.dllp_overhead", SPYRE_FIELD(link.dllp_overhead), any(), "",
                    "Charge ACK and UpdateFC DLLPs and SKP ordered sets on the wire."));
  f.push_back(field("link.latency_ns", SPYRE_FIELD(link.latency_ns), duration_ns(), "ns",
                    "One-way latency of the link in each direction: PHY, wire and data-link "
                    "layer."));
  add_credits(f, "device_rx", "the device's receiver (host -> device traffic)",
              &LinkConfig::device_rx);
  add_credits(f, "host_rx", "the root complex (device -> host traffic)", &LinkConfig::host_rx);
  f.push_back(field("link.credit_update_ns", SPYRE_FIELD(link.credit_update_ns), duration_ns(),
                    "ns",
                    "From a TLP's arrival at a receiver until its credits are back at the "
                    "sender."));
  f.push_back(field("link.lcrc_error_rate", SPYRE_FIELD(link.lcrc_error_rate), unit_interval(),
                    "per TLP",
                    "Probability that a TLP arrives with a bad LCRC and is replayed "
                    "(timing only: data is never corrupted)."));
  f.push_back(field("link.replay_ns", SPYRE_FIELD(link.replay_ns), duration_ns(), "ns",
                    "Replay timer: the extra delay of a replayed TLP."));

  // --- host ------------------------------------------------------------------------------
  f.push_back(field("host.memory_latency_ns", SPYRE_FIELD(host.memory_latency_ns), duration_ns(),
                    "ns", "Host DRAM read latency behind the root complex."));
  f.push_back(field("host.root_complex_ns", SPYRE_FIELD(host.root_complex_ns), duration_ns(), "ns",
                    "Root-complex processing of one read request (completer side)."));
  f.push_back(field("host.iommu_ns", SPYRE_FIELD(host.iommu_ns), duration_ns(), "ns",
                    "Translation cost added per TLP; 0: IOMMU off or every lookup an IOTLB hit."));
  f.push_back(field("host.memory_gbps", SPYRE_FIELD(host.memory_gbps), bandwidth_gbps(), "GB/s",
                    "Host memory bandwidth available to DMA reads and the CPU's staging copies, shared "
                    "by every device."));
  f.push_back(field("host.memory_write_gbps", SPYRE_FIELD(host.memory_write_gbps), bandwidth_or_zero_gbps(),
                    "GB/s",
                    "Host memory's rate for the devices' posted writes, which then share memory's time "
                    "with the reads and staging copies; a write's posted credits come back once it is "
                    "in memory. 0: posted writes are absorbed by the root complex's write buffers and "
                    "take no memory time."));
  f.push_back(field("host.root_port_ratio", SPYRE_FIELD(host.root_port_ratio), root_port_ratio(), "x raw",
                    "What one root port carries between its link and the host, read completion data and "
                    "posted write data together, as a multiple of its link's raw rate in one direction "
                    "(1 to 2; its share of the root complex's fabric). 0: no limit beyond the link's "
                    "rate in each direction."));
  f.push_back(field("host.iotlb_entries", SPYRE_FIELD(host.iotlb_entries), int_range(0, 1u << 20), "pages",
                    "Translations the IOMMU's IOTLB holds per device, least recently used out first; a "
                    "TLP on a page it does not hold waits host.iotlb_miss_ns. 0: no IOTLB modelled "
                    "(host.iommu_ns is the whole translation cost)."));
  f.push_back(field("host.iotlb_page_bytes", SPYRE_FIELD(host.iotlb_page_bytes), pow2(4096, 1u << 30), "bytes",
                    "Page size of the IOMMU's mappings: one IOTLB entry covers one page."));
  f.push_back(field("host.iotlb_miss_ns", SPYRE_FIELD(host.iotlb_miss_ns), duration_ns(), "ns",
                    "Page walk of an IOTLB miss, added to the TLP that missed."));

  // --- device ----------------------------------------------------------------------------
  static const char* const kPipelines[] = {"compute", "dmai", "dmao"};
  static const char* const kRegisters[] = {"DEPTH_COMPUTE", "DEPTH_DMAI", "DEPTH_DMAO"};
  for (std::size_t p = 0; p < 3; ++p) {
    auto access = [p](auto& c) -> auto& { return c.device.depth[p]; };
    f.push_back(
        field(std::string("device.depth.") + kPipelines[p], access, pow2(1, hw::kMaxTag), "CBs",
              std::string("Depth of the ") + kPipelines[p] +
                  " pipeline: the largest CB ring it accepts (" + kRegisters[p] + " register)."));
  }
  f.push_back(field("device.max_cb_bytes", SPYRE_FIELD(device.max_cb_bytes),
                    multiple_of(128, 128, 0xFFFFFF80u), "bytes",
                    "Largest byte count one CB may move (MAX_CB_BYTES register, 32 bits)."));
  f.push_back(field("device.read_tags", SPYRE_FIELD(device.read_tags), int_range(1, 1024), "tags",
                    "Outstanding MRd requests of the DMAI read engine (8-bit tags: 256; the "
                    "10-bit tag space: 1024)."));
  f.push_back(field("device.cb_prefetch", SPYRE_FIELD(device.cb_prefetch),
                    int_range(1, hw::kMaxTag), "CBs",
                    "CBs the controller fetches ahead per "
                    "pipeline."));
  f.push_back(field("device.cb_overhead_ns", SPYRE_FIELD(device.cb_overhead_ns), duration_ns(),
                    "ns", "Controller work per CB: decode, XLAT, RB build."));
  f.push_back(field("device.dma_engine_gbps", SPYRE_FIELD(device.dma_engine_gbps), bandwidth_or_zero_gbps(),
                    "GB/s", "The device's own DMA data-path limit; 0: no limit beyond the link."));
  f.push_back(field("device.dram_gbps", SPYRE_FIELD(device.dram_gbps), bandwidth_gbps(), "GB/s",
                    "Device memory (LPDDR5) bandwidth into the on-chip ring."));
  f.push_back(field("device.dram_latency_ns", SPYRE_FIELD(device.dram_latency_ns), duration_ns(),
                    "ns", "Device memory access latency."));
  constexpr std::uint64_t kAddressable = 8ull * (16ull << 30);  // 8 segments of 16 GiB
  f.push_back(field("device.memory_bytes", SPYRE_FIELD(device.memory_bytes),
                    multiple_of(128, 128, kAddressable), "bytes",
                    "Installed device memory (DEVICE_MEM_BYTES); at most 8 segments x 16 GiB."));
  f.push_back(field("device.usable_bytes", SPYRE_FIELD(device.usable_bytes),
                    multiple_of(128, 128, kAddressable), "bytes",
                    "Usable device memory (DEVICE_MEM_USABLE); at most device.memory_bytes."));
  f.push_back(field("device.capabilities", SPYRE_FIELD(device.capabilities),
                    mask(hw::kCapFill | hw::kCapDeviceCopy | hw::kCapCompute | hw::kCapTimestamps),
                    "bits",
                    "CAPABILITIES register: 1 fill, 2 device copy, 4 compute, 8 "
                    "timestamps."));

  // --- host_cost -------------------------------------------------------------------------
  f.push_back(field("host_cost.register_write_ns", SPYRE_FIELD(host_cost.register_write_ns),
                    duration_ns(), "ns",
                    "Simulated time from the engine issuing a register write (doorbell) until "
                    "it reaches the device."));
  f.push_back(field("host_cost.interrupt_ns", SPYRE_FIELD(host_cost.interrupt_ns), duration_ns(),
                    "ns",
                    "Simulated time from the MSI-X write until the engine's wait "
                    "returns."));
  f.push_back(field("host_cost.staging_gbps", SPYRE_FIELD(host_cost.staging_gbps), bandwidth_or_zero_gbps(),
                    "GB/s",
                    "Host memcpy bandwidth into and out of staging buffers (pageable copies): "
                    "the next register write after a staged piece of N bytes takes effect "
                    "N / staging_gbps ns later; 0: staging copies take no simulated time. The "
                    "default is the rate fitted to the public A100 profile in traces/data/ "
                    "(docs/traces.md, Calibrate)."));

  // --- topology --------------------------------------------------------------------------
  f.push_back(field("topology.devices", SPYRE_FIELD(topology.devices), int_range(1, 16), "devices",
                    "Devices of the simulated server, numbered from 0. They share the root complex "
                    "and host memory (host.*); each has its own link (link.*)."));
  f.push_back(field("topology.devices_per_switch", SPYRE_FIELD(topology.devices_per_switch), int_range(0, 16),
                    "devices",
                    "Consecutive devices behind one PCIe switch, which shares its uplink among them; "
                    "0: no switches, every device on a root port of its own."));
  f.push_back(field("topology.switches_per_root_port", SPYRE_FIELD(topology.switches_per_root_port),
                    int_range(1, 16), "switches",
                    "Consecutive switches on one root port: more than 1 puts them under a parent switch "
                    "(of the same part) whose uplink takes the root port."));
  f.push_back(field("topology.switches.generation", SPYRE_FIELD(topology.switches.generation), int_range(1, 5), "",
                    "PCIe generation of each switch's uplink."));
  f.push_back(field("topology.switches.lanes", SPYRE_FIELD(topology.switches.lanes), one_of({1, 2, 4, 8, 16, 32}),
                    "lanes", "Width of each switch's uplink."));
  f.push_back(field("topology.switches.latency_ns", SPYRE_FIELD(topology.switches.latency_ns), duration_ns(), "ns",
                    "One-way latency of each switch's uplink: PHY, wire and data-link layer."));
  f.push_back(field("topology.switches.forward_ns", SPYRE_FIELD(topology.switches.forward_ns), duration_ns(), "ns",
                    "A TLP's latency through a switch, ingress to egress port (cut-through)."));

  // --- network ---------------------------------------------------------------------------
  f.push_back(field("network.nodes", SPYRE_FIELD(network.nodes), int_range(1, 64), "nodes",
                    "Nodes of a simulated cluster (SimCluster), each a server of topology.* with one "
                    "NIC (network.nic.*), in one simulation; 1: a single server, no network."));
  f.push_back(field("network.protocol", SPYRE_FIELD(network.protocol), names({"infiniband", "roce_v2"}), "",
                    "The headers each packet carries: \"infiniband\" (LRH 8, BTH 12, ICRC 4, VCRC 2 "
                    "bytes; RETH 16 on a request's first packet); \"roce_v2\" (Ethernet 14, IPv4 20, "
                    "UDP 8, BTH 12, ICRC 4, FCS 4, preamble and inter-frame gap 20; RETH the same)."));
  f.push_back(field("network.gbps", SPYRE_FIELD(network.gbps), bandwidth_gbps(), "Gb/s",
                    "Data rate of every network port, after line coding (NDR InfiniBand and 400GbE: "
                    "400)."));
  f.push_back(field("network.mtu", SPYRE_FIELD(network.mtu), pow2(256, 4096), "bytes",
                    "Payload bytes per packet; a message is cut into packets of this size."));
  f.push_back(field("network.latency_ns", SPYRE_FIELD(network.latency_ns), duration_ns(), "ns",
                    "One-way latency of one cable, NIC port to switch port (or NIC to NIC): PHY, "
                    "FEC and wire."));
  f.push_back(field("network.fabric", SPYRE_FIELD(network.fabric), names({"switch", "back_to_back"}), "",
                    "\"switch\": every NIC on a port of one network switch; \"back_to_back\": two "
                    "nodes cabled NIC to NIC."));
  f.push_back(field("network.switch_latency_ns", SPYRE_FIELD(network.switch_latency_ns), duration_ns(), "ns",
                    "A packet's latency through the network switch, ingress to egress (cut-through)."));
  f.push_back(field("network.switch_buffer_bytes", SPYRE_FIELD(network.switch_buffer_bytes),
                    int_range(8192, 1u << 30), "bytes",
                    "Buffer of each egress port of the network switch: the link-level credits "
                    "(InfiniBand) or the PFC threshold (RoCE) that hold a sender back when the port "
                    "is congested."));
  f.push_back(field("network.nic.generation", SPYRE_FIELD(network.nic.generation), int_range(1, 5), "",
                    "PCIe generation of each NIC's link."));
  f.push_back(field("network.nic.lanes", SPYRE_FIELD(network.nic.lanes), one_of({1, 2, 4, 8, 16}), "lanes",
                    "Width of each NIC's PCIe link."));
  f.push_back(field("network.nic.tx_ns", SPYRE_FIELD(network.nic.tx_ns), duration_ns(), "ns",
                    "The NIC's send pipeline: from the doorbell's arrival until its first packet is "
                    "ready for the wire (work request decode, scheduling), data reads apart."));
  f.push_back(field("network.nic.rx_ns", SPYRE_FIELD(network.nic.rx_ns), duration_ns(), "ns",
                    "The NIC's receive pipeline: from a packet's last byte in until its PCIe write "
                    "(or its reply) leaves."));
  f.push_back(field("network.nic.max_inline_bytes", SPYRE_FIELD(network.nic.max_inline_bytes), int_range(0, 1024),
                    "bytes",
                    "Puts up to this size carry their data with the doorbell (inline): the NIC reads "
                    "no host memory for them."));
  f.push_back(field("network.nic.timeout_us", SPYRE_FIELD(network.nic.timeout_us), positive_duration_ns(), "us",
                    "A transfer whose peer does not answer this long fails (peer unreachable)."));

  // --- faults ----------------------------------------------------------------------------
  f.push_back(field("faults.poisoned_rate", SPYRE_FIELD(faults.poisoned_rate), unit_interval(),
                    "per TLP",
                    "Probability that a data TLP is poisoned (EP): a DMAI read completion arrives "
                    "poisoned, or a DMAO write leaves poisoned and the root complex drops its "
                    "data. The CB ends in Error, kind PCIe error, detail the TLP's IOVA."));
  f.push_back(field("faults.unsupported_request_rate", SPYRE_FIELD(faults.unsupported_request_rate),
                    unit_interval(), "per MRd",
                    "Probability that a DMAI read request is answered with an Unsupported Request "
                    "completion (no data): PCIe error."));
  f.push_back(field("faults.completer_abort_rate", SPYRE_FIELD(faults.completer_abort_rate),
                    unit_interval(), "per MRd",
                    "Probability that a DMAI read request is answered with a Completer Abort "
                    "completion (no data): PCIe error."));
  f.push_back(field("faults.dropped_completion_rate", SPYRE_FIELD(faults.dropped_completion_rate),
                    unit_interval(), "per MRd",
                    "Probability that no completion comes for a DMAI read request: its tag stays "
                    "held until faults.completion_timeout_ns expires, then completion timeout."));
  f.push_back(field("faults.completion_timeout_ns", SPYRE_FIELD(faults.completion_timeout_ns),
                    positive_duration_ns(), "ns",
                    "The read engine's completion timer, from a read request's issue."));
  f.push_back(field("faults.iommu_fault_rate", SPYRE_FIELD(faults.iommu_fault_rate),
                    unit_interval(), "per CB",
                    "Probability that the IOMMU refuses a host-memory CB's (H2D, D2H) translation: "
                    "IOMMU fault, nothing moved."));
  f.push_back(field("faults.malformed_cb_rate", SPYRE_FIELD(faults.malformed_cb_rate),
                    unit_interval(), "per CB",
                    "Probability that a fetched CB arrives with its reserved word (RSVD) corrupted: "
                    "malformed CB, its RB still names the tag."));
  f.push_back(field("faults.device_reset_rate", SPYRE_FIELD(faults.device_reset_rate),
                    unit_interval(), "per CB",
                    "Probability that the device resets itself as a CB starts: every CB fetched "
                    "and not retired gets an Abend RB (kind reset), then STATUS reads FATAL until "
                    "the host writes CONTROL.RESET."));
  f.push_back(field("faults.at_cb", SPYRE_FIELD(faults.at_cb), any(), "CBs",
                    "One deterministic fault, of kind faults.at_cb_fault, at the n-th CB the "
                    "controller starts (1-based, all pipelines in execution order); 0: none. A "
                    "kind that does not apply to that CB moves to the next CB it applies to."));
  {
    std::vector<std::string> kinds{std::string(kNoFault)};
    for (std::string_view k : kFaultKindNames) kinds.emplace_back(k);
    f.push_back(field("faults.at_cb_fault", SPYRE_FIELD(faults.at_cb_fault), names(kinds), "",
                      "Kind of the fault at faults.at_cb: TLP kinds hit the CB's first TLP "
                      "(\"poisoned\", \"lcrc\": H2D or D2H; \"unsupported_request\", "
                      "\"completer_abort\", \"dropped_completion\": H2D only); \"iommu\": "
                      "H2D or D2H; \"malformed_cb\", \"device_reset\": any CB."));
  }

  {
    std::vector<std::string> kinds;
    for (std::string_view k : device_core::kMisbehaveKindNames) kinds.emplace_back(k);
    f.push_back(field("faults.misbehave.kind", SPYRE_FIELD(faults.misbehave.kind), names(kinds), "",
                      "A contract violation the device commits once, at faults.misbehave.at_cb "
                      "(see spyre_dma/device_core/misbehave.hpp): RBs with unknown, repeated or stale "
                      "tags, a garbage status, an RB on a queue with nothing outstanding, RB_PI "
                      "beyond the ring, CB_CI moving back, no more answers, DMA to rogue_iova / "
                      "rogue_device_offset, or one RB never written (drop_rb)."));
  }
  f.push_back(field("faults.misbehave.at_cb", SPYRE_FIELD(faults.misbehave.at_cb), any(), "CBs",
                    "The CB (1-based, all pipelines in execution order) faults.misbehave.kind "
                    "happens at; 0: never."));
  f.push_back(field("faults.misbehave.rogue_iova", SPYRE_FIELD(faults.misbehave.rogue_iova),
                    multiple_of(hw::kFlitBytes, 0, 1ull << 63), "bytes",
                    "rogue_dma: the host IOVA the CB's host DMA goes to instead; 0: the CB's own."));
  f.push_back(field("faults.misbehave.rogue_device_offset",
                    SPYRE_FIELD(faults.misbehave.rogue_device_offset),
                    multiple_of(hw::kFlitBytes, 0, hw::kSegmentBytes), "bytes",
                    "rogue_dma: bytes added to the CB's device VA; 0: none."));

  // --- run -------------------------------------------------------------------------------
  f.push_back(field("fidelity", SPYRE_FIELD(fidelity), names({"tlp", "burst"}), "",
                    "\"tlp\": every TLP is a timed transaction; \"burst\": the same arithmetic "
                    "applied per burst (faster)."));
  f.push_back(field("data_path", SPYRE_FIELD(data_path), names({"systemc", "rtl"}), "",
                    "The DMA controller's data path: \"systemc\", the model's own; \"rtl\": the DMAI "
                    "and DMAO data paths as verilated RTL (rtl_bridge/; TLP fidelity; the RTL never "
                    "poisons its own writes)."));
  f.push_back(field("seed", SPYRE_FIELD(seed), any(), "",
                    "Seed of every random choice (LCRC errors, ...): same seed, same run."));
  f.push_back(field("trace_tlps", SPYRE_FIELD(trace_tlps), any(), "",
                    "Include every TLP in the Perfetto trace, and the credits and read tags in use as counters (large)."));
  return f;
}

#undef SPYRE_FIELD

}  // namespace

const std::vector<Field>& fields() {
  static const std::vector<Field> table = build_fields();
  return table;
}

const Field* find_field(const std::string& path) {
  for (const auto& f : fields())
    if (f.path == path) return &f;
  return nullptr;
}

std::optional<std::pair<std::string, std::string>> check_cross_fields(const SimConfig& c) {
  const FaultConfig& faults = c.faults;
  if (faults.at_cb != 0 && faults.at_cb_fault == kNoFault)
    return std::make_pair(std::string("faults.at_cb_fault"),
                          "\"none\" with faults.at_cb " + std::to_string(faults.at_cb) +
                              ": name the kind of fault to inject there");
  if (faults.misbehave.at_cb != 0 && faults.misbehave.kind == "none")
    return std::make_pair(std::string("faults.misbehave.kind"),
                          "\"none\" with faults.misbehave.at_cb " + std::to_string(faults.misbehave.at_cb) +
                              ": name the misbehaviour to commit there");
  const double per_request = faults.unsupported_request_rate + faults.completer_abort_rate +
                             faults.dropped_completion_rate;
  if (per_request > 1.0)
    return std::make_pair(std::string("faults.dropped_completion_rate"),
                          "the per-request fault rates (unsupported_request, completer_abort, "
                          "dropped_completion) sum to " +
                              real_text(per_request) + ", more than 1");
  if (c.topology.switches_per_root_port > 1 && c.topology.devices_per_switch == 0)
    return std::make_pair(std::string("topology.switches_per_root_port"),
                          std::to_string(c.topology.switches_per_root_port) +
                              " with topology.devices_per_switch 0: there are no switches to put under a parent");
  if (c.network.fabric == "back_to_back" && c.network.nodes != 2)
    return std::make_pair(std::string("network.fabric"),
                          "\"back_to_back\" with network.nodes " + std::to_string(c.network.nodes) +
                              ": two NICs can be cabled back to back, more need the switch");
  if (c.device.usable_bytes > c.device.memory_bytes)
    return std::make_pair(std::string("device.usable_bytes"),
                          std::to_string(c.device.usable_bytes) + " exceeds device.memory_bytes (" +
                              std::to_string(c.device.memory_bytes) + ")");
  // A receiver must be able to take one TLP of the largest payload, or nothing ever flows.
  const std::uint32_t need = c.link.mps / 16;
  const std::pair<const char*, const Credits*> sides[] = {{"device_rx", &c.link.device_rx},
                                                          {"host_rx", &c.link.host_rx}};
  for (const auto& [side, credits] : sides) {
    const std::pair<const char*, std::uint32_t> data[] = {
        {"posted_data", credits->posted_data}, {"completion_data", credits->completion_data}};
    for (const auto& [key, value] : data) {
      if (value != 0 && value < need)
        return std::make_pair(std::string("link.") + side + "." + key,
                              std::to_string(value) + " credits cannot hold one MPS-sized TLP (" +
                                  std::to_string(c.link.mps) + " bytes): need at least " +
                                  std::to_string(need) + " (link.mps / 16) or 0 (infinite)");
    }
  }
  return std::nullopt;
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace spyre_dma::model::config
