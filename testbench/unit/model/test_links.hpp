// The link parameters the PCIe arithmetic and timing tests build their cases from: a link of the
// given generation, width, MPS and MRRS, with everything else at LinkParams' defaults (RCB 64,
// 64-bit addressing, no ECRC, DLLP overhead charged), as pcie-bench's published figures assume.
#pragma once

#include <cstdint>

#include "pcie/link_math.hpp"

namespace spyre_dma::model::testing {

inline pcie::LinkParams link(std::uint32_t gen, std::uint32_t lanes, std::uint32_t mps, std::uint32_t mrrs) {
  pcie::LinkParams p;
  p.generation = gen;
  p.lanes = lanes;
  p.mps = mps;
  p.mrrs = mrrs;
  return p;
}

}  // namespace spyre_dma::model::testing
