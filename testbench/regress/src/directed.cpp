#include "spyre_dma/input_file.hpp"
#include "directed.hpp"

#include <algorithm>
#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace spyre_dma::regress {

DirectedError::DirectedError(std::string file, std::string where, std::string message)
    : std::runtime_error(file + ": " + where + ": " + message),
      file_(std::move(file)),
      where_(std::move(where)),
      message_(std::move(message)) {}

namespace {

using nlohmann::json;

class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw DirectedError(file_, where, what);
  }

  // Every key of `obj` must be one of `allowed`.
  void keys(const json& obj, const std::string& where, std::initializer_list<const char*> allowed) const {
    if (!obj.is_object()) fail(where, "expected an object, got " + obj.dump());
    for (const auto& item : obj.items()) {
      const std::string& k = item.key();  // a name, not a structured binding: lambdas capture it
      if (std::none_of(allowed.begin(), allowed.end(), [&](const char* a) { return k == a; })) {
        std::string list;
        for (const char* a : allowed) list += std::string(list.empty() ? "" : ", ") + a;
        fail(where + "." + k, "unknown key (allowed here: " + list + ")");
      }
    }
  }

  std::uint64_t u64(const json& obj, const char* key, const std::string& where, std::uint64_t dflt,
                    bool required = false) const {
    if (!obj.contains(key)) {
      if (required) fail(where + "." + key, "missing");
      return dflt;
    }
    const json& v = obj[key];
    const std::string at = where + "." + key;
    if (v.is_number_unsigned()) return v.get<std::uint64_t>();
    if (v.is_number_integer()) fail(at, fmt::format("{} is negative", v.get<std::int64_t>()));
    if (v.is_string()) {  // hex ("0x...") or decimal, for patterns and large sizes
      const std::string s = v.get<std::string>();
      try {
        std::size_t used = 0;
        const std::uint64_t x = std::stoull(s, &used, 0);
        if (used == s.size()) return x;
      } catch (const std::exception&) {
      }
      fail(at, "\"" + s + "\" is not an unsigned integer");
    }
    fail(at, "expected an unsigned integer, got " + v.dump());
  }

  bool boolean(const json& obj, const char* key, const std::string& where, bool dflt) const {
    if (!obj.contains(key)) return dflt;
    if (!obj[key].is_boolean()) fail(where + "." + key, "expected true or false, got " + obj[key].dump());
    return obj[key].get<bool>();
  }

  // A probability: a number in [0, 1].
  double rate(const json& obj, const char* key, const std::string& where) const {
    if (!obj.contains(key)) return 0;
    const json& v = obj[key];
    if (!v.is_number() || !(v.get<double>() >= 0 && v.get<double>() <= 1)) {
      fail(where + "." + key, "expected a probability in [0, 1], got " + v.dump());
    }
    return v.get<double>();
  }

  std::string str(const json& obj, const char* key, const std::string& where, const std::string& dflt,
                  bool required = false) const {
    if (!obj.contains(key)) {
      if (required) fail(where + "." + key, "missing");
      return dflt;
    }
    if (!obj[key].is_string()) fail(where + "." + key, "expected a string, got " + obj[key].dump());
    return obj[key].get<std::string>();
  }

  template <typename T>
  T choice(const json& obj, const char* key, const std::string& where, T dflt,
           std::initializer_list<std::pair<const char*, T>> names) const {
    if (!obj.contains(key)) return dflt;
    const std::string v = str(obj, key, where, "");
    for (const auto& [n, t] : names) {
      if (v == n) return t;
    }
    std::string list;
    for (const auto& [n, t] : names) {
      (void)t;
      list += std::string(list.empty() ? "" : ", ") + n;
    }
    fail(where + "." + key, "\"" + v + "\" is not one of: " + list);
  }

 private:
  std::string file_;
};

std::string line_col(const std::string& text, std::size_t byte) {
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') ++line, col = 1;
    else ++col;
  }
  return fmt::format("{}:{}", line, col);
}

ErrorCode error_code(const Reader& rd, const std::string& v, const std::string& at) {
  static const std::pair<const char*, ErrorCode> kNames[] = {
      {"ok", ErrorCode::kOk},
      {"invalid_argument", ErrorCode::kInvalidArgument},
      {"out_of_memory", ErrorCode::kOutOfMemory},
      {"device_error", ErrorCode::kDeviceError},
      {"iommu_fault", ErrorCode::kIommuFault},
      {"device_timeout", ErrorCode::kDeviceTimeout},
      {"device_fault", ErrorCode::kDeviceFault},
      {"cancelled", ErrorCode::kCancelled},
  };
  for (const auto& [n, c] : kNames) {
    if (v == n) return c;
  }
  rd.fail(at, "\"" + v + "\" is not an error code (ok, invalid_argument, out_of_memory, device_error, iommu_fault, "
              "device_timeout, device_fault, cancelled)");
}

