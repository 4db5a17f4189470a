// What the device server's tests share: a server of fresh refdevs on a thread of the test, a raw
// connection that speaks the protocol by hand, and a checked round trip through an engine.
#pragma once

#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "channel.hpp"
#include "spyre_dma/backend/builtin.hpp"
#include "spyre_dma/spyre_dma.hpp"
#include "spyre_dma/vfio/protocol.hpp"
#include "spyre_dma/vfio/server.hpp"

namespace spyre_dma::vfio::testing {

using namespace std::chrono_literals;

inline std::string temp_socket(const char* name) {
  return std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/spyre-dma-test-" +
         std::to_string(::getpid()) + "-" + name + ".sock";
}

// A server of fresh refdevs in a thread of this process, serving until the test ends (or stop()).
class ServerThread {
 public:
  explicit ServerThread(const char* name, ServerLimits limits = {})
      : server_([] { return backend::builtin().open("refdev", {}); }, temp_socket(name),
                [this](const std::string& line) {
                  logged_.fetch_add(1);
                  std::lock_guard<std::mutex> lock(mu_);
                  last_ = line;
                },
                limits),
        thread_([this] {
          served_.store(server_.serve(false));
          returned_.store(true);
        }) {}
  ~ServerThread() { stop(); }
  // Stops the server and waits for serve() to return; how long that took.
  std::chrono::steady_clock::duration stop() {
    const auto t0 = std::chrono::steady_clock::now();
    server_.stop();
    if (thread_.joinable()) thread_.join();
    return std::chrono::steady_clock::now() - t0;
  }
  const std::string& path() const { return server_.path(); }
  int logged() const { return logged_.load(); }
  std::string last_logged() const {
    std::lock_guard<std::mutex> lock(mu_);
    return last_;
  }
  bool returned() const { return returned_.load(); }
  std::uint64_t served() const { return served_.load(); }

 private:
  std::atomic<int> logged_{0};
  mutable std::mutex mu_;
  std::string last_;
  Server server_;
  std::atomic<std::uint64_t> served_{0};
  std::atomic<bool> returned_{false};
  std::thread thread_;
};

// A raw connection speaking the protocol by hand.
class RawClient {
 public:
  explicit RawClient(const std::string& path) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    for (int i = 0; i < 200 && ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0; ++i) {
      std::this_thread::sleep_for(5ms);
    }
    channel_ = std::make_unique<Channel>(UniqueFd(fd), "the server");
  }
  // Sends a command and returns its reply.
  Message ask(Command c, const std::vector<std::uint8_t>& payload, const int* fds = nullptr, std::size_t n = 0) {
    send(c, payload, fds, n);
    return channel_->receive(5s);
  }
  // Sends a command and does not wait for its reply.
  void send(Command c, const std::vector<std::uint8_t>& payload, const int* fds = nullptr, std::size_t n = 0) {
    Header h;
    h.id = ++id_;
    h.command = c;
    channel_->send(h, payload, fds, n);
  }
  void send_raw(const std::vector<std::uint8_t>& bytes) {
    ASSERT_EQ(::send(channel_->fd(), bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
  }
  Channel& channel() { return *channel_; }

 private:
  std::unique_ptr<Channel> channel_;
  std::uint16_t id_ = 0;
};

inline std::uint32_t error_of(const Message& m) { return (m.header.flags & kFlagError) ? m.header.error : 0; }

// Copies `bytes` through the engine both ways and checks the data.
inline void round_trip(Engine& engine, std::size_t bytes, std::uint8_t seed) {
  HostBuffer src = engine.allocate_host(bytes), dst = engine.allocate_host(bytes);
  auto* s = static_cast<std::uint8_t*>(src.data());
  for (std::size_t i = 0; i < bytes; ++i) s[i] = static_cast<std::uint8_t>(i * 7 + seed);
  DeviceBuffer dev = engine.allocate(bytes);
  Stream stream = engine.create_stream();
  stream.copy_h2d(dev, 0, src.data(), bytes);
  stream.copy_d2h(dst.data(), dev, 0, bytes);
  ASSERT_TRUE(stream.synchronize(10s).ok());
  EXPECT_EQ(std::memcmp(src.data(), dst.data(), bytes), 0);
}

}  // namespace spyre_dma::vfio::testing
