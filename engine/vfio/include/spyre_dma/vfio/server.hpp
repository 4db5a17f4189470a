// A device server: any Device (a registered backend: sim, rtl, refdev) exposed over vfio-user on
// a UNIX socket, so that the engine drives it from another process exactly as it drives a card
// through VFIO. `spyre-dma serve` runs one.
//
// Each client gets a fresh device from the factory (a backend's Instance: its memory backdoor and
// simulated clock, where it has them, are offered to the client too), up to
// ServerLimits::clients at once, each served on its own thread; a client beyond that waits to be
// accepted. A client that leaves (or dies mid-transfer) takes its device, its DMA mappings and its
// interrupts with it, and the next client finds the server as new. The client's memory is reached
// only through the mappings it made (VFIO_USER_DMA_MAP with a file descriptor, mapped here and
// handed to the device at the client's IOVA with Device::map_at); the device's IOMMU refuses
// anything outside them.
//
// A client cannot take the server down or hold it: a malformed or hostile message gets an error
// reply (errno) and a line through `log`; a message whose header cannot be trusted ends the
// connection; a client that stops reading its replies is disconnected after
// ServerLimits::reply_timeout; interrupts are signalled only to eventfds and never block (an
// eventfd that cannot take one is dropped and the client named in the log); what one client may
// hold (device memory written through the memory region, DMA mappings) is bounded; stop() ends
// every session, whatever its client does.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "spyre_dma/backend/registry.hpp"

namespace spyre_dma::vfio {

// What one client may hold of the server.
struct ServerLimits {
  // Clients served at once, each with its own device. 1 for a backend of one device per process
  // (sim, rtl): a second client then waits for the first to leave.
  unsigned clients = 1;
  // Device memory one client may write through the memory region (counted in 1 MiB blocks it
  // touched); DMA into device memory is bounded by the device's own memory size.
  std::uint64_t client_memory_bytes = 4ull << 30;
  // Live DMA mappings of one client.
  std::uint32_t client_mappings = 4096;
  // How long a reply may wait for the client to read it before the client is disconnected.
  std::chrono::milliseconds reply_timeout{5000};
};

class Server {
 public:
  using DeviceFactory = std::function<backend::Instance()>;
  using Log = std::function<void(const std::string&)>;

  // Binds and listens on `socket_path`: an existing socket file there is replaced, any other file
  // is refused. Throws std::runtime_error naming the path and the reason, or std::invalid_argument
  // for limits of zero.
  Server(DeviceFactory factory, std::string socket_path, Log log = {}, ServerLimits limits = {});
  ~Server();  // closes the socket and removes its file
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Serves clients until stop(), or, with `once`, until the first has left (then one at a time).
  // Returns how many were served.
  std::uint64_t serve(bool once);
  // Ends serve(): every client being served is disconnected, a session waiting on its client gives
  // up at once. From any thread; async-signal-safe.
  void stop() noexcept;

  const std::string& path() const noexcept { return path_; }
  const ServerLimits& limits() const noexcept { return limits_; }

 private:
  class Session;
  void log(const std::string& line) const {  // sessions log from their own threads
    if (!log_) return;
    std::lock_guard<std::mutex> lock(log_mu_);
    log_(line);
  }
  DeviceFactory factory_;
  std::string path_;
  Log log_;
  mutable std::mutex log_mu_;
  ServerLimits limits_;
  int listen_fd_ = -1;
  int stop_pipe_[2] = {-1, -1};
  int ended_pipe_[2] = {-1, -1};  // a byte per session that ended, so serve() accepts again
  std::atomic<bool> stopping_{false};
};

}  // namespace spyre_dma::vfio
