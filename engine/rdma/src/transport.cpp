#include "spyre_dma/rdma/transport.hpp"

namespace spyre_dma::rdma {

RemoteHandle Transport::expose_device(Device&, std::uint64_t, std::uint64_t) {
  throw InvalidArgument(
      "expose: this transport cannot reach device memory: a peer would need a NIC with peer-to-peer access to the "
      "card's BAR (docs/rdma.md); expose registered host memory and copy through it instead");
}

}  // namespace spyre_dma::rdma
