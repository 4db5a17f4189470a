// SystemC keeps one global simulation context per process. A model instance (a SimDevice, or a
// test bench that elaborates components itself) starts from a fresh one, so that several run one
// after another in one process. One at a time: SystemC's kernel is not thread-safe.
#pragma once

namespace spyre_dma::model {

// Replaces the current simulation context with a new one (the old one is kept alive, since
// SystemC objects of an earlier run may still refer to it) and silences the banner and the
// "no activity" warning of an sc_start() with nothing to do.
void fresh_kernel();

// Destroys the current simulation context and everything it still holds (process handles and the
// coroutine stacks of its threads). Only when nothing of that run is left: every module built on
// it destroyed. A process that builds one system after another (a regression worker) would
// otherwise keep every finished kernel.
void release_kernel();

// Kills the current context's thread processes, so that their stacks unwind and their locals are
// destroyed; before the modules they belong to are.
void stop_threads();

}  // namespace spyre_dma::model
