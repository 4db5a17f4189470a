// The JSON Lines reader and writer (traces/README.md).
#include "spyre_dma/traces/trace_io.hpp"


#include <cstring>
#include <optional>
#include <sstream>

#include "trace_check.hpp"
#include "spyre_dma/traces/output_file.hpp"
#include "gzip.hpp"
#include "text_input.hpp"

namespace spyre_dma::traces {

TraceError::TraceError(std::string file, std::size_t line, std::string field, std::string message)
    : std::runtime_error(file + ":" + std::to_string(line) + ": " + (field.empty() ? "-" : field) + ": " +
                         message),
      file_(std::move(file)),
      line_(line),
      field_(std::move(field)),
      message_(std::move(message)) {}

namespace {

using nlohmann::json;

// Reads one record's fields, naming the line and the dotted key of whatever is wrong.
class Fields {
 public:
  Fields(const json& obj, const std::string& prefix, const std::string& file, std::size_t line)
      : obj_(obj), prefix_(prefix), file_(file), line_(line) {}

  [[noreturn]] void fail(const std::string& key, const std::string& message) const {
    throw TraceError(file_, line_, key.empty() ? prefix_ : prefix_ + "." + key, message);
  }
  const json* find(const char* key) const {
    const auto it = obj_.find(key);
    return it == obj_.end() ? nullptr : &*it;
  }
  std::uint64_t u64(const char* key, std::uint64_t fallback = 0) const {
    const json* v = find(key);
    if (!v) return fallback;
    if (!v->is_number_unsigned() && !(v->is_number_integer() && v->get<std::int64_t>() >= 0)) {
      fail(key, "expected a non-negative integer, got " + v->dump());
    }
    return v->get<std::uint64_t>();
  }
  std::uint32_t u32(const char* key) const {
    const std::uint64_t v = u64(key);
    if (v > 0xffffffffull) fail(key, "value " + std::to_string(v) + " exceeds 32 bits");
    return static_cast<std::uint32_t>(v);
  }
  std::optional<double> number(const char* key) const {
    const json* v = find(key);
    if (!v) return std::nullopt;
    if (!v->is_number()) fail(key, "expected a number, got " + v->dump());
    return v->get<double>();
  }
  std::string string(const char* key) const {
    const json* v = find(key);
    if (!v) return {};
    if (!v->is_string()) fail(key, "expected a string, got " + v->dump());
    return v->get<std::string>();
  }
  void only(std::initializer_list<const char*> keys) const {
    for (auto it = obj_.begin(); it != obj_.end(); ++it) {
      bool known = false;
      for (const char* k : keys) known = known || it.key() == k;
      if (!known) fail(it.key(), "unknown key");
    }
  }

