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
    for (backend::SettingInfo& i : s) {
      if (i.name == "wave") i.help = "rtl: write a waveform of the RTL data path's signals (.vcd or .fst)";
    }
    return s;
  }
  nlohmann::json configuration(const backend::Settings& s) const override { return SimBackend::configuration(without_wave(s)); }
  backend::Instance open(const backend::Settings& s) const override {
    set_wave_file(s.get("wave"));
    return SimBackend::open(without_wave(s));
  }

 private:
  // The model's own settings: on rtl the wave file is the RTL's signals, not the model's state.
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
