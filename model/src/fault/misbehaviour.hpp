// When the controller breaks the ring contract on purpose (FaultConfig::misbehave): the device
// core's trigger (spyre_dma/device_core/misbehave.hpp), armed from the configuration. Deterministic:
// CBs are counted in the order the controller starts them, which the SystemC kernel fixes.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "spyre_dma/device_core/misbehave.hpp"
#include "spyre_dma/model/sim_config.hpp"

namespace spyre_dma::model {

class Misbehaviour {
 public:
  // Throws std::invalid_argument for a kind that misbehave.hpp does not name.
  explicit Misbehaviour(const MisbehaveConfig& c) {
    const auto kind = device_core::misbehave_kind_from(c.kind);
    if (!kind) throw std::invalid_argument("faults.misbehave.kind: \"" + c.kind + "\" is not a misbehaviour");
    device_core::Misbehave m;
    m.kind = *kind;
    m.at_cb = c.at_cb;
    m.rogue_iova = c.rogue_iova;
    m.rogue_device_offset = c.rogue_device_offset;
    trigger_.arm(m);
  }

  void arm(const device_core::Misbehave& m) noexcept { trigger_.arm(m); }
  // Armed: a kind and a CB to fire at.
  bool enabled() const noexcept {
    const device_core::Misbehave m = trigger_.armed();
    return m.kind != device_core::MisbehaveKind::kNone && m.at_cb != 0;
  }
  device_core::MisbehaveKind kind() const noexcept { return trigger_.armed().kind; }
  device_core::Misbehave config() const noexcept { return trigger_.armed(); }
  // The controller starts a CB: true when this is the one (once per run).
  bool cb_started() noexcept { return trigger_.cb_started(); }
  std::uint64_t fired() const noexcept { return trigger_.fired(); }

 private:
  device_core::MisbehaveTrigger trigger_;
};

}  // namespace spyre_dma::model
