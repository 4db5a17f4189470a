// The backend registry (see registry.hpp).
#include "spyre_dma/backend/registry.hpp"

#include <algorithm>
#include <sstream>

namespace spyre_dma::backend {
namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

void Registry::add(std::unique_ptr<Backend> backend) {
  const std::string name = backend->name();
  if (find(name)) throw std::logic_error("backend registry: '" + name + "' is registered twice");
  unbuilt_.erase(std::remove_if(unbuilt_.begin(), unbuilt_.end(), [&](const Unbuilt& u) { return u.name == name; }),
                 unbuilt_.end());
  backends_.push_back(std::move(backend));
}

void Registry::add_unbuilt(std::string name, std::string summary, std::string needs) {
  if (find(name)) return;
  unbuilt_.push_back(Unbuilt{std::move(name), std::move(summary), std::move(needs)});
}

std::vector<std::string> Registry::names() const {
  std::vector<std::string> out;
  for (const auto& b : backends_) out.push_back(b->name());
  return out;
}

const Backend* Registry::find(const std::string& name) const {
  for (const auto& b : backends_) {
    if (b->name() == name) return b.get();
  }
  return nullptr;
}

std::vector<std::pair<SettingInfo, std::vector<std::string>>> Registry::all_settings() const {
  std::vector<std::pair<SettingInfo, std::vector<std::string>>> out;
  for (const auto& b : backends_) {
    for (const SettingInfo& s : b->settings()) {
      auto it = std::find_if(out.begin(), out.end(), [&](const auto& e) { return e.first.name == s.name; });
      if (it == out.end()) it = out.insert(out.end(), {s, {}});
      it->second.push_back(b->name());
    }
  }
  return out;
}

const Backend& Registry::checked(const std::string& name, const Settings& settings) const {
  const Backend* b = find(name);
  if (!b) {
    for (const Unbuilt& u : unbuilt_) {
      if (u.name == name) throw BackendError("backend '" + name + "' is not part of this build (it needs " + u.needs + ")");
    }
    throw BackendError("unknown backend '" + name + "' (this build has: " + joined(names()) + ")");
  }
  if (std::string why = b->unavailable(); !why.empty()) {
    throw BackendError("backend '" + name + "' is not available here: " + why);
  }
  const std::vector<SettingInfo> own = b->settings();
  for (const auto& setting : settings.values) {
    const std::string& key = setting.first;  // (a structured binding cannot be captured in C++17)
    const std::string& value = setting.second;
    if (std::any_of(own.begin(), own.end(), [&](const SettingInfo& s) { return s.name == key; })) continue;
    std::vector<std::string> takers;
    for (const auto& [info, backends] : all_settings()) {
      if (info.name == key) takers = backends;
    }
    throw BackendError("--" + key + " '" + value + "' " +
                       (takers.empty() ? "is not a setting of any backend"
                                       : "applies to --backend " + joined(takers) + " only"));
  }
  return *b;
}

std::string Registry::check(const std::string& name, const Settings& settings) const {
  try {
    (void)checked(name, settings).configuration(settings);
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

Instance Registry::open(const std::string& name, const Settings& settings) const {
  return checked(name, settings).open(settings);
}

std::vector<Instance> Registry::open_devices(const std::string& name, const Settings& settings) const {
  return checked(name, settings).open_devices(settings);
}

std::vector<Instance> Backend::open_devices(const Settings& settings) const {
  if (settings.devices == 0) throw BackendError("backend '" + name() + "': 0 devices to open");
  std::vector<Instance> out;
  for (std::uint32_t i = 0; i < settings.devices; ++i) out.push_back(open(settings));
  return out;
}

nlohmann::json Registry::configuration(const std::string& name, const Settings& settings) const {
  return checked(name, settings).configuration(settings);
}

std::string Registry::describe() const {
  std::ostringstream out;
  for (const auto& b : backends_) {
    out << "  " << b->name() << ": " << b->summary();
    if (std::string why = b->unavailable(); !why.empty()) out << " (unavailable here: " << why << ")";
    out << "\n";
  }
  for (const Unbuilt& u : unbuilt_) out << "  " << u.name << ": " << u.summary << " (not built: needs " << u.needs << ")\n";
  return out.str();
}

}  // namespace spyre_dma::backend
