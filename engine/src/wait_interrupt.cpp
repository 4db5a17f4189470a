// The thread's wait-interrupt check (see spyre_dma/wait_interrupt.hpp).
#include "spyre_dma/wait_interrupt.hpp"

namespace spyre_dma {
namespace {
thread_local const std::function<bool()>* t_interrupted = nullptr;
}  // namespace

WaitInterruptScope::WaitInterruptScope(std::function<bool()> interrupted)
    : interrupted_(std::move(interrupted)), outer_(t_interrupted) {
  t_interrupted = &interrupted_;
}

WaitInterruptScope::~WaitInterruptScope() { t_interrupted = outer_; }

const std::function<bool()>* WaitInterruptScope::current() noexcept { return t_interrupted; }

}  // namespace spyre_dma