hw::ErrorKind error_kind(const Reader& rd, const std::string& v, const std::string& at) {
  static const std::pair<const char*, hw::ErrorKind> kNames[] = {
      {"malformed_cb", hw::ErrorKind::kMalformedCb},       {"xlat_fault", hw::ErrorKind::kXlatFault},
      {"iommu_fault", hw::ErrorKind::kIommuFault},         {"device_memory_fault", hw::ErrorKind::kDeviceMemoryFault},
      {"pcie_error", hw::ErrorKind::kPcieError},           {"completion_timeout", hw::ErrorKind::kCompletionTimeout},
      {"reset", hw::ErrorKind::kReset},                    {"queue_fault", hw::ErrorKind::kQueueFault},
  };
  for (const auto& [n, k] : kNames) {
    if (v == n) return k;
  }
  rd.fail(at, "\"" + v + "\" is not an RB error kind (malformed_cb, xlat_fault, iommu_fault, device_memory_fault, "
              "pcie_error, completion_timeout, reset, queue_fault)");
}

}  // namespace

DirectedTest parse_directed(const std::string& text, const std::string& file) {
  Reader rd(file);
  if (const std::size_t at = json_too_deep_at(text); at != std::string_view::npos) {
    throw DirectedError(file, line_col(text, at), "invalid JSON: " + json_too_deep_message());
  }
  json j;
  try {
    j = json::parse(text, nullptr, true, true);
  } catch (const json::parse_error& e) {
    throw DirectedError(file, line_col(text, e.byte == 0 ? 0 : e.byte - 1), std::string("invalid JSON: ") + e.what());
  } catch (const json::out_of_range& e) {  // a number beyond a double ("1e999"): no position
    throw DirectedError(file, "$", std::string("invalid JSON: ") + e.what());
  }
  rd.keys(j, "$",
          {"name", "description", "seed", "backends", "engine", "faults", "streams", "host_buffers", "device_buffers",
           "events", "ops"});
  DirectedTest t;
  t.name = rd.str(j, "name", "$", "", true);
  if (j.contains("seed")) t.seed = rd.u64(j, "seed", "$", 0);
  t.description = rd.str(j, "description", "$", "");
  Program& p = t.program;
  p.name = t.name;
  if (j.contains("backends")) {
    if (!j["backends"].is_array()) rd.fail("$.backends", "expected an array of backend names");
    for (std::size_t i = 0; i < j["backends"].size(); ++i) {
      const json& b = j["backends"][i];
      if (!b.is_string()) rd.fail(fmt::format("$.backends[{}]", i), "expected a backend name, got " + b.dump());
      t.backends.push_back(b.get<std::string>());
    }
  }
  if (j.contains("engine")) {
    const json& e = j["engine"];
    rd.keys(e, "$.engine", {"ring_slots", "max_cb_bytes", "staging_buffers", "staging_buffer_bytes", "order_by_footprint"});
    p.tuning.ring_slots = static_cast<std::uint32_t>(rd.u64(e, "ring_slots", "$.engine", 0));
    p.tuning.max_cb_bytes = rd.u64(e, "max_cb_bytes", "$.engine", 0);
    p.tuning.staging_buffers = static_cast<std::uint32_t>(rd.u64(e, "staging_buffers", "$.engine", 0));
    p.tuning.staging_buffer_bytes = rd.u64(e, "staging_buffer_bytes", "$.engine", 0);
    p.tuning.order_by_footprint = rd.boolean(e, "order_by_footprint", "$.engine", false);
  }
  if (j.contains("faults")) {
    const json& f = j["faults"];
    rd.keys(f, "$.faults",
            {"at_cb", "at_cb_fault", "poisoned_rate", "unsupported_request_rate", "completer_abort_rate",
             "dropped_completion_rate", "lcrc_rate", "iommu_fault_rate", "malformed_cb_rate", "device_reset_rate"});
    FaultPlan& x = p.faults;
    x.at_cb = rd.u64(f, "at_cb", "$.faults", 0);
    x.at_cb_fault = rd.str(f, "at_cb_fault", "$.faults", "", x.at_cb > 0);
    for (const auto& [key, rate] : FaultPlan::rates()) x.*rate = rd.rate(f, key, "$.faults");
  }
  if (!j.contains("streams") || !j["streams"].is_array() || j["streams"].empty()) {
    rd.fail("$.streams", "expected a non-empty array of streams");
  }
  for (std::size_t i = 0; i < j["streams"].size(); ++i) {
    const std::string at = fmt::format("$.streams[{}]", i);
    const json& s = j["streams"][i];
    rd.keys(s, at, {"ordering", "priority", "on_failure"});
    StreamSpec spec;
    spec.ordering = rd.choice<Ordering>(s, "ordering", at, Ordering::kStrict,
                                        {{"strict", Ordering::kStrict},
                                         {"op_ordered", Ordering::kOpOrdered},
                                         {"pipeline_fifo", Ordering::kPipelineFifo}});
    spec.on_failure = rd.choice<FailurePolicy>(s, "on_failure", at, FailurePolicy::kIsolate,
                                               {{"isolate", FailurePolicy::kIsolate},
                                                {"propagate", FailurePolicy::kPropagate}});
    if (s.contains("priority")) {
      const json& v = s["priority"];
      if (!v.is_number_integer() || v.get<std::int64_t>() < -1000 || v.get<std::int64_t>() > 1000) {
        rd.fail(at + ".priority", "expected an integer in -1000..1000, got " + v.dump());
      }
      spec.priority = v.get<int>();
    }
    p.streams.push_back(spec);
  }
  if (j.contains("host_buffers")) {
    if (!j["host_buffers"].is_array()) rd.fail("$.host_buffers", "expected an array");
    for (std::size_t i = 0; i < j["host_buffers"].size(); ++i) {
      const std::string at = fmt::format("$.host_buffers[{}]", i);
      const json& h = j["host_buffers"][i];
      rd.keys(h, at, {"bytes", "kind", "misalign"});
      HostBufferSpec spec;
      spec.bytes = rd.u64(h, "bytes", at, 0, true);
      spec.kind = rd.choice<HostKind>(h, "kind", at, HostKind::kRegistered,
                                      {{"registered", HostKind::kRegistered}, {"pageable", HostKind::kPageable}});
      spec.misalign = static_cast<std::uint32_t>(rd.u64(h, "misalign", at, 0));
      p.host_buffers.push_back(spec);
    }
  }
  if (j.contains("device_buffers")) {
    if (!j["device_buffers"].is_array()) rd.fail("$.device_buffers", "expected an array");
    for (std::size_t i = 0; i < j["device_buffers"].size(); ++i) {
      const std::string at = fmt::format("$.device_buffers[{}]", i);
      const json& d = j["device_buffers"][i];
      rd.keys(d, at, {"bytes", "max_chunk_bytes"});
      p.device_buffers.push_back(DeviceBufferSpec{rd.u64(d, "bytes", at, 0, true), rd.u64(d, "max_chunk_bytes", at, 0)});
    }
  }
  p.events = static_cast<std::uint32_t>(rd.u64(j, "events", "$", 0));
  if (!j.contains("ops") || !j["ops"].is_array()) rd.fail("$.ops", "expected an array of operations");
  for (std::size_t i = 0; i < j["ops"].size(); ++i) {
    const std::string at = fmt::format("$.ops[{}]", i);
    const json& o = j["ops"][i];
    rd.keys(o, at,
            {"op", "stream", "host", "host_offset", "dev", "dev_offset", "src_dev", "src_offset", "bytes", "pattern",
             "duration_ns", "event", "expect"});
    OpSpec op;
    op.type = rd.choice<OpType>(o, "op", at, OpType::kSync,
                                {{"h2d", OpType::kH2D}, {"d2h", OpType::kD2H}, {"d2d", OpType::kD2D},
                                 {"fill", OpType::kFill}, {"compute", OpType::kCompute},
                                 {"host_callback", OpType::kHostCallback}, {"record", OpType::kRecord},
                                 {"wait", OpType::kWait}, {"sync", OpType::kSync}});
    if (!o.contains("op")) rd.fail(at + ".op", "missing");
    op.stream = static_cast<std::uint32_t>(rd.u64(o, "stream", at, 0));
    op.host = static_cast<std::uint32_t>(rd.u64(o, "host", at, 0));
    op.host_offset = rd.u64(o, "host_offset", at, 0);
    op.dev = static_cast<std::uint32_t>(rd.u64(o, "dev", at, 0));
    op.dev_offset = rd.u64(o, "dev_offset", at, 0);
    op.src_dev = static_cast<std::uint32_t>(rd.u64(o, "src_dev", at, 0));
    op.src_offset = rd.u64(o, "src_offset", at, 0);
    const bool data = op.type == OpType::kH2D || op.type == OpType::kD2H || op.type == OpType::kD2D ||
                      op.type == OpType::kFill;
    op.bytes = rd.u64(o, "bytes", at, 0, data);
    op.pattern = static_cast<std::uint32_t>(rd.u64(o, "pattern", at, 0));
    op.duration_ns = rd.u64(o, "duration_ns", at, 1000);
    op.event = static_cast<std::uint32_t>(rd.u64(o, "event", at, 0));
    if (o.contains("expect")) {
      const json& e = o["expect"];
      rd.keys(e, at + ".expect", {"error", "kind"});
      Expectation x;
      x.code = error_code(rd, rd.str(e, "error", at + ".expect", "", true), at + ".expect.error");
      if (e.contains("kind")) x.kind = error_kind(rd, rd.str(e, "kind", at + ".expect", ""), at + ".expect.kind");
      op.expect = x;
    }
    p.ops.push_back(op);
  }
  if (p.ops.empty() || p.ops.back().type != OpType::kSync) {
    OpSpec s;
    s.type = OpType::kSync;
    p.ops.push_back(s);
  }
  if (std::string e = check_program(p); !e.empty()) throw DirectedError(file, "$.ops", e);
  return t;
}

