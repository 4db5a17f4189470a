// Loading a configuration: file -> JSON (with line/column on errors and duplicate-key detection)
// -> base preset -> overrides checked against the field table -> checks between fields.
#include "spyre_dma/model/config_loader.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "config/config_fields.hpp"
#include "spyre_dma/input_file.hpp"

namespace spyre_dma::model {

const char* to_string(DataPathKind kind) noexcept { return kind == DataPathKind::kRtl ? "rtl" : "systemc"; }

namespace {

std::string compose(const std::string& file, const std::string& key, const std::string& message,
                    std::size_t line, std::size_t column) {
  std::string out = file;
  if (line != 0) out += ":" + std::to_string(line) + ":" + std::to_string(column);
  if (!key.empty()) out += (out.empty() ? "" : ": ") + key;
  return out + (out.empty() ? "" : ": ") + message;
}

}  // namespace

ConfigError::ConfigError(std::string file, std::string key_path, std::string message,
                         std::size_t line, std::size_t column)
    : std::runtime_error(compose(file, key_path, message, line, column)),
      file_(std::move(file)),
      key_path_(std::move(key_path)),
      message_(std::move(message)),
      line_(line),
      column_(column) {}

namespace {

using config::Field;
using nlohmann::json;

// Every proper prefix of a field path ("link", "link.device_rx", ...): keys that hold objects.
const std::set<std::string>& groups() {
  static const std::set<std::string> out = [] {
    std::set<std::string> g;
    for (const auto& f : config::fields())
      for (auto dot = f.path.find('.'); dot != std::string::npos; dot = f.path.find('.', dot + 1))
        g.insert(f.path.substr(0, dot));
    return g;
  }();
  return out;
}

std::string last_segment(const std::string& path) {
  const auto dot = path.rfind('.');
  return dot == std::string::npos ? path : path.substr(dot + 1);
}

// " (did you mean link.mps?)" for a close known key, or "".
std::string hint_for(const std::string& path) {
  std::string best;
  std::size_t best_distance = std::string::npos;
  auto consider = [&](const std::string& candidate) {
    const auto d = config::edit_distance(path, candidate);
    if (d < best_distance) best_distance = d, best = candidate;
  };
  for (const auto& f : config::fields()) consider(f.path);
  for (const auto& g : groups()) consider(g);
  if (best_distance <= std::max<std::size_t>(2, path.size() / 8))
    return " (did you mean " + best + "?)";
  // The right key at the wrong level ("mps" for "link.mps").
  const std::string leaf = last_segment(path);
  for (const auto& f : config::fields())
    if (last_segment(f.path) == leaf) return " (did you mean " + f.path + "?)";
  return "";
}

std::string shown_kind(const json& v) {
  if (v.is_object()) return "an object";
  if (v.is_array()) return "an array";
  if (v.is_string()) return "string " + v.dump();
  return v.dump();
}

void apply_object(const json& object, const std::string& prefix, SimConfig& config,
                  const std::string& file) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    const std::string path = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (path == "preset") continue;  // the base, applied before everything else
    if (path == "about") continue;   // where the file came from, for its reader (any JSON value)
    if (const Field* f = config::find_field(path)) {
      if (auto error = config::check_value(*f, it.value())) throw ConfigError(file, path, *error);
      f->put(config, it.value());
    } else if (groups().count(path) != 0) {
      if (!it.value().is_object())
        throw ConfigError(file, path, "expected an object, got " + shown_kind(it.value()));
      apply_object(it.value(), path, config, file);
    } else {
      throw ConfigError(file, path, "unknown key" + hint_for(path));
    }
  }
}

void check_cross(const SimConfig& config, const std::string& file) {
  if (auto violation = config::check_cross_fields(config))
    throw ConfigError(file, violation->first, violation->second);
}

// The 1-based line and column of the character at 0-based offset `index` of `text`.
std::pair<std::size_t, std::size_t> line_column(const std::string& text, std::size_t index) {
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < index && i < text.size(); ++i) {
    if (text[i] == '\n')
      ++line, column = 1;
    else
      ++column;
  }
  return {line, column};
}

