// What a BAR0 access does on the reference device, around the device core's access routine
// (register_file.hpp has the access rules).
#include "controller.hpp"

namespace spyre_dma::refdev::detail {

// The hot path: numbered and published under the doorbell order's lock, then the worker is woken
// only if it sleeps and may fetch (one that may not is woken by whatever lifts that).
void Controller::doorbell(hw::Pipeline p, std::uint32_t new_pi) {
  doorbells_.ring(p, new_pi, index(Reg::kRbPi, p, std::memory_order_acquire), reg(Reg::kCbPi, p));
  if (worker(p).sleeping.load() && fetch_limit(p)) wake(p);
}

void Controller::stored(Reg r, hw::Pipeline p) {
  switch (r) {
    case Reg::kControl: return wake_all();
    case Reg::kRbCi: return notify_progress();  // a worker waiting for RB space
    case Reg::kIrqEnable:
    case Reg::kIrqVector: return;
    default:
      wake(p);
      notify_progress();
  }
}

}  // namespace spyre_dma::refdev::detail
