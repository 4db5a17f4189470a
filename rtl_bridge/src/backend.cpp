// The `rtl` backend and the RTL data path's registration (see spyre_dma/rtl/backend.hpp).
#include "spyre_dma/rtl/backend.hpp"

#include "rtl_data_path.hpp"
#include "spyre_dma/model/backend.hpp"
#include "spyre_dma/rtl/wave.hpp"

namespace spyre_dma::rtl {
namespace {

class RtlBackend final : public model::SimBackend {
 public:
  RtlBackend()
      : SimBackend("rtl", "the SystemC model with the DMA controller's data path as verilated RTL; simulated time",
                   model::DataPathKind::kRtl) {}

  std::vector<backend::SettingInfo> settings() const override {
    std::vector<backend::SettingInfo> s = SimBackend::settings();
    s.push_back({"wave", "rtl: write a VCD file of the RTL's signals"});
    return s;
  }
  nlohmann::json configuration(const backend::Settings& s) const override { return SimBackend::configuration(without_wave(s)); }
  backend::Instance open(const backend::Settings& s) const override {
    set_wave_file(s.get("wave"));
    return SimBackend::open(without_wave(s));
  }

 private:
  // The model's own settings: the wave file is this backend's.
  static backend::Settings without_wave(backend::Settings s) {
    s.values.erase("wave");
    return s;
  }
};

}  // namespace

void register_data_path() {
  model::register_data_path(model::to_string(model::DataPathKind::kRtl), [](const model::DataPathContext& c) {
    return std::make_unique<RtlDataPath>(c, wave_file());
  });
}

void register_backend(backend::Registry& registry) {
  register_data_path();
  registry.add(std::make_unique<RtlBackend>());
}

}  // namespace spyre_dma::rtl
