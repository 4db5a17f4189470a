// SimNic: a node's NIC of a simulated cluster as an rdma::Transport, over its NodeSimulation.
#include "spyre_dma/model/sim_nic.hpp"

#include <cstring>
#include <string>

#include "net/nic.hpp"
#include "spyre_dma/model/sim_device.hpp"
#include "sim/node_simulation.hpp"

namespace spyre_dma::model {
namespace {

constexpr const char* kOwnerPrefix = "sim/";

// "sim/<generation>/<node>": the cluster (this process's n-th simulation) and the node.
std::string owner_bytes(std::uint64_t generation, unsigned node) {
  return kOwnerPrefix + std::to_string(generation) + "/" + std::to_string(node);
}

}  // namespace

SimNic::SimNic(std::shared_ptr<NodeSimulation> simulation, unsigned node) : sim_(std::move(simulation)), node_(node) {}

SimNic::~SimNic() = default;

rdma::RemoteHandle SimNic::handle(std::uint64_t base, std::uint64_t size, std::uint32_t key) const {
  rdma::RemoteHandle h;
  h.owner = owner_bytes(sim_->generation(), node_);
  h.base = base;
  h.size = size;
  h.key.assign(reinterpret_cast<const char*>(&key), sizeof key);
  return h;
}

rdma::RemoteHandle SimNic::expose(void* base, std::uint64_t size) {
  if (!base || size == 0) throw InvalidArgument("expose: an empty range (null base or 0 bytes)");
  const std::uint32_t key = sim_->call([&] { return sim_->nic(node_).register_host(base, size); });
  return handle(reinterpret_cast<std::uint64_t>(base), size, key);
}

rdma::RemoteHandle SimNic::expose_device(unsigned device, std::uint64_t base, std::uint64_t size) {
  if (size == 0) throw InvalidArgument("expose_device: 0 bytes");
  std::uint32_t key = 0;
  try {
    key = sim_->call([&] { return sim_->nic(node_).register_device(device, base, size); });
  } catch (const std::invalid_argument& e) {
    throw InvalidArgument(std::string("expose_device: ") + e.what());
  }
  return handle(base, size, key);
}

rdma::RemoteHandle SimNic::expose_device(Device& device, std::uint64_t address, std::uint64_t size) {
  const auto* sim = dynamic_cast<const SimDevice*>(&device);
  const unsigned per_node = sim_->config().topology.devices;
  if (!sim || sim->index() / per_node != node_) {
    throw InvalidArgument("expose: the device is not one of node " + std::to_string(node_) +
                          "'s devices in this simulated cluster");
  }
  return expose_device(sim->index() % per_node, address, size);
}

void SimNic::revoke(const rdma::RemoteHandle& h) {
  std::uint32_t key = 0;
  if (h.owner != owner_bytes(sim_->generation(), node_) || h.key.size() != sizeof key) {
    throw InvalidArgument("revoke: the handle was not issued by node " + std::to_string(node_) + "'s NIC");
  }
  std::memcpy(&key, h.key.data(), sizeof key);
  if (!sim_->call([&] { return sim_->nic(node_).deregister(key); })) {
    throw InvalidArgument("revoke: node " + std::to_string(node_) + " has no live range with that key");
  }
}

void SimNic::start_put(const rdma::RemoteHandle& dst, std::uint64_t offset, const void* src, std::uint64_t bytes,
                       Done done) {
  start(true, static_cast<std::uint8_t*>(const_cast<void*>(src)), dst, offset, bytes, std::move(done));
}

void SimNic::start_put(const rdma::RemoteHandle& dst, std::uint64_t offset, const void* src, std::uint64_t bytes,
                       Done done, std::function<void()> landed) {
  start(true, static_cast<std::uint8_t*>(const_cast<void*>(src)), dst, offset, bytes, std::move(done),
        std::move(landed));
}

void SimNic::start_get(void* dst, const rdma::RemoteHandle& src, std::uint64_t offset, std::uint64_t bytes,
                       Done done) {
  start(false, static_cast<std::uint8_t*>(dst), src, offset, bytes, std::move(done));
}

void SimNic::start(bool put, std::uint8_t* local, const rdma::RemoteHandle& remote, std::uint64_t offset,
                   std::uint64_t bytes, Done done, std::function<void()> landed) {
  const char* what = put ? "put" : "get";
  if (Status s = remote.check(what, offset, bytes); !s.ok()) return done(std::move(s));
  if (!local) return done(Status(ErrorCode::kInvalidArgument, std::string(what) + ": no local buffer"));
  // The owner: a node of this cluster, or nothing the simulation can reach.
  const std::string mine = std::string(kOwnerPrefix) + std::to_string(sim_->generation()) + "/";
  if (remote.owner.compare(0, mine.size(), mine) != 0) {
    return done(Status(ErrorCode::kPeerUnreachable,
                       std::string(what) + ": the handle's owner is not a node of this simulated cluster"));
  }
  unsigned peer = 0;
  try {
    std::size_t used = 0;
    const unsigned long n = std::stoul(remote.owner.substr(mine.size()), &used);
    if (used != remote.owner.size() - mine.size()) throw std::invalid_argument("trailing bytes");
    peer = static_cast<unsigned>(n);
  } catch (const std::exception&) {
    return done(Status(ErrorCode::kPeerUnreachable, std::string(what) + ": the handle's owner names no node"));
  }
  std::uint32_t key = 0;
  if (remote.key.size() != sizeof key) {
    return done(
        Status(ErrorCode::kRemoteAccess, std::string(what) + ": the handle's key is not a key of this network"));
  }
  std::memcpy(&key, remote.key.data(), sizeof key);
  Nic::WorkRequest wr;
  wr.op = put ? Nic::WorkRequest::Op::kWrite : Nic::WorkRequest::Op::kRead;
  wr.local = local;
  wr.bytes = bytes;
  wr.peer = peer;
  wr.remote = remote.base + offset;
  wr.key = key;
  wr.done = std::move(done);
  wr.landed = std::move(landed);
  sim_->call([&] { sim_->nic(node_).post(std::move(wr)); });
}

}  // namespace spyre_dma::model
