#include "outputs.hpp"

#include <fmt/core.h>

#include <filesystem>
#include <system_error>

#include "spyre_dma/traces/output_file.hpp"

namespace spyre_dma_cli {

std::string resolved_path(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::weakly_canonical(std::filesystem::absolute(path, ec), ec);
  return ec ? path : p.string();
}

bool check_outputs(std::string_view command, const std::vector<NamedOutput>& outputs,
                   const std::vector<std::string>& inputs) {
  bool ok = true;
  // Two outputs on one file: the second would overwrite the first.
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    for (std::size_t j = i + 1; j < outputs.size(); ++j) {
      if (outputs[i].path.empty() || outputs[j].path.empty()) continue;
      if (resolved_path(outputs[i].path) != resolved_path(outputs[j].path)) continue;
      fmt::print(stderr, "spyre-dma {}: {} '{}' and {} '{}' name the same file: give each its own\n", command,
                 outputs[i].option, outputs[i].path, outputs[j].option, outputs[j].path);
      ok = false;
    }
  }
  for (const NamedOutput& out : outputs) {
    if (out.path.empty()) continue;
    try {
      spyre_dma::traces::check_output_path(out.path, out.option);
      spyre_dma::traces::check_not_an_input(out.path, out.option, inputs);
    } catch (const spyre_dma::traces::OutputError& e) {
      fmt::print(stderr, "spyre-dma {}: {}\n", command, e.what());
      ok = false;
    }
  }
  return ok;
}

}  // namespace spyre_dma_cli
