// One checked CB against device memory (see cb_executor.hpp).
#include "cb_executor.hpp"

namespace spyre_dma::refdev::detail {

using device_core::CbWork;

device_core::CbOutcome execute(CbWork& w, device_core::SparseMemory& memory) {
  switch (w.kind) {
    case CbWork::Kind::kHostToDevice: memory.write(w.device, w.window.host(), w.bytes); break;
    case CbWork::Kind::kDeviceToHost: memory.read(w.device, w.window.host(), w.bytes); break;
    case CbWork::Kind::kFill: memory.fill32(w.device, w.pattern, w.bytes); break;
    case CbWork::Kind::kDeviceCopy: memory.copy(w.device, w.source, w.bytes); break;
    case CbWork::Kind::kCompute: return device_core::CbOutcome{};
  }
  w.window.release();
  return device_core::CbOutcome::done(w.bytes);
}

}  // namespace spyre_dma::refdev::detail
