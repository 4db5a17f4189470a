// The `refdev` backend (see spyre_dma/refdev/backend.hpp).
#include "spyre_dma/refdev/backend.hpp"

#include "spyre_dma/refdev/ref_device.hpp"

namespace spyre_dma::refdev {
namespace {

class RefdevBackend final : public backend::Backend {
 public:
  std::string name() const override { return "refdev"; }
  std::string summary() const override { return "functional reference device: the contract in host threads, wall-clock time"; }

  nlohmann::json configuration(const backend::Settings& s) const override {
    if (!s.patch.is_null()) {
      throw backend::BackendError("backend 'refdev' has no configuration to patch (" + s.patch.dump() +
                                  "): fault injection needs --backend sim or rtl");
    }
    const RefDeviceConfig c;
    return {{"backend", "refdev"},
            {"device_memory_bytes", c.device_memory_bytes},
            {"usable_bytes", c.usable_bytes},
            {"depth", c.depth},
            {"max_cb_bytes", c.max_cb_bytes}};
  }

  backend::Instance open(const backend::Settings& s) const override {
    (void)configuration(s);
    auto device = std::make_shared<RefDevice>();
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
