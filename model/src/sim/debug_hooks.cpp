#include "sim/debug_hooks.hpp"

namespace spyre_dma::model {

DebugHooks& debug_hooks() noexcept {
  static DebugHooks hooks;
  return hooks;
}

}  // namespace spyre_dma::model
