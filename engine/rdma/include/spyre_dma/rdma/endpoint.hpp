// One engine's side of remote memory: the host memory it exposes to peers, and puts and gets on
// its streams, ordered with each stream's other operations and with events exactly as local
// copies are. A put or a get is one Op: it starts once everything before it on its stream has
// completed, later operations wait for it, and it completes once, with the engine's Status
// (PeerUnreachable, RemoteAccess, WaitTimeout, or the error of its device copy).
//
// The transport is UCX (Endpoint(engine): real networks) or any other Transport, such as a
// simulated cluster's NIC (SimCluster::nic): the calls and their rules are the same.
//
// Device memory on this side goes through the engine's own DMA path, staged in registered host
// memory: a put from a DeviceBuffer is a D2H into a staging buffer, then the put; a get into a
// DeviceBuffer is the get into staging, then an H2D. The device copy runs on a stream of the
// endpoint's own (one per user stream), chained to the user's stream by events, so it is checked
// when it is submitted (InvalidArgument, nothing submitted) and the user's Op covers both steps.
// A peer reaches this engine's registered host memory (expose), and its device memory where the
// transport's NIC has peer-to-peer access to the card's BAR (expose(DeviceBuffer): the simulated
// NIC has; docs/rdma.md describes the path on real hardware).
//
// Requests outside a handle's range throw InvalidArgument at submission, like local copies.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "spyre_dma/engine.hpp"
#include "spyre_dma/rdma/remote_handle.hpp"
#include "spyre_dma/rdma/transport.hpp"
#include "spyre_dma/stream.hpp"

namespace spyre_dma::rdma {

class Endpoint {
 public:
  // Over UCX (a UcxNode that progresses on a thread of its own; built with UCX only). The engine
  // must outlive the endpoint. Operations still queued hold the transport, so it lives on until
  // they are done even if the endpoint goes first.
  explicit Endpoint(Engine& engine);
  // Over `transport` (shared: queued operations hold it too).
  Endpoint(Engine& engine, std::shared_ptr<Transport> transport);
  ~Endpoint();
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  // Exposes registered host memory (or part of it) to peers.
  RemoteHandle expose(const HostBuffer& buffer);
  RemoteHandle expose(const HostBuffer& buffer, std::uint64_t offset, std::uint64_t bytes);
  // Exposes device memory, which peers reach peer-to-peer through the transport's NIC (the
  // simulated one can; UCX cannot: InvalidArgument). The range must lie in one of the buffer's
  // chunks (a handle is one contiguous range).
  RemoteHandle expose(const DeviceBuffer& buffer);
  RemoteHandle expose(const DeviceBuffer& buffer, std::uint64_t offset, std::uint64_t bytes);
  void revoke(const RemoteHandle& handle);

  // Host memory here <-> the peer's range.
  Op put(Stream& stream, const RemoteHandle& dst, std::uint64_t dst_offset, const void* src, std::uint64_t bytes,
         Callback on_complete = {});
  Op get(Stream& stream, void* dst, const RemoteHandle& src, std::uint64_t src_offset, std::uint64_t bytes,
         Callback on_complete = {});
  // Device memory here <-> the peer's range, staged through registered host memory.
  Op put(Stream& stream, const RemoteHandle& dst, std::uint64_t dst_offset, const DeviceBuffer& src,
         std::uint64_t src_offset, std::uint64_t bytes, Callback on_complete = {});
  Op get(Stream& stream, const DeviceBuffer& dst, std::uint64_t dst_offset, const RemoteHandle& src,
         std::uint64_t src_offset, std::uint64_t bytes, Callback on_complete = {});

  Transport& transport() noexcept { return *transport_; }

 private:
  Stream& shadow(const Stream& user);  // the endpoint's stream for `user`'s device copies

  Engine& engine_;
  std::shared_ptr<Transport> transport_;
  std::mutex mu_;
  std::map<std::uint64_t, Stream> shadows_;  // by user stream id
};

}  // namespace spyre_dma::rdma
