#include "backend.hpp"

#include <algorithm>

#include <CLI/CLI.hpp>

#include "cli_checks.hpp"
#include "size_spec.hpp"
#include "spyre_dma/backend/builtin.hpp"

namespace spyre_dma_cli {

namespace be = spyre_dma::backend;

be::Settings settings_of(const BackendOptions& o) {
  be::Settings s;
  for (const auto& [key, value] : {std::pair<const char*, const std::string*>{"preset", &o.preset},
                                   {"config", &o.config}, {"fidelity", &o.fidelity}, {"trace", &o.trace},
                                   {"wave", &o.wave}}) {
    if (!value->empty()) s.values[key] = *value;
  }
  for (const auto& [key, value] : o.extra) {
    if (!value.empty()) s.values[key] = value;
  }
  s.devices = o.devices;
  return s;
}

void add_devices_option(CLI::App& cmd, BackendOptions& o) {
  cmd.add_option("--devices", o.devices,
                 "Run on N devices at once, one engine each (sim, rtl: one simulated server of N devices, "
                 "its PCIe tree from the configuration's topology; other backends: N separate devices)")
      ->capture_default_str()
      ->check(CLI::Range(1, 16));
}

void add_backend_options(CLI::App& cmd, BackendOptions& o, bool model_settings) {
  cmd.add_option("--backend", o.name, "Device backend:\n" + backend_help())
      ->capture_default_str()
      ->check(CLI::Validator([](std::string& v) { return check_backend(v); }, "BACKEND"));
  cmd.add_option("--preset", o.preset, "sim, rtl: model preset");
  cmd.add_option("--config", o.config, "sim, rtl: JSON model configuration file (may name a base preset)");
  if (model_settings) {
    cmd.add_option("--fidelity", o.fidelity, "sim, rtl: tlp (every TLP timed) or burst")
        ->check(CLI::IsMember({"tlp", "burst"}));
    cmd.add_option("--trace", o.trace, "sim, rtl: write a Perfetto / chrome://tracing JSON of the CBs to FILE");
    cmd.add_option("--debug-hook", o.extra["debug-hook"],
                   "sim, rtl: a self-test of the bench: build the model with this deliberate bug (e.g. "
                   "drop_partial_flit_rb, which loses one completion)");
  }
  cmd.add_option("--wave", o.wave,
                 "sim: write a waveform of the model's state (CBs queued, read tags and credits in use); rtl: of "
                 "the RTL data path's signals. FILE ends in .vcd or .fst");
  cmd.add_option("--executor", o.extra["executor"], "cuda: cuda (a GPU's copy engines, the default) or host (memcpy)")
      ->check(CLI::IsMember({"cuda", "host"}));
  cmd.add_option_function<std::string>(
         "--cuda-memory",
         [&o](const std::string& v) { o.extra["cuda-memory"] = std::to_string(parse_size(v)); },
         "cuda: device memory to allocate (e.g. 4GiB)")
      ->check(size_value());
  cmd.add_option("--cuda-device", o.extra["cuda-device"], "cuda: CUDA device ordinal")->check(CLI::NonNegativeNumber);
  cmd.add_option("--vfio-socket", o.extra["vfio-socket"], "vfio-user: the socket of a running `spyre-dma serve`");
  cmd.add_option("--vfio-serve", o.extra["vfio-serve"],
                 "vfio-user: start a private `spyre-dma serve` of this backend for each device");
  cmd.add_option("--vfio-interrupts", o.extra["vfio-interrupts"],
                 "vfio, vfio-user: eventfd (MSI-X on eventfds, the default) or poll (no interrupts)")
      ->check(CLI::IsMember({"eventfd", "poll"}));
  cmd.add_option("--vfio-device", o.extra["vfio-device"],
                 "vfio: the card, by PCI address (0000:3b:00.0) or vendor:device IDs (1014:06a7)");
}

std::vector<std::string> backend_names() { return be::builtin().names(); }

std::string backend_help() { return be::builtin().describe(); }

std::string check_backend(const std::string& name) {
  if (be::builtin().find(name)) return {};
  return be::builtin().check(name, {});
}

std::string check_backend_options(const BackendOptions& o) { return be::builtin().check(o.name, settings_of(o)); }

be::Instance open_backend(const BackendOptions& o) { return be::builtin().open(o.name, settings_of(o)); }

std::vector<be::Instance> open_backends(const BackendOptions& o) {
  return be::builtin().open_devices(o.name, settings_of(o));
}

namespace {
be::Settings test_settings(const BackendOptions& o, const spyre_dma::regress::Program& program) {
  be::Settings s = settings_of(o);
  s.seed = program.seed;
  s.patch = program.faults.config_patch();
  return s;
}
}  // namespace

spyre_dma::regress::TestBackend open_test_backend(const BackendOptions& o, const spyre_dma::regress::Program& program) {
  return be::builtin().open(o.name, test_settings(o, program));
}

std::vector<spyre_dma::regress::TestBackend> open_test_backends(const BackendOptions& o,
                                                                const spyre_dma::regress::Program& program) {
  return be::builtin().open_devices(o.name, test_settings(o, program));
}

nlohmann::json backend_config(const BackendOptions& o) { return be::builtin().configuration(o.name, settings_of(o)); }

}  // namespace spyre_dma_cli