// nlohmann's parse_error text: "[json.exception.parse_error.101] parse error at line 3,
// column 14: syntax error ...". Returns line, column and the part after them.
std::tuple<std::size_t, std::size_t, std::string> split_parse_error(const json::parse_error& e,
                                                                    const std::string& text) {
  const std::string what = e.what();
  std::size_t line = 0, column = 0;
  const auto at = what.find("at line ");
  if (at != std::string::npos &&
      std::sscanf(what.c_str() + at, "at line %zu, column %zu", &line, &column) == 2) {
    const auto colon = what.find(": ", at);
    return {line, column, colon == std::string::npos ? what : what.substr(colon + 2)};
  }
  // No position in the text (should not happen): count lines up to the byte (nlohmann's, 1-based).
  std::tie(line, column) = line_column(text, e.byte == 0 ? 0 : e.byte - 1);
  const auto colon = what.find("] ");
  return {line, column, colon == std::string::npos ? what : what.substr(colon + 2)};
}

// Parses `text`, rejecting duplicated keys (nlohmann would keep the last one silently).
json parse_strict(const std::string& text, const std::string& file) {
  struct Frame {
    bool is_object;
    std::set<std::string> keys;
    std::string current;
  };
  std::vector<Frame> stack;
  std::optional<std::string> duplicate;
  json::parser_callback_t callback = [&](int, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start: stack.push_back({true, {}, {}}); break;
      case json::parse_event_t::array_start: stack.push_back({false, {}, {}}); break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!stack.empty()) stack.pop_back();
        break;
      case json::parse_event_t::key: {
        if (stack.empty()) break;
        Frame& top = stack.back();
        top.current = parsed.get<std::string>();
        if (!top.keys.insert(top.current).second && !duplicate) {
          std::string path;
          for (const auto& frame : stack)
            if (frame.is_object) path += (path.empty() ? "" : ".") + frame.current;
          duplicate = path;
        }
        break;
      }
      case json::parse_event_t::value: break;
    }
    return true;
  };
  if (const std::size_t at = json_too_deep_at(text); at != std::string_view::npos) {
    const auto [line, column] = line_column(text, at);
    throw ConfigError(file, "", "invalid JSON: " + json_too_deep_message(), line, column);
  }
  json out;
  try {
    out = json::parse(text, callback, /*allow_exceptions=*/true, /*ignore_comments=*/true);
  } catch (const json::parse_error& e) {
    auto [line, column, detail] = split_parse_error(e, text);
    throw ConfigError(file, "", "invalid JSON: " + detail, line, column);
  } catch (const json::out_of_range& e) {  // a number beyond a double ("1e999"): no position
    throw ConfigError(file, "", std::string("invalid JSON: ") + e.what());
  }
  if (duplicate) throw ConfigError(file, *duplicate, "duplicate key");
  return out;
}

}  // namespace

SimConfig load_config(const std::string& path) {
  try {
    return config_from_json(parse_strict(read_input_file(path), path), path);
  } catch (const InputFileError& e) {
    throw ConfigError(e.path(), "", e.why());
  }
}

SimConfig config_from_json(const json& j, const std::string& source_name) {
  if (!j.is_object())
    throw ConfigError(source_name, "",
                      "expected a JSON object at the top level, got " + shown_kind(j));
  SimConfig config;
  if (auto it = j.find("preset"); it != j.end()) {
    if (auto error = config::check_value(*config::find_field("preset"), *it))
      throw ConfigError(source_name, "preset", *error);
    config = config::preset_for(it->get<std::string>(), source_name);
  }
  apply_object(j, "", config, source_name);
  check_cross(config, source_name);
  return config;
}

json to_json(const SimConfig& config) {
  json out = json::object();
  for (const auto& f : config::fields()) {
    std::string pointer = "/" + f.path;
    for (auto& ch : pointer)
      if (ch == '.') ch = '/';
    out[json::json_pointer(pointer)] = f.get(config);
  }
  return out;
}

void validate(const SimConfig& config, const std::string& source_name) {
  for (const auto& f : config::fields())
    if (auto error = config::check_value(f, f.get(config)))
      throw ConfigError(source_name, f.path, *error);
  check_cross(config, source_name);
}

bool operator==(const SimConfig& a, const SimConfig& b) {
  for (const auto& f : config::fields())
    if (f.get(a) != f.get(b)) return false;
  return true;
}

void to_json(json& j, const SimConfig& config) { j = to_json(config); }
void from_json(const json& j, SimConfig& config) { config = config_from_json(j, "<json>"); }

}  // namespace spyre_dma::model
