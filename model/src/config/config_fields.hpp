// The table of configuration fields: one row per leaf key of SimConfig with its JSON type, its
// allowed values, unit, meaning and accessors. The loader, to_json(), operator== and the generated
// reference all read this table and nothing else.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "spyre_dma/model/sim_config.hpp"

namespace spyre_dma::model::config {

enum class ValueType : std::uint8_t { kBool, kUint32, kUint64, kDouble, kString };

const char* type_name(ValueType type);

// What values a field accepts beyond its JSON type. describe() is the text both the error
// messages and the reference print.
struct Rule {
  enum class Kind : std::uint8_t {
    kAny,        // any value of the type
    kIntRange,   // ilo..ihi
    kPow2,       // ilo..ihi and a power of two
    kMultiple,   // ilo..ihi and a multiple of step
    kOneOf,      // one of values
    kMask,       // no bit outside step
    kRealRange,  // rlo..rhi (lo_open: > rlo); rhi may be +inf
    kNames,      // one of names (strings)
  };
  Kind kind = Kind::kAny;
  std::uint64_t ilo = 0;
  std::uint64_t ihi = 0;
  std::uint64_t step = 0;
  double rlo = 0.0;
  double rhi = 0.0;
  bool lo_open = false;
  bool or_zero = false;  // kRealRange: 0 is allowed too (a setting whose 0 means "none")
  std::vector<std::uint64_t> values;
  std::vector<std::string> names;
};

Rule any();
Rule int_range(std::uint64_t lo, std::uint64_t hi);
Rule pow2(std::uint64_t lo, std::uint64_t hi);
Rule multiple_of(std::uint64_t step, std::uint64_t lo, std::uint64_t hi);
Rule one_of(std::vector<std::uint64_t> values);
Rule mask(std::uint64_t bits);
Rule non_negative();   // >= 0
Rule positive();       // > 0
Rule unit_interval();  // 0..1
Rule names(std::vector<std::string> names);

std::string describe(const Rule& rule, ValueType type);

struct Field {
  std::string path;  // "link.mps"
  ValueType type = ValueType::kUint32;
  Rule rule;
  std::string unit;
  std::string doc;
  std::function<nlohmann::json(const SimConfig&)> get;
  // Stores a value that has passed check_value().
  std::function<void(SimConfig&, const nlohmann::json&)> put;
};

// Every field, in documentation order. "preset" is the first row.
const std::vector<Field>& fields();
const Field* find_field(const std::string& path);

// Type and range check of one JSON value for `field`. Returns the error message (without file
// and key) or nothing.
std::optional<std::string> check_value(const Field& field, const nlohmann::json& value);

// Checks between fields (credits against MPS, usable against installed memory). Returns the key
// path and message of the first violation.
std::optional<std::pair<std::string, std::string>> check_cross_fields(const SimConfig& config);

// The preset `name`, or a ConfigError naming `file` and the key "preset" (presets.cpp).
SimConfig preset_for(const std::string& name, const std::string& file);

// Levenshtein distance, for "did you mean" hints.
std::size_t edit_distance(const std::string& a, const std::string& b);

}  // namespace spyre_dma::model::config
