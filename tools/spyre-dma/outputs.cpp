#include "outputs.hpp"

#include <fmt/core.h>

#include "spyre_dma/traces/output_file.hpp"

namespace spyre_dma_cli {

bool check_outputs(std::string_view command, const std::vector<NamedOutput>& outputs,
                   const std::vector<std::string>& inputs) {
  bool ok = true;
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
