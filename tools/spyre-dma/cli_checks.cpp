#include "cli_checks.hpp"
#include "size_spec.hpp"

#include <fmt/format.h>

#include <cmath>

namespace spyre_dma_cli {

CLI::Validator finite_range(double min, double max) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(text, v)) return fmt::format("'{}' is not a number", text);
        if (!std::isfinite(v)) return fmt::format("{} is not a finite number", text);
        if (v < min || v > max) return fmt::format("{} is outside [{}, {}]", text, min, max);
        return {};
      },
      fmt::format("FINITE in [{}, {}]", min, max));
}

namespace {

// A validator that runs `parse` on the option's text: its exception's words are the usage error.
template <typename Parse>
CLI::Validator parsed_by(Parse parse, const char* name) {
  return CLI::Validator(
      [parse](std::string& v) {
        try {
          (void)parse(v);
          return std::string();
        } catch (const std::exception& e) {
          return std::string(e.what());
        }
      },
      name);
}

}  // namespace

CLI::Validator size_list() {
  return parsed_by([](const std::string& v) { return parse_size_list(v); }, "SIZES");
}

CLI::Validator size_value() {
  return parsed_by([](const std::string& v) { return parse_size(v); }, "SIZE");
}

CLI::Validator timeout_seconds() { return finite_range(0.001, kMaxTimeoutSeconds); }

std::chrono::nanoseconds to_timeout(double seconds) {
  return std::chrono::nanoseconds(static_cast<std::int64_t>(std::llround(seconds * 1e9)));
}

void refuse_negative_unsigned(CLI::App& app) {
  static const CLI::Validator not_negative(
      [](const std::string& value) -> std::string {
        const auto first = value.find_first_not_of(" \t");
        if (first != std::string::npos && value[first] == '-') return "'" + value + "' is negative: expected 0 or more";
        return {};
      },
      "", "not negative");
  for (CLI::Option* option : app.get_options()) {
    if (option->get_type_name().rfind("UINT", 0) == 0) option->check(not_negative);
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) refuse_negative_unsigned(*sub);
}

}  // namespace spyre_dma_cli
