// vfio-user messages over a UNIX stream socket (see channel.hpp).
#include "channel.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "spyre_dma/deadline.hpp"

namespace spyre_dma::vfio {

void UniqueFd::reset(int fd) noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

void Channel::send(Header header, const std::vector<std::uint8_t>& payload, const int* fds, std::size_t nfds) {
  header.size = static_cast<std::uint32_t>(kHeaderBytes + payload.size());
  std::uint8_t head[kHeaderBytes];
  write_header(header, head);
  iovec iov[2] = {{head, kHeaderBytes}, {const_cast<std::uint8_t*>(payload.data()), payload.size()}};
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = payload.empty() ? 1 : 2;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)];
  if (nfds > 0) {
    if (nfds > kMaxFds) throw std::logic_error("vfio-user: more file descriptors than a message carries");
    std::memset(control, 0, sizeof control);
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
    std::memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
  }
  std::size_t left = kHeaderBytes + payload.size();
  const auto deadline = deadline_after<std::chrono::steady_clock>(std::chrono::steady_clock::now(), send_timeout_);
  while (left > 0) {
    // Never blocking in the kernel: a peer that stops reading is waited for only until the deadline.
    const ssize_t n = ::sendmsg(socket_.get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        if (!wait_for(POLLOUT, deadline, "sending to")) {
          throw PeerStalled("vfio-user: " + peer_ + " did not take " + std::string(to_string(header.command)) +
                                 " (" + std::to_string(left) + " bytes left) within " +
                                 std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(send_timeout_).count()) +
                                 " ms; it has stopped reading");
        }
        continue;
      }
      throw ConnectionClosed("vfio-user: sending " + std::string(to_string(header.command)) + " to " + peer_ +
                             " failed: " + std::strerror(errno));
    }
    left -= static_cast<std::size_t>(n);
    // The file descriptors went with the first bytes; move past what was sent.
    msg.msg_control = nullptr;
    msg.msg_controllen = 0;
    std::size_t sent = static_cast<std::size_t>(n);
    while (sent > 0 && msg.msg_iovlen > 0) {
      const std::size_t k = std::min(sent, msg.msg_iov->iov_len);
      msg.msg_iov->iov_base = static_cast<std::uint8_t*>(msg.msg_iov->iov_base) + k;
      msg.msg_iov->iov_len -= k;
      sent -= k;
      if (msg.msg_iov->iov_len == 0) {
        ++msg.msg_iov;
        --msg.msg_iovlen;
      }
    }
  }
}

bool Channel::wait_for(short events, std::chrono::steady_clock::time_point deadline, const char* doing) {
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    const auto wait = deadline > now ? std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now +
                                                                                             std::chrono::microseconds(999))
                                     : std::chrono::milliseconds(0);
    pollfd pfd[2] = {{socket_.get(), events, 0}, {cancel_fd_, POLLIN, 0}};
    const int ready = ::poll(pfd, cancel_fd_ >= 0 ? 2 : 1, static_cast<int>(std::min<std::int64_t>(wait.count(), 1 << 30)));
    if (ready < 0) {
      if (errno == EINTR) continue;
      throw ConnectionClosed("vfio-user: " + std::string(doing) + " " + peer_ + " failed: " + std::strerror(errno));
    }
    if (cancel_fd_ >= 0 && pfd[1].revents != 0) {
      throw ConnectionClosed("vfio-user: stopped while " + std::string(doing) + " " + peer_);
    }
    // An error or hang-up on the socket is "ready": the send or receive that follows reports it.
    return ready > 0;
  }
}

void Channel::read_exact(std::uint8_t* p, std::size_t n, std::chrono::steady_clock::time_point deadline,
                         std::vector<UniqueFd>& fds, bool started) {
  while (n > 0) {
    if (!wait_for(POLLIN, deadline, "waiting for")) {
      throw ReceiveTimeout("vfio-user: " + peer_ + (started ? " stopped in the middle of a message" : " sent nothing") +
                           " before the deadline");
    }
    iovec iov{p, n};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)];
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t got = ::recvmsg(socket_.get(), &msg, MSG_CMSG_CLOEXEC);
    if (got < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      throw ConnectionClosed("vfio-user: reading from " + peer_ + " failed: " + std::strerror(errno));
    }
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const std::size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (std::size_t i = 0; i < k; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
        fds.emplace_back(fd);
      }
    }
    if ((msg.msg_flags & MSG_CTRUNC) != 0) {
      throw ProtocolError("vfio-user: " + peer_ + " sent more than " + std::to_string(kMaxFds) +
                          " file descriptors with one message");
    }
    if (got == 0) throw ConnectionClosed("vfio-user: " + peer_ + " closed the connection");
    p += got;
    n -= static_cast<std::size_t>(got);
    started = true;
  }
}

Message Channel::receive(std::chrono::nanoseconds timeout) {
  const auto deadline = deadline_after<std::chrono::steady_clock>(std::chrono::steady_clock::now(), timeout);
  Message m;
  std::uint8_t head[kHeaderBytes];
  read_exact(head, kHeaderBytes, deadline, m.fds, false);
  m.header = parse_header(head, kHeaderBytes);
  m.payload.resize(m.header.size - kHeaderBytes);
  // The rest of a message that has begun arrives promptly, or the peer is broken: allow it the
  // deadline, but at least a second.
  const auto rest = std::max(deadline, std::chrono::steady_clock::now() + std::chrono::seconds(1));
  read_exact(m.payload.data(), m.payload.size(), rest, m.fds, true);
  if (m.fds.size() > kMaxFds) {
    throw ProtocolError("vfio-user: " + peer_ + " sent " + std::to_string(m.fds.size()) +
                        " file descriptors with one message; at most " + std::to_string(kMaxFds));
  }
  return m;
}

}  // namespace spyre_dma::vfio
