// Device backends the tool can open by name (--backend), with the options that shape them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runner.hpp"
#include "spyre_dma/device.hpp"

namespace spyre_dma_cli {

struct BackendOptions {
  std::string name = "refdev";
  // sim and rtl: a preset name, a JSON configuration file (which may name its own preset), the
  // fidelity ("tlp" or "burst", overriding the file) and a Perfetto trace to write.
  std::string preset;
  std::string config;
  std::string fidelity;
  std::string trace;
  // rtl only: a VCD file of the RTL controller's signals (empty: none).
  std::string wave{};  // (a default: the callers that list the fields above need not name it)
};

// The names this build can open, in the order --help lists them.
const std::vector<std::string>& backend_names();

// Empty when `name` is a backend of this build, else a message naming the value.
std::string check_backend(const std::string& name);

// Empty when the options fit the backend, else a message naming the option and value (sim-only
// options on refdev, a configuration file that does not load, an unknown preset).
std::string check_backend_options(const BackendOptions& options);

// Opens a fresh device; throws std::invalid_argument for options check_backend_options rejects.
std::shared_ptr<spyre_dma::Device> open_backend(const BackendOptions& options);

// Opens a fresh device for one regression test: the program's seed and (sim) its fault plan go
// into the model's configuration; the memory backdoor and statistics come with it. Throws
// std::invalid_argument for options check_backend_options rejects, and for a fault plan on a
// backend that cannot inject faults.
spyre_dma::regress::TestBackend open_test_backend(const BackendOptions& options,
                                                  const spyre_dma::regress::Program& program);

// The resolved configuration of the backend (sim: every model parameter), for --dump-config and
// for embedding in result files.
nlohmann::json backend_config(const BackendOptions& options);

// What the device itself reports about the run (sim: its statistics tree), or null.
nlohmann::json device_statistics(spyre_dma::Device& device);

}  // namespace spyre_dma_cli
