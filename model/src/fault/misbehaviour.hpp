// When the controller breaks the ring contract on purpose (FaultConfig::misbehave): the kind, and
// whether the CB being started is the one it happens at. Deterministic: CBs are counted in the
// order the controller starts them, which the SystemC kernel fixes.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "spyre_dma/model/sim_config.hpp"
#include "spyre_dma/refdev/misbehave.hpp"

namespace spyre_dma::model {

class Misbehaviour {
 public:
  // Throws std::invalid_argument for a kind that misbehave.hpp does not name.
  explicit Misbehaviour(const MisbehaveConfig& c) : at_cb_(c.at_cb) {
    const auto kind = refdev::misbehave_kind_from(c.kind);
    if (!kind) throw std::invalid_argument("faults.misbehave.kind: \"" + c.kind + "\" is not a misbehaviour");
    config_.kind = *kind;
    config_.at_cb = c.at_cb;
    config_.rogue_iova = c.rogue_iova;
    config_.rogue_device_offset = c.rogue_device_offset;
  }

  bool enabled() const noexcept { return config_.kind != refdev::MisbehaveKind::kNone && at_cb_ != 0; }
  refdev::MisbehaveKind kind() const noexcept { return config_.kind; }
  const refdev::Misbehave& config() const noexcept { return config_; }

  // The controller starts a CB: true when this is the one (once per run).
  bool cb_started() noexcept {
    if (!enabled() || started_ >= at_cb_) return false;
    if (++started_ != at_cb_) return false;
    ++fired_;
    return true;
  }
  std::uint64_t fired() const noexcept { return fired_; }

 private:
  refdev::Misbehave config_;
  std::uint64_t at_cb_ = 0;
  std::uint64_t started_ = 0;
  std::uint64_t fired_ = 0;
};

}  // namespace spyre_dma::model
