// A capture on the model, for the tests of host time: a preset at burst fidelity, and an engine on
// a SimDevice of it whose every op a TraceRecorder records (device and host times).
#pragma once

#include <memory>

#include "spyre_dma/engine.hpp"
#include "spyre_dma/model/config_loader.hpp"
#include "spyre_dma/model/sim_device.hpp"
#include "spyre_dma/traces/recorder.hpp"

namespace spyre_dma::test {

inline spyre_dma::model::SimConfig burst_config(const char* preset = "spyre-gen5x16") {
  auto c = spyre_dma::model::preset(preset);
  c.fidelity = spyre_dma::model::Fidelity::kBurst;
  return c;
}

struct RecordedEngine {
  std::shared_ptr<spyre_dma::traces::TraceRecorder> recorder = std::make_shared<spyre_dma::traces::TraceRecorder>();
  std::unique_ptr<spyre_dma::Engine> engine;
};

inline RecordedEngine recorded_engine(const spyre_dma::model::SimConfig& config = burst_config()) {
  RecordedEngine r;
  spyre_dma::EngineOptions options;
  options.observer = r.recorder;
  r.engine = spyre_dma::Engine::open(std::make_shared<spyre_dma::model::SimDevice>(config), options);
  return r;
}

}  // namespace spyre_dma::test
