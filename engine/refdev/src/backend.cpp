// The `refdev` backend (see spyre_dma/refdev/backend.hpp).
#include "spyre_dma/refdev/backend.hpp"

#include "spyre_dma/refdev/ref_device.hpp"

namespace spyre_dma::refdev {
namespace {

// The device section of a configuration patch, in the model's keys (what a test that shapes its
// device writes for every backend): depth, max_cb_bytes, memory_bytes, usable_bytes, capabilities;
// and refdev's own honour_compute_time.
RefDeviceConfig config_of(const nlohmann::json& patch) {
  RefDeviceConfig c;
  if (patch.is_null()) return c;
  const auto device = patch.is_object() ? patch.find("device") : patch.end();
  if (!patch.is_object() || patch.size() != 1 || device == patch.end() || !device->is_object()) {
    throw backend::BackendError("backend 'refdev' takes only a device section in a configuration patch (" +
                                patch.dump() + "): fault injection needs --backend sim or rtl");
  }
  for (const auto& [key, value] : device->items()) {
    try {
      if (key == "depth") {
        static constexpr const char* kNames[] = {"compute", "dmai", "dmao"};
        for (unsigned p = 0; p < hw::kNumPipelines; ++p) {
          if (value.contains(kNames[p])) c.depth[p] = value.at(kNames[p]).get<std::uint32_t>();
        }
      } else if (key == "max_cb_bytes") {
        c.max_cb_bytes = value.get<std::uint32_t>();
      } else if (key == "memory_bytes") {
        c.device_memory_bytes = value.get<std::uint64_t>();
      } else if (key == "usable_bytes") {
        c.usable_bytes = value.get<std::uint64_t>();
      } else if (key == "capabilities") {
        c.capabilities = value.get<std::uint64_t>();
      } else if (key == "honour_compute_time") {  // refdev's own: a COMPUTE CB sleeps its duration
        c.honour_compute_time = value.get<bool>();
      } else {
        throw backend::BackendError("backend 'refdev': device." + key +
                                    " is not one of its settings (depth, max_cb_bytes, memory_bytes, usable_bytes, "
                                    "capabilities, honour_compute_time)");
      }
    } catch (const nlohmann::json::exception&) {
      throw backend::BackendError("backend 'refdev': device." + key + " has a value it cannot use: " + value.dump());
    }
  }
  try {
    device_core::validate(c.identity(), "backend 'refdev'");
  } catch (const std::invalid_argument& e) {
    throw backend::BackendError(e.what());
  }
  return c;
}

class RefdevBackend final : public backend::Backend {
 public:
  std::string name() const override { return "refdev"; }
  std::string summary() const override { return "functional reference device: the contract in host threads, wall-clock time"; }

  nlohmann::json configuration(const backend::Settings& s) const override {
    const RefDeviceConfig c = config_of(s.patch);
    return {{"backend", "refdev"},
            {"device_memory_bytes", c.device_memory_bytes},
            {"usable_bytes", c.usable_bytes},
            {"depth", c.depth},
            {"max_cb_bytes", c.max_cb_bytes}};
  }

  backend::Instance open(const backend::Settings& s) const override {
    auto device = std::make_shared<RefDevice>(config_of(s.patch));
    backend::Instance i;
    i.memory = device.get();
    i.misbehave = device.get();
    i.device = std::move(device);
    return i;
  }
};

}  // namespace

void register_backend(backend::Registry& registry) { registry.add(std::make_unique<RefdevBackend>()); }

}  // namespace spyre_dma::refdev
