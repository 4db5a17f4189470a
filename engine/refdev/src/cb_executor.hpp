// Carries out one checked CB (device_core::CbWork) against device memory: the functional heart of
// the reference device, free of threads and registers. The checks themselves are the device
// core's (cb_admission.hpp): by the time a CB gets here nothing can fail but a device page that
// cannot be allocated.
#pragma once

#include "spyre_dma/device_core/cb_admission.hpp"
#include "spyre_dma/device_core/sparse_memory.hpp"

namespace spyre_dma::refdev::detail {

// Moves the CB's bytes (a compute CB moves nothing; the pipeline sleeps if configured) and
// returns its Good outcome. Throws what SparseMemory throws when a page cannot be allocated
// (std::bad_alloc). The work's IOMMU window stays open until the copy is done.
device_core::CbOutcome execute(device_core::CbWork& work, device_core::SparseMemory& memory);

}  // namespace spyre_dma::refdev::detail
