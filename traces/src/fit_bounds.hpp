// The physical bounds of the parameters a calibration fits: what each parameter stands for allows
// no value outside them, whatever a trace asks for (docs/traces.md, "Calibrate"). A fit searches
// inside them only, and says so when it ends on one.
#pragma once

#include <optional>
#include <string>

#include "spyre_dma/model/sim_config.hpp"

namespace spyre_dma::traces::detail {

struct PhysicalBounds {
  double lo = 0;
  double hi = 0;
  std::string why;  // what the parameter stands for, and where its bounds come from
};

// The bounds of configuration key `key` (or the replay's staging piece) on the link of `base`;
// nullopt for a key this table does not know (a fit then keeps to its search range, and says so).
std::optional<PhysicalBounds> physical_bounds(const std::string& key, const spyre_dma::model::SimConfig& base);

}  // namespace spyre_dma::traces::detail
