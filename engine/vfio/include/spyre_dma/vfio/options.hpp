// What both VFIO transports (the kernel's, vfio-user) let a user choose.
#pragma once

#include <chrono>

namespace spyre_dma::vfio {

// How the device's completions reach a waiting engine thread.
enum class InterruptMode {
  kEventfds,  // MSI-X: one eventfd per pipeline, the waiter sleeps until one is signalled
  kPolling,   // no interrupts are set up: a waiter looks at the RB rings every kPollInterval
};
inline constexpr std::chrono::microseconds kPollInterval{100};

}  // namespace spyre_dma::vfio
