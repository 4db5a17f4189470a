// SystemC keeps one global simulation context per process. A model instance (a SimDevice, or a
// test bench that elaborates components itself) starts from a fresh one, so that several run one
// after another in one process. One at a time: SystemC's kernel is not thread-safe.
#pragma once

namespace spyre_dma::model {

// Replaces the current simulation context with a new one (the old one is kept alive, since
// SystemC objects of an earlier run may still refer to it) and silences the banner and the
// "no activity" warning of an sc_start() with nothing to do.
void fresh_kernel();

}  // namespace spyre_dma::model
