// One end of a vfio-user connection: whole messages over a UNIX stream socket, file descriptors
// with them (SCM_RIGHTS), every read bounded by a deadline.
#pragma once

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "spyre_dma/vfio/protocol.hpp"

namespace spyre_dma::vfio {

// A file descriptor closed with its owner.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) noexcept : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) reset(o.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  int get() const noexcept { return fd_; }
  explicit operator bool() const noexcept { return fd_ >= 0; }
  int release() noexcept {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1) noexcept;

 private:
  int fd_ = -1;
};

// The peer closed the connection (or it broke): nothing more can be sent or received.
class ConnectionClosed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// The peer did not take a message within the send timeout: it has stopped reading.
class PeerStalled : public ConnectionClosed {
 public:
  using ConnectionClosed::ConnectionClosed;
};
// No whole message arrived before the deadline.
class ReceiveTimeout : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Message {
  Header header;
  std::vector<std::uint8_t> payload;
  std::vector<UniqueFd> fds;
  Reader reader() const { return Reader(header.command, payload.data(), payload.size()); }
};

class Channel {
 public:
  // `peer` names the other end in errors ("the server at /run/x.sock"). A message that the peer
  // does not take within `send_timeout` (it stopped reading) ends the connection: a peer cannot
  // hold this end in a blocking send.
  Channel(UniqueFd socket, std::string peer, std::chrono::nanoseconds send_timeout = std::chrono::seconds(30))
      : socket_(std::move(socket)), peer_(std::move(peer)), send_timeout_(send_timeout) {}

  // A descriptor that, once readable, makes every wait of this channel give up with
  // ConnectionClosed (a server's stop pipe): nothing the peer does keeps a stopping end waiting.
  void set_cancel(int fd) noexcept { cancel_fd_ = fd; }

  // Sends header + payload (the header's size is set here) and `fds`. Throws ConnectionClosed,
  // also when the peer has not taken the message within the send timeout.
  void send(Header header, const std::vector<std::uint8_t>& payload, const int* fds = nullptr, std::size_t nfds = 0);
  // One whole message. Throws ReceiveTimeout, ConnectionClosed, or ProtocolError for a message
  // the protocol does not allow (its header, too many file descriptors).
  Message receive(std::chrono::nanoseconds timeout);

  int fd() const noexcept { return socket_.get(); }
  const std::string& peer() const noexcept { return peer_; }

 private:
  // Reads exactly n bytes into p, collecting file descriptors into fds.
  void read_exact(std::uint8_t* p, std::size_t n, std::chrono::steady_clock::time_point deadline,
                  std::vector<UniqueFd>& fds, bool started);
  // Waits until the socket has `events` or the deadline passes (false); throws ConnectionClosed
  // when the cancel descriptor becomes readable or the wait fails.
  bool wait_for(short events, std::chrono::steady_clock::time_point deadline, const char* doing);
  UniqueFd socket_;
  std::string peer_;
  std::chrono::nanoseconds send_timeout_;
  int cancel_fd_ = -1;
};

}  // namespace spyre_dma::vfio
