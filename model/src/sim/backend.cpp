// The model's backends (see spyre_dma/model/backend.hpp).
#include "spyre_dma/model/backend.hpp"

#include "spyre_dma/model/config_loader.hpp"
#include "spyre_dma/model/sim_device.hpp"
#include "spyre_dma/model/sim_node.hpp"
#include "base/debug_hooks.hpp"
#include "sim/node_simulation.hpp"

namespace spyre_dma::model {

using backend::BackendError;

std::vector<backend::SettingInfo> SimBackend::settings() const {
  std::string presets;
  for (const std::string& p : preset_names()) presets += (presets.empty() ? "" : ", ") + p;
  return {{"preset", "sim and rtl: a model preset (" + presets + ")"},
          {"config", "sim and rtl: a model configuration file (JSON; it may name its own preset)"},
          {"fidelity", "sim and rtl: tlp or burst, overriding the configuration"},
          {"trace", "sim and rtl: write a Perfetto / chrome://tracing trace of the run's CBs"},
          {"wave", "sim: write a waveform of the model's state (.vcd or .fst): CBs queued, read tags and "
                   "credits in use"},
          {"debug-hook", "sim and rtl, a bench's self-test: build the model with this deliberate bug (" +
                             debug_hook_list() + "; model/src/sim/debug_hooks.hpp)"}};
}

SimConfig SimBackend::sim_config(const backend::Settings& s) const {
  try {
    const std::string file = s.get("config"), preset_name = s.get("preset");
    if (!file.empty() && !preset_name.empty()) {
      throw ConfigError("", "preset", "give --preset or --config, not both (a file names its preset itself)");
    }
    SimConfig c = file.empty() ? preset(preset_name.empty() ? preset_names().front() : preset_name) : load_config(file);
    if (s.has("fidelity")) {
      const std::string f = s.get("fidelity");
      if (f != "tlp" && f != "burst") throw ConfigError("", "fidelity", "--fidelity '" + f + "': expected tlp or burst");
      c.fidelity = f == "tlp" ? Fidelity::kTlp : Fidelity::kBurst;
    }
    c.data_path = data_path_;
    if (s.seed) c.seed = *s.seed;
    if (s.devices > 1) c.topology.devices = s.devices;
    if (!s.patch.is_null()) {
      nlohmann::json j = to_json(c);
      j.merge_patch(s.patch);
      c = config_from_json(j, "backend '" + name_ + "' settings");
    }
    validate(c, "backend '" + name_ + "'");
    if (s.has("debug-hook") && !debug_hook_named(s.get("debug-hook"))) {
      throw BackendError("--debug-hook '" + s.get("debug-hook") + "': no such hook (have: " + debug_hook_list() + ")");
    }
    return c;
  } catch (const BackendError&) {
    throw;
  } catch (const std::exception& e) {
    throw BackendError(e.what());
  }
}

nlohmann::json SimBackend::configuration(const backend::Settings& s) const { return to_json(sim_config(s)); }

namespace {
backend::Instance instance_of(std::shared_ptr<SimDevice> device) {
  backend::Instance i;
  i.memory = device.get();
  i.statistics = device.get();
  i.clock = device.get();
  i.misbehave = device.get();
  i.device = std::move(device);
  return i;
}
}  // namespace

backend::Instance SimBackend::open(const backend::Settings& s) const {
  const SimConfig c = sim_config(s);
  const ScopedDebugHook hook(s.get("debug-hook"));  // the components copy the hooks as they are built
  try {
    return instance_of(std::make_shared<SimDevice>(c, s.get("trace"), s.get("wave")));
  } catch (const SimulationBusy& e) {  // a refusal of this open, as the backend's other refusals
    throw backend::BackendError("backend '" + name() + "': " + e.what());
  }
}

std::vector<backend::Instance> SimBackend::open_devices(const backend::Settings& s) const {
  if (s.devices <= 1) return {open(s)};
  const ScopedDebugHook hook(s.get("debug-hook"));
  try {
    return open_server(sim_config(s), s.get("trace"), s.get("wave"));  // topology.devices is s.devices
  } catch (const SimulationBusy& e) {
    throw backend::BackendError("backend '" + name() + "': " + e.what());
  }
}

std::vector<backend::Instance> open_server(const SimConfig& config, const std::string& trace_path,
                                           const std::string& wave_path) {
  SimNode node(config, trace_path, wave_path);
  std::vector<backend::Instance> out;
  for (std::size_t i = 0; i < node.size(); ++i) out.push_back(instance_of(node.device(i)));
  return out;  // the devices keep their server's simulation alive
}

void register_backend(backend::Registry& registry) {
  registry.add(std::make_unique<SimBackend>(
      "sim", "SystemC TLM-2.0 model of the card (PCIe link at TLP fidelity, the SystemC data path); simulated time",
      DataPathKind::kSystemC));
}

}  // namespace spyre_dma::model
