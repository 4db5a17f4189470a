// The Device seam's defaults (see spyre_dma/device.hpp).
#include "spyre_dma/device.hpp"

#include <stdexcept>

namespace spyre_dma {

std::uint64_t Device::map_at(void* host, std::size_t bytes, DmaAccess access, std::uint64_t iova) {
  (void)host, (void)bytes, (void)access, (void)iova;
  throw std::logic_error("backend " + describe().backend + " chooses its own IOVAs: it cannot map at a given one");
}

}  // namespace spyre_dma
