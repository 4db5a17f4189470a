// A device server: any Device (a registered backend: sim, rtl, refdev) exposed over vfio-user on
// a UNIX socket, so that the engine drives it from another process exactly as it drives a card
// through VFIO. `spyre-dma serve` runs one.
//
// One client at a time, each with a fresh device from the factory (a backend's Instance: its
// memory backdoor and simulated clock, where it has them, are offered to the client too): a client that leaves (or dies
// mid-transfer) takes its device, its DMA mappings and its interrupts with it, and the next client
// finds the server as new. The client's memory is reached only through the mappings it made
// (VFIO_USER_DMA_MAP with a file descriptor, mapped here and handed to the device at the client's
// IOVA with Device::map_at); the device's IOMMU refuses anything outside them.
//
// A malformed or hostile message gets an error reply (errno) and a line through `log`; a message
// whose header cannot be trusted ends the connection.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "spyre_dma/backend/registry.hpp"

namespace spyre_dma::vfio {

class Server {
 public:
  using DeviceFactory = std::function<backend::Instance()>;
  using Log = std::function<void(const std::string&)>;

  // Binds and listens on `socket_path`: an existing socket file there is replaced, any other file
  // is refused. Throws std::runtime_error naming the path and the reason.
  Server(DeviceFactory factory, std::string socket_path, Log log = {});
  ~Server();  // closes the socket and removes its file
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Serves clients one after another until stop(), or, with `once`, until the first has left.
  // Returns how many were served.
  std::uint64_t serve(bool once);
  // Ends serve() (the client being served is disconnected). From any thread; async-signal-safe.
  void stop() noexcept;

  const std::string& path() const noexcept { return path_; }

 private:
  class Session;
  DeviceFactory factory_;
  std::string path_;
  Log log_;
  int listen_fd_ = -1;
  int stop_pipe_[2] = {-1, -1};
  std::atomic<bool> stopping_{false};
};

}  // namespace spyre_dma::vfio
