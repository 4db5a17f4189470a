#include "spyre_dma/traces/kineto.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include "spyre_dma/traces/trace_io.hpp"
#include "gzip.hpp"
#include "text_input.hpp"

namespace spyre_dma::traces {
namespace {

using nlohmann::json;

// A profile of a long run can hold thousands of odd events; the report keeps the first ones
// (detail::kMaxNotes).
void note(ImportReport& report, std::string text) { detail::add_note(report.notes, std::move(text)); }

using detail::line_of;

// Host-side categories: what the CPU did. They carry no DMA, except the runtime calls joined below.
bool host_category(std::string_view cat) {
  static const char* const kHost[] = {"cpu_op", "cuda_runtime", "cuda_driver", "user_annotation",
                                      "python_function", "ac2g", "cuda_sync", "Trace", "fwdbwd",
                                      "cpu_instant_event", "overhead", "Runtime", "Operator",
                                      "gpu_user_annotation", "cuda_profiler_range", "Memory"};
  return std::any_of(std::begin(kHost), std::end(kHost), [&](const char* c) { return cat == c; });
}

bool runtime_call(std::string_view name) {
  return name.rfind("cudaMemcpy", 0) == 0 || name.rfind("cudaMemset", 0) == 0 ||
         name.rfind("cudaLaunchKernel", 0) == 0 || name.rfind("cuLaunchKernel", 0) == 0 ||
         name.rfind("cudaLaunchCooperativeKernel", 0) == 0;
}

std::optional<double> number(const json& e, const char* key) {
  auto it = e.find(key);
  if (it == e.end() || !it->is_number()) return std::nullopt;
  const double v = it->get<double>();
  if (!std::isfinite(v)) return std::nullopt;
  return v;
}

// A Kineto stream id: args.stream when present, else the tid (a number or "stream 7").
// Ids beyond 32 bits are not stream ids: the event is malformed rather than given a truncated one.
std::optional<std::uint32_t> stream_of(const json& e) {
  auto id = [](const json& v) -> std::optional<std::uint32_t> {
    if (v.is_number_unsigned() && v.get<std::uint64_t>() <= 0xFFFF'FFFFull) return static_cast<std::uint32_t>(v.get<std::uint64_t>());
    if (v.is_number_integer() && v.get<std::int64_t>() >= 0 && v.get<std::int64_t>() <= 0xFFFF'FFFFll)
      return static_cast<std::uint32_t>(v.get<std::int64_t>());
    return std::nullopt;
  };
  if (auto a = e.find("args"); a != e.end() && a->is_object()) {
    if (auto s = a->find("stream"); s != a->end() && s->is_number_integer()) {
      if (auto v = id(*s)) return v;
    }
  }
  auto t = e.find("tid");
  if (t == e.end()) return std::nullopt;
  if (t->is_number_integer()) return id(*t);
  if (t->is_string()) {
    const std::string s = t->get<std::string>();
    const auto digit = s.find_first_of("0123456789");
    if (digit == std::string::npos) return std::nullopt;
    const auto end = s.find_first_not_of("0123456789", digit);
    std::string digits = s.substr(digit, end == std::string::npos ? std::string::npos : end - digit);
    digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size() - 1));  // "007" -> "7"
    if (digits.size() > 10) return std::nullopt;
    const std::uint64_t v = std::stoull(digits);  // at most 10 digits: no overflow
    if (v <= 0xFFFF'FFFFull) return static_cast<std::uint32_t>(v);
  }
  return std::nullopt;
}

std::optional<std::int64_t> correlation_of(const json& e) {
  auto a = e.find("args");
  if (a == e.end() || !a->is_object()) return std::nullopt;
  auto c = a->find("correlation");
  if (c == a->end() || !c->is_number_integer()) return std::nullopt;
  return c->get<std::int64_t>();
}

struct Pending {
  Op op;
  double ts_us = 0;
  std::size_t index = 0;  // position in traceEvents: the tie-break that keeps input order
  std::optional<std::int64_t> correlation;
};

}  // namespace

Trace import_kineto_text(const std::string& text, const std::string& name, ImportReport& report) {
  report = ImportReport{};
  detail::check_json_depth(text, name);
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    throw TraceError(name, line_of(text, e.byte), "", fmt::format("invalid JSON: {}", e.what()));
  } catch (const json::out_of_range& e) {  // a number beyond a double ("1e999"): no position
    throw TraceError(name, 0, "", fmt::format("invalid JSON: {}", e.what()));
  }
  const json* events = nullptr;
  if (doc.is_object()) {
    auto it = doc.find("traceEvents");
    if (it == doc.end() || !it->is_array())
      throw TraceError(name, 0, "traceEvents", "not a Chrome trace: no traceEvents array");
    events = &*it;
  } else if (doc.is_array()) {
    events = &doc;  // the JSON Array Format of Chrome traces
  } else {
    throw TraceError(name, 0, "", "not a Chrome trace: neither an object nor an array");
  }

