// One node's side of remote memory over UCX (its UCP API): a context and a worker, the ranges this
// node exposes to its peers, and a connection to each peer it reaches. UCX chooses the transport
// (shared memory or TCP on one machine, InfiniBand or RoCE on a cluster); UCX_TLS and
// UCX_NET_DEVICES steer it as for any UCX program.
//
// A put or a get is one-sided in the API: the owner of the range posts nothing. On an RDMA NIC the
// owner's CPU takes no part at all; over shared memory and TCP UCX carries small transfers as
// messages that the owner's worker must progress. A node that exposes ranges therefore progresses
// its worker while peers may use them: Progress::kThread (a thread of its own, the default for a
// node that serves) or the owner's own calls to progress() and waits (Progress::kCaller).
//
// Rules, whatever the transport:
// - An access is checked against the handle's range before anything is posted: one that leaves
//   the range is InvalidArgument and nothing moves. A handle whose key this build cannot have
//   issued (a checksum guards it) is RemoteAccess before UCX sees it.
// - A put's Transfer completes when the data is in the peer's memory (the put, then a flush of the
//   connection), or with Completion::kLocal as soon as the source may be reused (then flush()
//   says when every such put has landed: one round trip for many puts); a get's when the data is
//   in the local buffer.
// - A peer that cannot be reached, or that goes away mid-transfer, fails the transfers that needed
//   it with PeerUnreachable, once each; the node and its other peers stay usable.
// - Everything that waits has a timeout (WaitTimeout); a transfer that timed out is cancelled.
//
// revoke() unregisters a range. Over InfiniBand and RoCE the key then stops working (RemoteAccess
// at the peer); UCX's shared-memory transports on one machine do not check keys, so there the
// range may still be reached: free memory only once its peers are done with it.
//
// Thread-safe: one lock serializes the worker. Waits progress it themselves (no background
// thread), letting go of the lock between steps.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "spyre_dma/rdma/remote_handle.hpp"
#include "spyre_dma/rdma/transport.hpp"
#include "spyre_dma/status.hpp"

namespace spyre_dma::rdma {

class UcxNode;

// A put or a get in flight.
class Transfer {
 public:
  Transfer() = default;
  bool valid() const noexcept { return state_ != nullptr; }
  // Whether it has completed (one step of progress first).
  bool done() const;
  // The final status once done(); WaitTimeout while pending.
  Status status() const;
  // Waits until done or `timeout` (then cancels it and returns WaitTimeout).
  Status wait(std::chrono::nanoseconds timeout) const;
  // Runs `next` with the final status once the transfer is done: at once if it is, else on the
  // thread that progresses the node when it completes (the node's progress thread, or a wait),
  // outside the node's lock, so `next` may post more transfers. Once per transfer.
  void then(std::function<void(Status)> next) const;

  struct State;
  explicit Transfer(std::shared_ptr<State> s) : state_(std::move(s)) {}

 private:
  std::shared_ptr<State> state_;
};

class UcxNode final : public Transport {
 public:
  enum class Progress : std::uint8_t {
    kCaller,  // the worker moves only inside this node's calls (waits, done(), progress())
    kThread,  // and on a thread of its own, for the peers that reach this node's ranges
  };
  // Throws spyre_dma::Error (kPeerUnreachable) if UCX cannot start (no transport it can use).
  explicit UcxNode(Progress progress = Progress::kThread);
  ~UcxNode() override;
  UcxNode(const UcxNode&) = delete;
  UcxNode& operator=(const UcxNode&) = delete;

  // Exposes [base, base + size) to peers: registers it and returns its handle. size > 0.
  RemoteHandle expose(void* base, std::uint64_t size) override;
  // Unregisters a range this node exposed (InvalidArgument if it did not).
  void revoke(const RemoteHandle& handle) override;
  // Transport: put() / get() with Completion::kRemote, `done` through Transfer::then.
  void start_put(const RemoteHandle& dst, std::uint64_t offset, const void* src, std::uint64_t bytes,
                 Done done) override;
  void start_get(void* dst, const RemoteHandle& src, std::uint64_t offset, std::uint64_t bytes, Done done) override;

  enum class Completion : std::uint8_t { kRemote, kLocal };
  // `bytes` from local `src` to the peer's range at `offset`.
  Transfer put(const RemoteHandle& dst, std::uint64_t offset, const void* src, std::uint64_t bytes,
               Completion completion = Completion::kRemote);
  // Completes when every put posted so far to `peer`'s owner is in the peer's memory.
  Transfer flush(const RemoteHandle& peer);
  // `bytes` from the peer's range at `offset` to local `dst`.
  Transfer get(void* dst, const RemoteHandle& src, std::uint64_t offset, std::uint64_t bytes);
  // Blocking forms: post, then wait.
  Status put(const RemoteHandle& dst, std::uint64_t offset, const void* src, std::uint64_t bytes,
             std::chrono::nanoseconds timeout);
  Status get(void* dst, const RemoteHandle& src, std::uint64_t offset, std::uint64_t bytes,
             std::chrono::nanoseconds timeout);

  // One step of the worker's progress; true when it completed something.
  bool progress();
  // This node's address as handles carry it (its UCX worker address, sealed).
  const std::string& address() const noexcept;

  struct Impl;

 private:
  struct Posting;
  std::shared_ptr<Impl> impl_;
};

}  // namespace spyre_dma::rdma
