#include "backend.hpp"

#include <algorithm>
#include <stdexcept>

#include "spyre_dma/refdev/ref_device.hpp"
#ifdef SPYRE_DMA_HAVE_MODEL
#include "spyre_dma/model/config_loader.hpp"
#include "spyre_dma/model/sim_device.hpp"
#endif
#ifdef SPYRE_DMA_HAVE_RTL
#include "spyre_dma/rtl/wave.hpp"
#endif

namespace spyre_dma_cli {

const std::vector<std::string>& backend_names() {
#if defined(SPYRE_DMA_HAVE_MODEL) && defined(SPYRE_DMA_HAVE_RTL)
  static const std::vector<std::string> names{"refdev", "sim", "rtl"};
#elif defined(SPYRE_DMA_HAVE_MODEL)
  static const std::vector<std::string> names{"refdev", "sim"};
#else
  static const std::vector<std::string> names{"refdev"};
#endif
  return names;
}

std::string check_backend(const std::string& name) {
  const auto& names = backend_names();
  if (std::find(names.begin(), names.end(), name) != names.end()) return {};
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  return "unknown backend '" + name + "' (this build has: " + list + ")";
}

#ifdef SPYRE_DMA_HAVE_MODEL
namespace {
spyre_dma::model::SimConfig sim_config(const BackendOptions& o) {
  using namespace spyre_dma::model;
  SimConfig c = o.config.empty() ? preset(o.preset.empty() ? preset_names().front() : o.preset)
                                 : load_config(o.config);
  if (!o.config.empty() && !o.preset.empty()) {
    throw ConfigError("", "preset", "give --preset or --config, not both (a file names its preset itself)");
  }
  if (!o.fidelity.empty()) {
    if (o.fidelity != "tlp" && o.fidelity != "burst") {
      throw ConfigError("", "fidelity", "--fidelity '" + o.fidelity + "': expected tlp or burst");
    }
    c.fidelity = o.fidelity == "tlp" ? Fidelity::kTlp : Fidelity::kBurst;
  }
  // rtl: the same model with the RTL controller in place of the SystemC one.
  if (o.name == "rtl") c.controller = Controller::kRtl;
  return c;
}
}  // namespace
#endif

std::string check_backend_options(const BackendOptions& o) {
  if (std::string e = check_backend(o.name); !e.empty()) return e;
  if (o.name != "sim" && o.name != "rtl") {
    for (const auto& [flag, value] : {std::pair<const char*, const std::string*>{"--preset", &o.preset},
                                      {"--config", &o.config}, {"--fidelity", &o.fidelity}, {"--trace", &o.trace}}) {
      if (!value->empty()) return std::string(flag) + " '" + *value + "' applies to --backend sim or rtl only";
    }
    if (!o.wave.empty()) return "--wave '" + o.wave + "' applies to --backend rtl only";
    return {};
  }
  if (o.name != "rtl" && !o.wave.empty()) return "--wave '" + o.wave + "' applies to --backend rtl only";
#ifdef SPYRE_DMA_HAVE_MODEL
  try {
    (void)sim_config(o);
  } catch (const std::exception& e) {
    return e.what();
  }
#endif
  return {};
}

std::shared_ptr<spyre_dma::Device> open_backend(const BackendOptions& o) {
  if (std::string e = check_backend_options(o); !e.empty()) throw std::invalid_argument(e);
  if (o.name == "refdev") return std::make_shared<spyre_dma::refdev::RefDevice>();
#ifdef SPYRE_DMA_HAVE_RTL
  spyre_dma::rtl::set_wave_file(o.wave);
#endif
#ifdef SPYRE_DMA_HAVE_MODEL
  return std::make_shared<spyre_dma::model::SimDevice>(sim_config(o), o.trace);
#else
  throw std::invalid_argument(check_backend(o.name));
#endif
}

spyre_dma::regress::TestBackend open_test_backend(const BackendOptions& o,
                                                  const spyre_dma::regress::Program& program) {
  if (std::string e = check_backend_options(o); !e.empty()) throw std::invalid_argument(e);
  spyre_dma::regress::TestBackend b;
  const spyre_dma::regress::FaultPlan& f = program.faults;
  if (o.name == "refdev") {
    if (f.any()) throw std::invalid_argument("fault injection needs --backend sim (refdev injects no PCIe faults)");
    auto dev = std::make_shared<spyre_dma::refdev::RefDevice>();
    b.memory = &dev->memory();
    b.device = dev;
    return b;
  }
#ifdef SPYRE_DMA_HAVE_MODEL
  spyre_dma::model::SimConfig c = sim_config(o);
  c.seed = program.seed;
  c.faults.poisoned_rate = f.poisoned_rate;
  c.faults.unsupported_request_rate = f.unsupported_request_rate;
  c.faults.completer_abort_rate = f.completer_abort_rate;
  c.faults.dropped_completion_rate = f.dropped_completion_rate;
  c.faults.iommu_fault_rate = f.iommu_fault_rate;
  c.faults.malformed_cb_rate = f.malformed_cb_rate;
  c.faults.device_reset_rate = f.device_reset_rate;
  if (f.lcrc_rate > 0) c.link.lcrc_error_rate = f.lcrc_rate;
  if (f.at_cb > 0) {
    c.faults.at_cb = f.at_cb;
    c.faults.at_cb_fault = f.at_cb_fault;
  }
  if (o.name == "rtl" && f.any()) {
    throw std::invalid_argument("fault injection needs --backend sim (the RTL controller injects no faults)");
  }
  spyre_dma::model::validate(c);
#ifdef SPYRE_DMA_HAVE_RTL
  spyre_dma::rtl::set_wave_file(o.wave);
#endif
  auto dev = std::make_shared<spyre_dma::model::SimDevice>(c, o.trace);
  b.memory = &dev->memory();
  b.statistics = [d = dev.get()] { return d->statistics(); };
  b.now_ns = [d = dev.get()] { return d->now_ns(); };
  b.device = dev;
  return b;
#else
  throw std::invalid_argument(check_backend(o.name));
#endif
}

nlohmann::json backend_config(const BackendOptions& o) {
#ifdef SPYRE_DMA_HAVE_MODEL
  if (o.name == "sim" || o.name == "rtl") return spyre_dma::model::to_json(sim_config(o));
#endif
  spyre_dma::refdev::RefDeviceConfig c;
  return {{"backend", o.name},
          {"device_memory_bytes", c.device_memory_bytes},
          {"usable_bytes", c.usable_bytes},
          {"depth", c.depth},
          {"max_cb_bytes", c.max_cb_bytes}};
}

nlohmann::json device_statistics(spyre_dma::Device& device) {
#ifdef SPYRE_DMA_HAVE_MODEL
  if (auto* sim = dynamic_cast<spyre_dma::model::SimDevice*>(&device)) return sim->statistics();
#endif
  (void)device;
  return nullptr;
}

}  // namespace spyre_dma_cli