  std::unordered_map<std::int64_t, double> host_ts;  // correlation -> host call start (us)
  std::vector<Pending> pending;
  std::map<std::string, std::size_t> unknown_names;
  bool fractional = false;

  for (std::size_t i = 0; i < events->size(); ++i) {
    const json& e = (*events)[i];
    ++report.events_seen;
    if (!e.is_object()) {
      ++report.malformed;
      note(report, fmt::format("event {}: not a JSON object", i));
      continue;
    }
    const std::string ph = e.contains("ph") && e["ph"].is_string() ? e["ph"].get<std::string>() : "";
    const std::string cat = e.contains("cat") && e["cat"].is_string() ? e["cat"].get<std::string>() : "";
    const std::string ename = e.contains("name") && e["name"].is_string() ? e["name"].get<std::string>() : "";
    if (ph == "M" || ph == "s" || ph == "f" || ph == "i" || ph == "I" || ph == "C") {
      ++report.ignored;  // metadata, flow arrows, instants, counters
      continue;
    }
    if (cat == "cuda_runtime" || cat == "cuda_driver") {
      if (runtime_call(ename)) {
        auto corr = correlation_of(e);
        auto ts = number(e, "ts");
        if (corr && ts) host_ts.emplace(*corr, *ts);
      }
      ++report.ignored;
      continue;
    }
    if (host_category(cat)) {
      ++report.ignored;
      continue;
    }

    const bool is_memcpy = cat == "gpu_memcpy" || ename.rfind("Memcpy ", 0) == 0;
    const bool is_memset = cat == "gpu_memset" || ename.rfind("Memset", 0) == 0;
    const bool is_kernel = cat == "kernel" || cat == "Kernel";
    if (!is_memcpy && !is_memset && !is_kernel) {
      ++report.unknown;
      ++unknown_names[fmt::format("cat \"{}\" name \"{}\"", cat, ename.substr(0, 60))];
      continue;
    }

    Pending p;
    p.index = i;
    Op& op = p.op;
    if (is_memcpy) {
      if (ename.find("HtoD") != std::string::npos) op.kind = OpKind::kH2D;
      else if (ename.find("DtoH") != std::string::npos) op.kind = OpKind::kD2H;
      else if (ename.find("DtoD") != std::string::npos) op.kind = OpKind::kD2D;
      else {  // HtoH, PtoP (peer), unnamed: no device-to-host path of this device
        ++report.unknown;
        ++unknown_names[fmt::format("copy \"{}\"", ename)];
        continue;
      }
      if (op.kind != OpKind::kD2D) {
        // "Memcpy HtoD (Pageable -> Device)", "Memcpy DtoH (Device -> Pinned)"; a name that says
        // neither is taken as pinned, which is what copies without staging look like.
        op.host = ename.find("Pageable") != std::string::npos ? HostMemory::kPageable : HostMemory::kRegistered;
      }
    } else if (is_memset) {
      op.kind = OpKind::kFill;
    } else {
      op.kind = OpKind::kCompute;
    }

    const auto ts = number(e, "ts");
    const auto dur = number(e, "dur");
    const auto stream = stream_of(e);
    const char* bad = !ts ? "ts" : !dur || *dur < 0 ? "dur" : !stream ? "args.stream" : nullptr;
    std::uint64_t bytes = 0;
    if (!bad && op.kind != OpKind::kCompute) {
      const json* args = e.contains("args") && e["args"].is_object() ? &e["args"] : nullptr;
      if (!args || !args->contains("bytes") || !(*args)["bytes"].is_number_integer() ||
          (*args)["bytes"].get<std::int64_t>() <= 0) {
        bad = "args.bytes";
      } else {
        bytes = static_cast<std::uint64_t>((*args)["bytes"].get<std::int64_t>());
      }
    }
    if (bad) {
      ++report.malformed;
      note(report, fmt::format("event {} (\"{}\"): missing or invalid {}", i, ename.substr(0, 60), bad));
      continue;
    }
    if (std::floor(*ts) != *ts || std::floor(*dur) != *dur) fractional = true;
    p.ts_us = *ts;
    op.stream = *stream;
    op.bytes = bytes;
    op.start_ns = *ts;        // made relative (and converted to ns) below
    op.duration_ns = *dur * 1000.0;
    if (op.kind == OpKind::kCompute) op.compute_ns = static_cast<std::uint64_t>(std::llround(*dur * 1000.0));
    p.correlation = correlation_of(e);
    pending.push_back(std::move(p));
    if (op.kind == OpKind::kCompute) ++report.kernels;
    else if (op.kind == OpKind::kFill) ++report.memset;
    else ++report.memcpy;
  }
  for (const auto& [what, count] : unknown_names) note(report, fmt::format("unknown event kind, {} x {}", count, what));

