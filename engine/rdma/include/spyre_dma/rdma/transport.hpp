// What an Endpoint moves remote memory with: one node's side of a transport. Two implement it:
// UcxNode (real networks, through UCX) and the model's simulated NIC (SimCluster::nic), so the
// same Endpoint calls run on a cluster and on a simulated one.
//
// The contract every transport keeps:
// - expose() makes a range of this node's host memory reachable by peers and returns its handle;
//   revoke() ends that (InvalidArgument for a handle this node did not issue).
// - expose_device() does the same for device memory, which peers then reach peer-to-peer through
//   the NIC (no host memory, no staging) where the transport can: the simulated NIC can; UCX would
//   need a NIC with peer-to-peer access to the card's BAR (docs/rdma.md), so it refuses.
// - start_put() and start_get() begin one transfer and return at once; `done` runs exactly once
//   with its final status, on a thread of the transport's (never inside the start call for a
//   transfer that began), and may start more transfers. A put is done when its data is in the
//   peer's memory; a get when the data is in `dst`.
// - An access outside the handle's range is InvalidArgument and moves nothing; a key the peer
//   refuses is RemoteAccess; a peer that cannot be reached or stops answering is PeerUnreachable.
#pragma once

#include <cstdint>
#include <functional>

#include "spyre_dma/device.hpp"
#include "spyre_dma/rdma/remote_handle.hpp"
#include "spyre_dma/status.hpp"

namespace spyre_dma::rdma {

class Transport {
 public:
  using Done = std::function<void(Status)>;
  virtual ~Transport() = default;

  virtual RemoteHandle expose(void* base, std::uint64_t size) = 0;
  // [address, address + size) of `device`'s memory (physical device addresses); InvalidArgument
  // where the transport cannot reach it or the device is not one of this node's.
  virtual RemoteHandle expose_device(Device& device, std::uint64_t address, std::uint64_t size);
  virtual void revoke(const RemoteHandle& handle) = 0;
  virtual void start_put(const RemoteHandle& dst, std::uint64_t offset, const void* src, std::uint64_t bytes,
                         Done done) = 0;
  virtual void start_get(void* dst, const RemoteHandle& src, std::uint64_t offset, std::uint64_t bytes,
                         Done done) = 0;
};

}  // namespace spyre_dma::rdma
