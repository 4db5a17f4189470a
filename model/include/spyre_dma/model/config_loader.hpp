// Loading, checking and dumping the model's configuration (SimConfig).
//
// A configuration is a JSON object whose keys mirror SimConfig ("link": {"mps": 256}, ...). It may
// name a base preset ("preset": "gen4x16"); every key it omits keeps that preset's value (the
// default preset is spyre-gen5x16, the values of a default-constructed SimConfig). Keys are checked
// strictly: an unknown key, a value of the wrong JSON type, a value out of range or a duplicated
// key is a ConfigError naming the file and the dotted key path ("link.mps"). Files may carry
// // and /* */ comments.
//
// One table of fields (model/src/config/config_fields.cpp) drives the loader, to_json(), the
// equality below and the reference in docs/model-config.md (config_reference_markdown()), so the
// documentation cannot drift from the code; a unit test holds the document to the generated text.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "spyre_dma/model/sim_config.hpp"

namespace spyre_dma::model {

// A configuration that cannot be used. what() reads "<file>[:line:column]: <key path>: <message>"
// with the parts that do not apply left out, e.g.
//   "spyre.json: link.mpss: unknown key (did you mean link.mps?)"
//   "spyre.json: link.mps: 500 is out of range (allowed: 128..4096, power of two)"
//   "spyre.json:3:14: invalid JSON: syntax error while parsing object - ..."
class ConfigError : public std::runtime_error {
 public:
  ConfigError(std::string file, std::string key_path, std::string message, std::size_t line = 0,
              std::size_t column = 0);

  const std::string& file() const noexcept { return file_; }          // file or source name
  const std::string& key_path() const noexcept { return key_path_; }  // "" if not about one key
  const std::string& message() const noexcept { return message_; }    // without file and key
  std::size_t line() const noexcept { return line_; }      // 1-based; 0: not a parse error
  std::size_t column() const noexcept { return column_; }  // 1-based; 0: not a parse error

 private:
  std::string file_;
  std::string key_path_;
  std::string message_;
  std::size_t line_;
  std::size_t column_;
};

// Reads and checks a JSON configuration file. Throws ConfigError (missing or unreadable file,
// invalid JSON with its line and column, or any error config_from_json reports).
SimConfig load_config(const std::string& path);

// Checks `json` and resolves it against its base preset. `source_name` is what error messages
// name as the file. Throws ConfigError.
SimConfig config_from_json(const nlohmann::json& json, const std::string& source_name);

// A named preset (see preset_catalog()). Throws ConfigError naming the key "preset" if unknown.
SimConfig preset(const std::string& name);
std::vector<std::string> preset_names();  // in catalog order; the first is the default

struct PresetInfo {
  std::string name;
  std::string summary;  // one line: what it models
  std::string source;   // where its numbers come from
};
std::vector<PresetInfo> preset_catalog();

// The resolved configuration: every field, "preset" included, nested as in the files.
// config_from_json(to_json(c), any) == c for every valid c.
nlohmann::json to_json(const SimConfig& config);

// Runs the loader's checks on a configuration built in code. Throws ConfigError (file
// `source_name`) on the first field that is out of range.
void validate(const SimConfig& config, const std::string& source_name = "<config>");

// Field-by-field equality over every field of the table (doubles compared exactly).
bool operator==(const SimConfig& a, const SimConfig& b);
inline bool operator!=(const SimConfig& a, const SimConfig& b) { return !(a == b); }

// nlohmann::json conversions, so a SimConfig can be embedded directly in result files
// (json{{"config", cfg}}). from_json reports errors with the source name "<json>".
void to_json(nlohmann::json& json, const SimConfig& config);
void from_json(const nlohmann::json& json, SimConfig& config);

// The reference of every key, in the loader's table order.
struct ConfigKeyInfo {
  std::string key;               // dotted path, "link.mps"
  std::string type;              // "uint32", "uint64", "double", "bool", "string"
  nlohmann::json default_value;  // in the default preset (spyre-gen5x16)
  std::string allowed;           // human-readable range, as error messages print it
  std::string unit;              // "bytes", "ns", "GB/s", ... or ""
  std::string description;
};
std::vector<ConfigKeyInfo> config_reference();

// Markdown tables of every key and every preset (its differences from the default and its
// sources): the generated part of docs/model-config.md.
std::string config_reference_markdown();

}  // namespace spyre_dma::model