  if (pending.empty()) {
    throw TraceError(name, 0, "traceEvents",
                     fmt::format("nothing to import: no GPU copy, memset or kernel among {} events "
                                 "({} unknown, {} malformed)",
                                 report.events_seen, report.unknown, report.malformed));
  }

  // Device order: by start time, input order among equal starts (Kineto writes each stream in
  // order), so every stream keeps its order.
  std::stable_sort(pending.begin(), pending.end(),
                   [](const Pending& a, const Pending& b) { return a.ts_us < b.ts_us; });
  double origin_us = pending.front().ts_us;
  for (const Pending& p : pending) {
    if (p.correlation) {
      auto h = host_ts.find(*p.correlation);
      if (h != host_ts.end()) origin_us = std::min(origin_us, h->second);
    }
  }

  Trace trace;
  trace.header.source = "kineto:" + name;
  trace.header.resolution_ns = fractional ? 1.0 : 1000.0;
  trace.header.extra = json{{"time_origin_us", origin_us},
                            {"allocations", "one per copy, sized to it"}};
  if (doc.is_object()) {
    if (auto dp = doc.find("deviceProperties"); dp != doc.end() && dp->is_array() && !dp->empty() &&
                                                 (*dp)[0].is_object() && (*dp)[0].contains("name") &&
                                                 (*dp)[0]["name"].is_string()) {
      trace.header.device = (*dp)[0]["name"].get<std::string>();
    }
  }
  std::uint64_t next_alloc = 1;
  auto new_alloc = [&](std::uint64_t bytes) {
    trace.allocations.push_back(Allocation{next_alloc, bytes, 0});
    return next_alloc++;
  };
  std::uint64_t id = 1;
  for (Pending& p : pending) {
    Op op = std::move(p.op);
    op.id = id++;
    op.start_ns = (p.ts_us - origin_us) * 1000.0;
    if (p.correlation) {
      auto h = host_ts.find(*p.correlation);
      if (h != host_ts.end()) {
        op.issue_ns = (h->second - origin_us) * 1000.0;
        ++report.joined_to_host;
      }
    }
    switch (op.kind) {
      case OpKind::kH2D: op.dst_alloc = new_alloc(op.bytes); break;
      case OpKind::kD2H: op.src_alloc = new_alloc(op.bytes); break;
      case OpKind::kD2D:
        op.src_alloc = new_alloc(op.bytes);
        op.dst_alloc = new_alloc(op.bytes);
        break;
      case OpKind::kFill: op.dst_alloc = new_alloc(op.bytes); break;
      default: break;
    }
    trace.ops.push_back(std::move(op));
  }
  if (fractional) note(report, "fractional timestamps: resolution taken as 1 ns");
  if (const std::string problem = check_trace(trace); !problem.empty())
    throw TraceError(name, 0, "", "imported trace is inconsistent: " + problem);
  return trace;
}

Trace import_kineto(const std::string& path, ImportReport& report) {
  std::string data = detail::read_file_text(path);
  const bool gzip = data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x1f &&
                    static_cast<unsigned char>(data[1]) == 0x8b;
  if (gzip) data = detail::gunzip(data, path);
  Trace t = import_kineto_text(data, path, report);
  t.header.source = "kineto:" + detail::base_name(path);  // the file name only: the trace must not depend on where it lay
  return t;
}

}  // namespace spyre_dma::traces
