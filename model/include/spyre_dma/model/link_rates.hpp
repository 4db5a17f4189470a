// What a configured PCIe link carries, for tools outside the model (a calibration's bounds, a
// report): the arithmetic is the model's own (docs/model-pcie.md, "Rates").
#pragma once

#include "spyre_dma/model/sim_config.hpp"

namespace spyre_dma::model {

// One direction's raw rate in GB/s: GT/s x encoding x lanes / 8.
double raw_gbps(const LinkConfig& link);
// What is left for TLPs after the DLLP and SKP share pcie-bench charges (link.dllp_overhead).
double tlp_gbps(const LinkConfig& link);

}  // namespace spyre_dma::model
