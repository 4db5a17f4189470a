// One node's RDMA NIC in a simulated cluster (SimCluster::nic), as an rdma::Transport: the same
// calls an Endpoint makes over UCX, carried by the model's NIC, PCIe fabric and network in
// simulated time. docs/rdma.md, "The simulated network", describes the model.
//
// Handles it issues name the cluster (a handle of another simulated cluster, or of a real one, is
// PeerUnreachable here) and carry the key the owner's NIC checks on every access.
//
// Transfers move only while the simulation runs: an engine's wait on a device of the cluster runs
// it, and so does SimCluster::run_until. The simulation stops at each completion's simulated
// instant, and `done` then runs on the thread that drove it (the engine's waiting thread, or
// run_until's caller), never on the simulation's own: it may start more transfers, take locks and
// wait as any host code may, and a transfer it starts leaves at that instant.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "spyre_dma/rdma/transport.hpp"

namespace spyre_dma::model {

class NodeSimulation;

class SimNic final : public rdma::Transport {
 public:
  ~SimNic() override;
  SimNic(const SimNic&) = delete;
  SimNic& operator=(const SimNic&) = delete;

  // Host memory of this process, as memory of this node.
  rdma::RemoteHandle expose(void* base, std::uint64_t size) override;
  // Device `device` of this node (0-based within the node): [base, base + size) of its memory,
  // which peers reach peer-to-peer through the PCIe fabric (no host memory, no staging).
  rdma::RemoteHandle expose_device(unsigned device, std::uint64_t base, std::uint64_t size);
  // The same for a device of the cluster given as the engine holds it (a SimDevice of this node;
  // InvalidArgument for any other).
  rdma::RemoteHandle expose_device(Device& device, std::uint64_t address, std::uint64_t size) override;
  void revoke(const rdma::RemoteHandle& handle) override;
  void start_put(const rdma::RemoteHandle& dst, std::uint64_t offset, const void* src, std::uint64_t bytes,
                 Done done) override;
  void start_get(void* dst, const rdma::RemoteHandle& src, std::uint64_t offset, std::uint64_t bytes,
                 Done done) override;
  // A put that also runs `landed` at the simulated instant its last byte is in the peer's memory
  // (what a peer polling that memory sees; perftest's latency tests measure that way), before
  // `done` (the acknowledgement's return). Both as `done` above.
  void start_put(const rdma::RemoteHandle& dst, std::uint64_t offset, const void* src, std::uint64_t bytes,
                 Done done, std::function<void()> landed);

  unsigned node() const noexcept { return node_; }

 private:
  friend class SimCluster;
  SimNic(std::shared_ptr<NodeSimulation> simulation, unsigned node);
  rdma::RemoteHandle handle(std::uint64_t base, std::uint64_t size, std::uint32_t key) const;
  void start(bool put, std::uint8_t* local, const rdma::RemoteHandle& remote, std::uint64_t offset,
             std::uint64_t bytes, Done done, std::function<void()> landed = {});

  std::shared_ptr<NodeSimulation> sim_;
  unsigned node_;
};

}  // namespace spyre_dma::model
