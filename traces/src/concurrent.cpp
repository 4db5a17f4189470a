// The header's description of concurrent groups (concurrent.hpp): reading it back and its checks.
#include "spyre_dma/traces/concurrent.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "spyre_dma/traces/trace_io.hpp"

namespace spyre_dma::traces {
namespace {

using nlohmann::json;

// The header is line 1 of a trace file; the trace in memory has no file name of its own.
[[noreturn]] void fail(const std::string& field, const std::string& message) {
  throw TraceError("<trace>", 1, field, message);
}

std::uint64_t op_id(const json& v, const std::string& field) {
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0))
    fail(field, "expected an op id, got " + v.dump());
  return v.get<std::uint64_t>();
}

}  // namespace

const char* to_string(GroupMeasure measure) {
  switch (measure) {
    case GroupMeasure::kCopy: return "copy";
    case GroupMeasure::kSpan: return "span";
    case GroupMeasure::kLatency: return "latency";
  }
  return "?";
}

std::optional<GroupMeasure> parse_group_measure(const std::string& name) {
  for (const GroupMeasure m : {GroupMeasure::kCopy, GroupMeasure::kSpan, GroupMeasure::kLatency}) {
    if (name == to_string(m)) return m;
  }
  return std::nullopt;
}

json ConcurrentGroup::to_json() const {
  json j = {{"label", label}, {"measure", traces::to_string(measure)}, {"first_op", first_op}, {"last_op", last_op}};
  if (!source.empty()) j["source"] = source;
  if (!note.empty()) j["note"] = note;
  if (measure == GroupMeasure::kSpan) j["spans"] = spans;
  return j;
}

std::vector<ConcurrentGroup> concurrent_groups(const Trace& trace) {
  std::vector<ConcurrentGroup> out;
  const json& extra = trace.header.extra;
  if (!extra.is_object()) return out;
  if (!extra.contains("groups")) return out;
  const json& list = extra.at("groups");
  if (!list.is_array()) fail("header.extra.groups", "expected an array of groups, got " + list.dump());
  std::unordered_map<std::uint64_t, std::size_t> index;  // op id -> position in trace.ops
  for (std::size_t i = 0; i < trace.ops.size(); ++i) index.emplace(trace.ops[i].id, i);
  std::unordered_map<std::uint64_t, std::size_t> owner;  // op id -> the group that has it
  for (std::size_t g = 0; g < list.size(); ++g) {
    const json& j = list[g];
    const std::string path = fmt::format("header.extra.groups[{}]", g);
    if (!j.is_object()) fail(path, "expected an object, got " + j.dump());
    for (auto k = j.begin(); k != j.end(); ++k) {
      static const char* const kKeys[] = {"label", "measure", "first_op", "last_op", "source", "note", "spans"};
      if (std::none_of(std::begin(kKeys), std::end(kKeys), [&](const char* key) { return k.key() == key; }))
        fail(path + "." + k.key(), "unknown key");
    }
    ConcurrentGroup c;
    const auto text = [&](const char* key, bool required) -> std::string {
      if (!j.contains(key)) {
        if (required) fail(path + "." + key, "missing");
        return {};
      }
      const json& v = j.at(key);
      if (!v.is_string()) fail(path + "." + key, "expected a string, got " + v.dump());
      return v.get<std::string>();
    };
    c.label = text("label", true);
    if (c.label.empty()) fail(path + ".label", "empty: a group is reported under its label");
    const std::string measure = text("measure", true);
    const auto m = parse_group_measure(measure);
    if (!m) fail(path + ".measure", "\"" + measure + "\" is not copy, span or latency");
    c.measure = *m;
    c.source = text("source", false);
    c.note = text("note", false);
    for (const char* key : {"first_op", "last_op"}) {
      if (!j.contains(key)) fail(path + "." + key, "missing");
      (std::string(key) == "first_op" ? c.first_op : c.last_op) = op_id(j.at(key), path + "." + key);
    }
    if (c.last_op < c.first_op)
      fail(path + ".last_op", fmt::format("{} is below first_op {}", c.last_op, c.first_op));
    if (!index.count(c.first_op)) fail(path + ".first_op", fmt::format("{} is not an op of the trace", c.first_op));
    if (!index.count(c.last_op)) fail(path + ".last_op", fmt::format("{} is not an op of the trace", c.last_op));
    for (std::size_t i = index.at(c.first_op); i <= index.at(c.last_op); ++i) {
      const auto [at, fresh] = owner.emplace(trace.ops[i].id, g);
      if (!fresh)
        fail(path + ".first_op", fmt::format("op {} is in group {} already", trace.ops[i].id, at->second));
    }
    if (c.measure != GroupMeasure::kSpan) {
      if (j.contains("spans")) fail(path + ".spans", "only a group whose measure is span has spans");
    } else {
      if (!j.contains("spans")) fail(path + ".spans", "missing: a span group names the ops each span times");
      const json& spans = j.at("spans");
      if (!spans.is_array()) fail(path + ".spans", "expected an array of arrays of op ids, got " + spans.dump());
      for (std::size_t s = 0; s < spans.size(); ++s) {
        const json& span = spans[s];
        const std::string spath = fmt::format("{}.spans[{}]", path, s);
        if (!span.is_array() || span.size() < 2)
          fail(spath, "expected an array of at least two op ids, got " + span.dump());
        std::vector<std::uint64_t> ids;
        for (const json& v : span) {
          const std::uint64_t id = op_id(v, spath);
          const auto o = owner.find(id);
          if (o == owner.end() || o->second != g)
            fail(spath, fmt::format("op {} is not an op of this group ({}..{})", id, c.first_op, c.last_op));
          if (std::find(ids.begin(), ids.end(), id) != ids.end()) fail(spath, fmt::format("op {} repeated", id));
          ids.push_back(id);
        }
        c.spans.push_back(std::move(ids));
      }
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<ConcurrentGroup> narrow_groups(const std::vector<ConcurrentGroup>& groups,
                                           const std::vector<std::uint64_t>& kept_ids) {
  const std::unordered_set<std::uint64_t> kept(kept_ids.begin(), kept_ids.end());
  std::vector<ConcurrentGroup> out;
  for (const ConcurrentGroup& g : groups) {
    ConcurrentGroup n = g;
    bool any = false;
    for (const std::uint64_t id : kept_ids) {
      if (id < g.first_op || id > g.last_op) continue;
      if (!any) n.first_op = id;
      n.last_op = id;
      any = true;
    }
    if (!any) continue;
    n.spans.clear();
    for (const auto& span : g.spans) {
      if (std::all_of(span.begin(), span.end(), [&](std::uint64_t id) { return kept.count(id) != 0; }))
        n.spans.push_back(span);
    }
    if (g.measure == GroupMeasure::kSpan && n.spans.empty()) continue;
    out.push_back(std::move(n));
  }
  return out;
}

std::optional<std::uint32_t> devices_per_switch(const Header& header) {
  if (!header.extra.is_object() || !header.extra.contains("devices_per_switch")) return std::nullopt;
  const json& v = header.extra.at("devices_per_switch");
  if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > 16)
    fail("header.extra.devices_per_switch", "expected an integer from 0 to 16, got " + v.dump());
  return static_cast<std::uint32_t>(v.get<std::int64_t>());
}

}  // namespace spyre_dma::traces