std::string to_directed_json(const Program& p, const std::string& description, bool with_seed) {
  json j;
  j["name"] = p.name;
  if (!description.empty()) j["description"] = description;
  if (with_seed) j["seed"] = p.seed;
  json engine = json::object();
  if (p.tuning.ring_slots) engine["ring_slots"] = p.tuning.ring_slots;
  if (p.tuning.max_cb_bytes) engine["max_cb_bytes"] = p.tuning.max_cb_bytes;
  if (p.tuning.staging_buffers) engine["staging_buffers"] = p.tuning.staging_buffers;
  if (p.tuning.staging_buffer_bytes) engine["staging_buffer_bytes"] = p.tuning.staging_buffer_bytes;
  if (p.tuning.order_by_footprint) engine["order_by_footprint"] = true;
  if (!engine.empty()) j["engine"] = engine;
  json faults = json::object();
  const FaultPlan& x = p.faults;
  if (x.at_cb) faults.update({{"at_cb", x.at_cb}, {"at_cb_fault", x.at_cb_fault}});
  for (const auto& [key, rate] : FaultPlan::rates()) {
    if (x.*rate > 0) faults[key] = x.*rate;
  }
  if (!faults.empty()) j["faults"] = faults;
  static const char* kOrdering[] = {"strict", "op_ordered", "pipeline_fifo"};
  for (const StreamSpec& s : p.streams) {
    json stream = {{"ordering", kOrdering[static_cast<int>(s.ordering)]}, {"priority", s.priority}};
    if (s.on_failure == FailurePolicy::kPropagate) stream["on_failure"] = "propagate";
    j["streams"].push_back(std::move(stream));
  }
  for (const HostBufferSpec& h : p.host_buffers) {
    json b = {{"bytes", h.bytes}, {"kind", h.kind == HostKind::kRegistered ? "registered" : "pageable"}};
    if (h.misalign) b["misalign"] = h.misalign;
    j["host_buffers"].push_back(b);
  }
  for (const DeviceBufferSpec& d : p.device_buffers) {
    json b = {{"bytes", d.bytes}};
    if (d.max_chunk_bytes) b["max_chunk_bytes"] = d.max_chunk_bytes;
    j["device_buffers"].push_back(b);
  }
  j["events"] = p.events;
  j["ops"] = json::array();
  for (const OpSpec& op : p.ops) {
    json o = {{"op", to_string(op.type)}};
    switch (op.type) {
      case OpType::kH2D:
      case OpType::kD2H:
        o.update({{"stream", op.stream}, {"host", op.host}, {"host_offset", op.host_offset}, {"dev", op.dev},
                  {"dev_offset", op.dev_offset}, {"bytes", op.bytes}});
        break;
      case OpType::kD2D:
        o.update({{"stream", op.stream}, {"dev", op.dev}, {"dev_offset", op.dev_offset}, {"src_dev", op.src_dev},
                  {"src_offset", op.src_offset}, {"bytes", op.bytes}});
        break;
      case OpType::kFill:
        o.update({{"stream", op.stream}, {"dev", op.dev}, {"dev_offset", op.dev_offset}, {"bytes", op.bytes},
                  {"pattern", fmt::format("0x{:08x}", op.pattern)}});
        break;
      case OpType::kCompute: o.update({{"stream", op.stream}, {"duration_ns", op.duration_ns}}); break;
      case OpType::kHostCallback: o["stream"] = op.stream; break;
      case OpType::kRecord:
      case OpType::kWait: o.update({{"stream", op.stream}, {"event", op.event}}); break;
      case OpType::kSync: break;
    }
    j["ops"].push_back(o);
  }
  return j.dump(1) + "\n";
}

DirectedTest load_directed(const std::string& path) {
  try {
    return parse_directed(read_input_file(path), path);
  } catch (const InputFileError& e) {
    throw DirectedError(e.path(), "$", e.why());
  }
}

std::vector<std::string> directed_files(const std::string& folder) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(folder, ec)) {
    if (e.is_regular_file() && e.path().extension() == ".json") out.push_back(e.path().string());
  }
  if (ec) throw DirectedError(folder, "$", "cannot list the folder: " + ec.message());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace spyre_dma::regress
