// Device backends as the tool's commands name them (--backend and its settings), opened through the
// backend registry (spyre_dma/backend/builtin.hpp): every registered backend is reachable from every
// command, and one that is not available says why.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runner.hpp"
#include "spyre_dma/backend/registry.hpp"

namespace CLI {
class App;
}

namespace spyre_dma_cli {

struct BackendOptions {
  std::string name = "refdev";
  // The settings the model backends take (empty: not given): a preset name, a JSON configuration
  // file (which may name its own preset), the fidelity ("tlp" or "burst", overriding the file) and
  // a Perfetto trace to write; rtl: a VCD file of its signals.
  std::string preset;
  std::string config;
  std::string fidelity;
  std::string trace;
  std::string wave{};  // (a default: the callers that list the fields above need not name it)
  // Any other registry setting, by name (cuda: executor, cuda-memory, cuda-device).
  std::map<std::string, std::string> extra{};
  // Devices the command runs on together (--devices; sim and rtl: one server of that many).
  std::uint32_t devices = 1;
};

// Adds --backend and the backends' settings to a command, into `options`: --preset, --config,
// --fidelity, --trace, --wave (the model backends) and --executor, --cuda-memory (a size, as
// --sizes takes them), --cuda-device (cuda). `model_settings` false leaves out --fidelity and
// --trace (a command that uses those names for something else).
void add_backend_options(CLI::App& command, BackendOptions& options, bool model_settings = true);

// The registry's settings for these options (the empty ones left out).
spyre_dma::backend::Settings settings_of(const BackendOptions& options);

// The backends this build can open, in the order --help lists them.
std::vector<std::string> backend_names();
// One line per backend (built, not built, unavailable here) for --help.
std::string backend_help();

// Empty when `name` is a backend of this build, else a message naming the value.
std::string check_backend(const std::string& name);

// Empty when the options fit the backend, else a message naming the option and value (a setting
// the backend does not take, a configuration file that does not load, an unknown preset, a backend
// not built or not available here).
std::string check_backend_options(const BackendOptions& options);

// Opens a fresh device with its capabilities; throws spyre_dma::backend::BackendError for options
// check_backend_options rejects.
spyre_dma::backend::Instance open_backend(const BackendOptions& options);
// Opens options.devices fresh devices together (Registry::open_devices).
std::vector<spyre_dma::backend::Instance> open_backends(const BackendOptions& options);
// Adds --devices N (1..16) to a command, into options.devices.
void add_devices_option(CLI::App& command, BackendOptions& options);

// Opens a fresh device for one regression test: the program's seed and its fault plan go into the
// backend's configuration (a backend that cannot inject faults refuses a plan).
spyre_dma::regress::TestBackend open_test_backend(const BackendOptions& options,
                                                  const spyre_dma::regress::Program& program);
// The same for options.devices devices that run the program together (one server on sim, rtl).
std::vector<spyre_dma::regress::TestBackend> open_test_backends(const BackendOptions& options,
                                                                const spyre_dma::regress::Program& program);

// The resolved configuration of the backend (sim: every model parameter), for --dump-config and
// for embedding in result files.
nlohmann::json backend_config(const BackendOptions& options);

}  // namespace spyre_dma_cli
