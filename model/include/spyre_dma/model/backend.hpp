// The model's backends in the backend registry (spyre_dma/backend/registry.hpp).
#pragma once

#include <string>
#include <vector>

#include "spyre_dma/backend/registry.hpp"
#include "spyre_dma/model/sim_config.hpp"

namespace spyre_dma::model {

// A SimDevice backend: settings preset, config (a JSON configuration file), fidelity (tlp or
// burst) and trace (a Perfetto trace file); a Settings::patch merges into the configuration (a
// regression test's faults), Settings::seed becomes SimConfig::seed, and Settings::devices, where
// above 1, topology.devices (open_devices builds them as one SimNode). Its capabilities: memory
// backdoor, statistics, simulated clock, misbehaviour. `sim` is this with the SystemC data path;
// the RTL library derives `rtl` from it.
class SimBackend : public backend::Backend {
 public:
  SimBackend(std::string name, std::string summary, DataPathKind data_path)
      : name_(std::move(name)), summary_(std::move(summary)), data_path_(data_path) {}

  std::string name() const override { return name_; }
  std::string summary() const override { return summary_; }
  std::vector<backend::SettingInfo> settings() const override;
  nlohmann::json configuration(const backend::Settings& settings) const override;
  backend::Instance open(const backend::Settings& settings) const override;
  std::vector<backend::Instance> open_devices(const backend::Settings& settings) const override;

  // The resolved configuration; throws backend::BackendError naming the setting, file and key.
  SimConfig sim_config(const backend::Settings& settings) const;

 private:
  std::string name_;
  std::string summary_;
  DataPathKind data_path_;
};

// Every device of a simulated server of `config` (a SimNode of config.topology.devices), each as
// the registry opens a sim device: what replay_together() and an engine per device take. The
// devices keep their server's simulation alive. `trace_path` and `wave_path` as SimNode's.
std::vector<backend::Instance> open_server(const SimConfig& config, const std::string& trace_path = {},
                                           const std::string& wave_path = {});

// Registers `sim`.
void register_backend(backend::Registry& registry);

}  // namespace spyre_dma::model
