// The configuration reference generated from the field table and the preset catalog: the
// tables of docs/model-config.md (kept identical by config_reference_test).
#include <string>
#include <vector>

#include "config/config_fields.hpp"
#include "spyre_dma/model/config_loader.hpp"

namespace spyre_dma::model {

namespace {

std::string cell(std::string text) {
  std::string out;
  for (char ch : text) {
    if (ch == '|')
      out += "\\|";
    else
      out += ch;
  }
  return out;
}

// "67108864 (64 MiB)" for byte counts that are whole KiB, MiB or GiB.
std::string shown_default(const nlohmann::json& value, const std::string& unit) {
  std::string out = "`" + value.dump() + "`";
  if (unit != "bytes" || !value.is_number_unsigned()) return out;
  const auto v = value.get<std::uint64_t>();
  static const std::pair<std::uint64_t, const char*> units[] = {
      {1ull << 30, "GiB"}, {1ull << 20, "MiB"}, {1ull << 10, "KiB"}};
  for (const auto& [size, name] : units)
    if (v >= size && v % size == 0) return out + " (" + std::to_string(v / size) + " " + name + ")";
  return out;
}

}  // namespace

std::vector<ConfigKeyInfo> config_reference() {
  const SimConfig defaults;
  std::vector<ConfigKeyInfo> out;
  for (const auto& f : config::fields())
    out.push_back({f.path, config::type_name(f.type), f.get(defaults),
                   config::describe(f.rule, f.type), f.unit, f.doc});
  return out;
}

std::string config_reference_markdown() {
  std::string md;
  md += "### Keys\n\n";
  md += "| Key | Type | Default | Allowed | Unit | Meaning |\n";
  md += "|---|---|---|---|---|---|\n";
  for (const auto& k : config_reference())
    md += "| `" + k.key + "` | " + k.type + " | " + cell(shown_default(k.default_value, k.unit)) +
          " | " + cell(k.allowed) + " | " + cell(k.unit) + " | " + cell(k.description) + " |\n";

  md += "\n### Presets\n\n";
  md += "| Preset | What it models | Differences from the defaults | Source of the numbers |\n";
  md += "|---|---|---|---|\n";
  const SimConfig defaults;
  for (const auto& p : preset_catalog()) {
    const SimConfig c = preset(p.name);
    std::string diff;
    for (const auto& f : config::fields()) {
      if (f.path == "preset") continue;
      const auto value = f.get(c);
      if (value != f.get(defaults))
        diff += (diff.empty() ? "" : ", ") + ("`" + f.path + "` " + value.dump());
    }
    if (diff.empty()) diff = "none (the defaults)";
    md += "| `" + p.name + "` | " + cell(p.summary) + " | " + cell(diff) + " | " + cell(p.source) +
          " |\n";
  }
  return md;
}

}  // namespace spyre_dma::model
