// The backend registry: every device backend under one name (refdev, sim, rtl, cuda, ...), with a
// factory, the settings it takes, why it cannot be opened here when it cannot, and its optional
// capabilities. Commands and test benches open backends through it and ask it for capabilities,
// so that adding a backend touches no caller.
//
// Each backend library registers itself with a register function of its own (for example
// spyre_dma::refdev::register_backend); the backends of this build are collected by
// SpyreDma::backends (spyre_dma/backend/builtin.hpp), which also names the backends the project
// has but this build left out, and what building them needs.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "spyre_dma/backend/capabilities.hpp"
#include "spyre_dma/device.hpp"

namespace spyre_dma::backend {

// A backend refused: an unknown or unbuilt name, a setting it does not take or a value it cannot
// use, a device that is not there. The message names the backend, the setting and the value.
class BackendError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// What a backend is opened with.
struct Settings {
  // Named settings, as a command line gives them ("preset", "config", "fidelity", ...): each
  // backend lists those it takes (Backend::settings), any other is refused.
  std::map<std::string, std::string> values;
  // The run's seed, for backends that draw random numbers (the model's fault injection).
  std::optional<std::uint64_t> seed;
  // Merged into the backend's configuration before it opens (JSON merge patch): a regression
  // test's faults. A backend without such a configuration refuses a non-null patch.
  nlohmann::json patch = nullptr;
  // How many devices a run opens together (Registry::open_devices): a simulated server's devices
  // share its host and PCIe tree, so a model backend builds them as one server of this size.
  std::uint32_t devices = 1;

  bool has(const std::string& key) const { return values.count(key) != 0; }
  std::string get(const std::string& key, const std::string& fallback = {}) const {
    const auto it = values.find(key);
    return it == values.end() ? fallback : it->second;
  }
};

struct SettingInfo {
  std::string name;  // as Settings::values keys it (a command line's --name)
  std::string help;
};

// An opened backend: its device, and the capabilities it offers (null where it has none). The
// capabilities belong to the device: use them only while `device` lives.
struct Instance {
  std::shared_ptr<Device> device;
  MemoryBackdoor* memory = nullptr;
  StatisticsSource* statistics = nullptr;
  SimulatedClock* clock = nullptr;
  MisbehaveControl* misbehave = nullptr;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual std::string summary() const = 0;  // one line: what it is
  virtual std::vector<SettingInfo> settings() const { return {}; }
  // Why it cannot be opened on this machine at all ("" when it can): no such device, ...
  virtual std::string unavailable() const { return {}; }
  // The resolved configuration for these settings (every parameter it will run with), for
  // --dump-config and for embedding in result files. Throws BackendError for settings it refuses.
  virtual nlohmann::json configuration(const Settings& settings) const = 0;
  // A fresh device. Throws BackendError for settings it refuses.
  virtual Instance open(const Settings& settings) const = 0;
  // Settings::devices fresh devices that work together, device i at index i. By default they are
  // independent (separate cards: each open()ed on its own); a model backend overrides this to
  // build one server whose devices share its host and PCIe switches.
  virtual std::vector<Instance> open_devices(const Settings& settings) const;
};

class Registry {
 public:
  Registry() = default;
  Registry(Registry&&) = default;
  Registry& operator=(Registry&&) = default;

  // Throws std::logic_error for a name already registered.
  void add(std::unique_ptr<Backend> backend);
  // A backend the project has but this build left out: its summary and what building it needs.
  void add_unbuilt(std::string name, std::string summary, std::string needs);

  std::vector<std::string> names() const;  // the built ones, in registration order
  const Backend* find(const std::string& name) const;  // null unless built
  // Every setting any built backend takes, with the backends that take it, in first-seen order.
  std::vector<std::pair<SettingInfo, std::vector<std::string>>> all_settings() const;

  // "" when `name` opens with `settings`, else why not: an unknown name (listing this build's), a
  // backend this build left out (what it needs), one unavailable here (why), a setting it does not
  // take (naming the backends that do), or the backend's own refusal of a value.
  std::string check(const std::string& name, const Settings& settings) const;
  // These throw BackendError with check()'s message.
  Instance open(const std::string& name, const Settings& settings) const;
  std::vector<Instance> open_devices(const std::string& name, const Settings& settings) const;
  nlohmann::json configuration(const std::string& name, const Settings& settings) const;

  // One line per backend for --help: name, summary, and "(not built: ...)" or "(unavailable: ...)".
  std::string describe() const;

 private:
  struct Unbuilt {
    std::string name;
    std::string summary;
    std::string needs;
  };
  const Backend& checked(const std::string& name, const Settings& settings) const;

  std::vector<std::unique_ptr<Backend>> backends_;
  std::vector<Unbuilt> unbuilt_;
};

}  // namespace spyre_dma::backend