 private:
  const json& obj_;
  std::string prefix_;
  const std::string& file_;
  std::size_t line_;
};

Header parse_header(const json& j, const std::string& file) {
  if (!j.is_object()) throw TraceError(file, 1, "", "the header line must be a JSON object");
  Fields f(j, "header", file, 1);
  f.only({"format", "version", "source", "device", "link", "resolution_ns", "devices", "extra"});
  if (f.string("format") != "spyre-dma-trace") {
    f.fail("format", "expected \"spyre-dma-trace\" (is this a trace file?)");
  }
  Header h;
  if (!f.find("version")) f.fail("version", "missing");
  const std::uint64_t version = f.u64("version");
  if (version != static_cast<std::uint64_t>(kFormatVersion)) {
    f.fail("version", "version " + std::to_string(version) + " is not supported (this build reads " +
                          std::to_string(kFormatVersion) + ")");
  }
  h.version = static_cast<int>(version);
  h.source = f.string("source");
  h.device = f.string("device");
  h.link = f.string("link");
  h.resolution_ns = f.number("resolution_ns").value_or(0.0);
  if (h.resolution_ns < 0) f.fail("resolution_ns", "negative");
  if (f.find("devices")) {
    const std::uint32_t devices = f.u32("devices");
    if (devices == 0) f.fail("devices", "0: a trace has at least one device");
    h.devices = devices;
  }
  if (const json* extra = f.find("extra")) {
    if (!extra->is_object()) f.fail("extra", "expected an object, got " + extra->dump());
    h.extra = *extra;
  }
  return h;
}

Allocation parse_alloc(const Fields& f) {
  f.only({"id", "bytes", "max_chunk_bytes", "device"});
  if (!f.find("id")) f.fail("id", "missing");
  if (!f.find("bytes")) f.fail("bytes", "missing");
  return Allocation{f.u64("id"), f.u64("bytes"), f.u64("max_chunk_bytes"), f.u32("device")};
}

Op parse_op(const Fields& f) {
  f.only({"id", "device", "stream", "kind", "bytes", "host", "dst_alloc", "dst_offset", "src_alloc", "src_offset",
          "pattern", "compute_ns", "event", "deps", "issue_ns", "start_ns", "duration_ns", "host_start_ns",
          "host_duration_ns"});
  Op op;
  if (!f.find("id")) f.fail("id", "missing");
  op.id = f.u64("id");
  op.device = f.u32("device");
  op.stream = f.u32("stream");
  if (!f.find("kind")) f.fail("kind", "missing");
  const std::string kind = f.string("kind");
  const auto k = parse_op_kind(kind);
  if (!k) f.fail("kind", "unknown kind \"" + kind + "\"");
  op.kind = *k;
  op.bytes = f.u64("bytes");
  if (f.find("host")) {
    const std::string host = f.string("host");
    const auto h = parse_host_memory(host);
    if (!h) f.fail("host", "unknown host memory \"" + host + "\" (none, registered, pageable)");
    op.host = *h;
  }
  op.dst_alloc = f.u64("dst_alloc");
  op.dst_offset = f.u64("dst_offset");
  op.src_alloc = f.u64("src_alloc");
  op.src_offset = f.u64("src_offset");
  op.pattern = f.u32("pattern");
  op.compute_ns = f.u64("compute_ns");
  op.event = f.u32("event");
  if (const json* deps = f.find("deps")) {
    if (!deps->is_array()) f.fail("deps", "expected an array of op ids, got " + deps->dump());
    for (const json& d : *deps) {
      if (!d.is_number_unsigned() && !(d.is_number_integer() && d.get<std::int64_t>() >= 0)) {
        f.fail("deps", "expected an op id, got " + d.dump());
      }
      op.deps.push_back(d.get<std::uint64_t>());
    }
  }
  op.issue_ns = f.number("issue_ns");
  op.start_ns = f.number("start_ns");
  op.duration_ns = f.number("duration_ns");
  op.host_start_ns = f.number("host_start_ns");
  op.host_duration_ns = f.number("host_duration_ns");
  return op;
}

json header_json(const Header& h) {
  json j = json::object();
  j["format"] = "spyre-dma-trace";
  j["version"] = h.version;
  j["source"] = h.source;
  j["device"] = h.device;
  j["link"] = h.link;
  j["resolution_ns"] = h.resolution_ns;
  if (h.devices != 1) j["devices"] = h.devices;  // left out for one device: older readers' files stay as they were
  j["extra"] = h.extra.is_object() ? h.extra : json::object();
  return j;
}

json op_json(const Op& op) {
  json j = json::object();
  j["id"] = op.id;
  if (op.device) j["device"] = op.device;
  j["stream"] = op.stream;
  j["kind"] = to_string(op.kind);
  if (op.bytes) j["bytes"] = op.bytes;
  if (op.host != HostMemory::kNone) j["host"] = to_string(op.host);
  if (op.dst_alloc) j["dst_alloc"] = op.dst_alloc;
  if (op.dst_offset) j["dst_offset"] = op.dst_offset;
  if (op.src_alloc) j["src_alloc"] = op.src_alloc;
  if (op.src_offset) j["src_offset"] = op.src_offset;
  if (op.kind == OpKind::kFill) j["pattern"] = op.pattern;
  if (op.compute_ns) j["compute_ns"] = op.compute_ns;
  if (op.kind == OpKind::kEventRecord || op.kind == OpKind::kEventWait) j["event"] = op.event;
  if (!op.deps.empty()) j["deps"] = op.deps;
  if (op.issue_ns) j["issue_ns"] = *op.issue_ns;
  if (op.start_ns) j["start_ns"] = *op.start_ns;
  if (op.duration_ns) j["duration_ns"] = *op.duration_ns;
  if (op.host_start_ns) j["host_start_ns"] = *op.host_start_ns;
  if (op.host_duration_ns) j["host_duration_ns"] = *op.host_duration_ns;
  return j;
}

}  // namespace

Trace parse_trace(std::istream& in, const std::string& name) {
  std::string data;
  char chunk[1 << 16];
  const std::size_t cap = detail::max_inflated_bytes();
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    data.append(chunk, static_cast<std::size_t>(in.gcount()));
    if (data.size() > cap) {
      throw TraceError(name, 0, "",
                       "is more than " + std::to_string(cap) + " bytes, the input limit (SPYRE_DMA_MAX_INPUT_BYTES raises it)");
    }
  }
  if (in.bad()) throw TraceError(name, 0, "", "read error");
  if (data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x1f &&
      static_cast<unsigned char>(data[1]) == 0x8b) {
    data = detail::gunzip(data, name);
  }
  Trace trace;
  std::optional<detail::TraceChecker> checker;  // made once the header has said how many devices
  bool have_header = false;
  std::size_t line_no = 0;
  std::size_t pos = 0;
  while (pos < data.size()) {
    std::size_t end = data.find('\n', pos);
    if (end == std::string::npos) end = data.size();
    ++line_no;
    std::string_view line(data.data() + pos, end - pos);
    pos = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;  // blank lines
    detail::check_json_depth(line, name, line_no);
    json j;
    try {
      j = json::parse(line.begin(), line.end());
    } catch (const json::parse_error& e) {
      throw TraceError(name, line_no, "", std::string("not valid JSON: ") + e.what());
    } catch (const json::out_of_range& e) {  // a number beyond a double ("1e999")
      throw TraceError(name, line_no, "", std::string("not valid JSON: ") + e.what());
    }
    if (!have_header) {
      trace.header = parse_header(j, name);
      checker.emplace(trace.header.devices);
      have_header = true;
      continue;
    }
    if (!j.is_object() || j.size() != 1) {
      throw TraceError(name, line_no, "", "expected one record: {\"alloc\":{...}} or {\"op\":{...}}");
    }
    const auto it = j.begin();
    if (!it.value().is_object()) {
      throw TraceError(name, line_no, it.key(), "expected an object, got " + it.value().dump());
    }
    const Fields f(it.value(), it.key(), name, line_no);
    if (it.key() == "alloc") {
      Allocation a = parse_alloc(f);
      if (auto bad = checker->add(a)) throw TraceError(name, line_no, bad.field, bad.message);
      trace.allocations.push_back(a);
    } else if (it.key() == "op") {
      Op op = parse_op(f);
      if (auto bad = checker->add(op)) throw TraceError(name, line_no, bad.field, bad.message);
      trace.ops.push_back(std::move(op));
    } else {
      throw TraceError(name, line_no, it.key(), "unknown record (alloc or op)");
    }
  }
  if (!have_header) throw TraceError(name, 1, "header", "empty file: no header line");
  return trace;
}

Trace read_trace(const std::string& path) {
  std::istringstream in(detail::read_file_text(path));
  return parse_trace(in, path);
}

void write_trace(const Trace& trace, std::ostream& out) {
  if (const std::string bad = check_trace(trace); !bad.empty()) {
    throw TraceError("<trace>", 0, "", "not written: " + bad);
  }
  out << header_json(trace.header).dump() << '\n';
  for (const Allocation& a : trace.allocations) {
    json j;
    j["alloc"] = {{"id", a.id}, {"bytes", a.bytes}, {"max_chunk_bytes", a.max_chunk_bytes}};
    if (a.device) j["alloc"]["device"] = a.device;
    out << j.dump() << '\n';
  }
  for (const Op& op : trace.ops) {
    out << "{\"op\":" << op_json(op).dump() << "}\n";
  }
  if (!out) throw std::runtime_error("write_trace: the stream failed");
}

void write_trace_file(const Trace& trace, const std::string& path) {
  write_file_atomically(path, [&](std::ostream& out) { write_trace(trace, out); });
}

}  // namespace spyre_dma::traces
