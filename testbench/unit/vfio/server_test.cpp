// The device server and the vfio-user client together: an engine through the socket, memory the
// server cannot reach refused, hostile messages refused without harm to the next client, and
// either side killed in the middle of a transfer.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "server_fixture.hpp"
#include "spyre_dma/backend/builtin.hpp"
#include "spyre_dma/refdev/ref_device.hpp"
#include "spyre_dma/shareable_memory.hpp"
#include "spyre_dma/spyre_dma.hpp"
#include "spyre_dma/vfio/client.hpp"
#include "spyre_dma/vfio/protocol.hpp"
#include "spyre_dma/vfio/server.hpp"

extern char** environ;

namespace {

using namespace spyre_dma;
using namespace std::chrono_literals;
using vfio::Command;
using vfio::testing::error_of;
using vfio::testing::RawClient;
using vfio::testing::round_trip;
using vfio::testing::ServerThread;
using vfio::testing::temp_socket;

TEST(VfioUser, EngineRunsThroughTheSocket) {
  ServerThread server("engine");
  vfio::ClientOptions o;
  o.socket_path = server.path();
  const std::shared_ptr<Device> device = vfio::connect(o);
  EXPECT_EQ(device->describe().backend, "vfio-user");
  EXPECT_NE(device->describe().name.find("refdev"), std::string::npos) << device->describe().name;
  EXPECT_EQ(device->describe().progress, Progress::kSelfTimed);
  auto engine = Engine::open(device);
  round_trip(*engine, 1 << 20, 1);
  // Pageable memory goes through the engine's (shareable) staging buffers.
  std::vector<std::uint8_t> src(300'001), back(src.size());
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::uint8_t>(i ^ 0x5A);
  DeviceBuffer dev = engine->allocate(src.size());
  Stream stream = engine->create_stream();
  stream.copy_h2d(dev, 0, src.data(), src.size());
  stream.copy_d2h(back.data(), dev, 0, back.size());
  ASSERT_TRUE(stream.synchronize(10s).ok());
  EXPECT_EQ(src, back);
}

TEST(VfioUser, PollingWithoutInterruptsCompletesEveryOp) {
  ServerThread server("polling");
  vfio::ClientOptions o;
  o.socket_path = server.path();
  o.interrupts = vfio::InterruptMode::kPolling;
  const std::shared_ptr<Device> device = vfio::connect(o);
  EXPECT_EQ(device->wait_for_interrupt(1ms), 0u) << "no interrupt is ever set up";
  auto engine = Engine::open(device);
  for (int i = 0; i < 20; ++i) round_trip(*engine, 4096 << (i % 8), static_cast<std::uint8_t>(i));
}

TEST(VfioUser, MemoryTheServerCannotReachIsRefusedByName) {
  ServerThread server("unshared");
  vfio::ClientOptions o;
  o.socket_path = server.path();
  auto engine = Engine::open(vfio::connect(o));
  std::vector<std::uint8_t> heap(1 << 16);
  try {
    (void)engine->register_host(heap.data(), heap.size());
    FAIL() << "heap memory was registered";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("not shareable"), std::string::npos) << e.what();
  }
  round_trip(*engine, 4096, 2);  // the engine still works
}

TEST(VfioUser, TheMemoryBackdoorTravelsWithTheDevice) {
  ServerThread server("backdoor");
  vfio::ClientOptions o;
  o.socket_path = server.path();
  const std::shared_ptr<Device> device = vfio::connect(o);
  backend::MemoryBackdoor* memory = vfio::memory_backdoor(*device);
  ASSERT_NE(memory, nullptr);
  EXPECT_EQ(vfio::simulated_clock(*device), nullptr) << "refdev runs by itself: no simulated clock";
  auto engine = Engine::open(device);
  // More than one message's worth, an odd length: written behind the device, read by its DMA.
  constexpr std::size_t kBytes = (1 << 20) + 77;
  DeviceBuffer dev = engine->allocate(kBytes + 128);
  std::vector<std::uint8_t> pattern(kBytes);
  for (std::size_t i = 0; i < kBytes; ++i) pattern[i] = static_cast<std::uint8_t>(i * 13 + 1);
  ASSERT_EQ(dev.address().chunks().size(), 1u);
  const std::uint64_t phys = dev.address().chunks().front().physical() + 128;
  memory->backdoor_write(phys, pattern.data(), kBytes);
  HostBuffer out = engine->allocate_host(kBytes);
  Stream stream = engine->create_stream();
  stream.copy_d2h(out.data(), dev, 128, kBytes);
  ASSERT_TRUE(stream.synchronize(10s).ok());
  EXPECT_EQ(std::memcmp(out.data(), pattern.data(), kBytes), 0);
  std::vector<std::uint8_t> back(kBytes);
  memory->backdoor_read(phys, back.data(), kBytes);
  EXPECT_EQ(back, pattern);
  EXPECT_THROW(memory->backdoor_read(~0ull - 16, back.data(), 64), std::exception) << "beyond the memory";
}

TEST(VfioUser, ServerRefusesIovasOutsideTheDeviceAndOverlaps) {
  ServerThread server("iova");
  vfio::ClientOptions o;
  o.socket_path = server.path();
  const std::shared_ptr<Device> device = vfio::connect(o);
  void* p = allocate_shareable(8192);
  const std::uint64_t iova = device->map(p, 8192, DmaAccess::kBoth);
  EXPECT_GE(iova, 0x10'0000'0000ull);
  device->unmap(iova);
  EXPECT_THROW(device->unmap(iova), std::invalid_argument);
  free_shareable(p);
}

TEST(VfioUser, HostileMessagesAreRefusedAndTheServerServesTheNextClient) {
  ServerThread server("hostile");
  {
    RawClient c(server.path());
    vfio::RegionAccess a;
    a.count = 3;  // BAR0 is read 4 or 8 bytes at a time
    EXPECT_EQ(error_of(c.ask(Command::kRegionRead, encode(a))), static_cast<std::uint32_t>(EINVAL));
    a.count = 4;
    a.offset = 8ull << 20;  // beyond BAR0
    EXPECT_EQ(error_of(c.ask(Command::kRegionRead, encode(a))), static_cast<std::uint32_t>(EINVAL));
    a.region = 5;  // a BAR the device does not have
    a.offset = 0;
    EXPECT_EQ(error_of(c.ask(Command::kRegionRead, encode(a))), static_cast<std::uint32_t>(EINVAL));
    vfio::RegionAccess w;
    w.count = 8;  // no data follows
    EXPECT_EQ(error_of(c.ask(Command::kRegionWrite, encode(w))), static_cast<std::uint32_t>(EINVAL));
    EXPECT_EQ(error_of(c.ask(static_cast<Command>(99), {})), static_cast<std::uint32_t>(ENOSYS));
    vfio::RegionAccess empty;  // a memory access of no bytes
    empty.region = vfio::kMemoryRegion;
    EXPECT_EQ(error_of(c.ask(Command::kRegionWrite, encode(empty))), static_cast<std::uint32_t>(EINVAL));
    EXPECT_EQ(error_of(c.ask(Command::kRegionRead, encode(empty))), static_cast<std::uint32_t>(EINVAL));
    // DMA_MAP without a file, with a file that can shrink, and beyond a file's end.
    vfio::DmaMap m{vfio::kDmaRead, 0, 0x10'0000'0000ull, 4096};
    EXPECT_EQ(error_of(c.ask(Command::kDmaMap, encode(m))), static_cast<std::uint32_t>(EINVAL));
    const int unsealed = static_cast<int>(::memfd_create("t", MFD_CLOEXEC));
    ASSERT_EQ(::ftruncate(unsealed, 8192), 0);
    EXPECT_EQ(error_of(c.ask(Command::kDmaMap, encode(m), &unsealed, 1)), static_cast<std::uint32_t>(EINVAL));
    ::close(unsealed);
    void* p = allocate_shareable(4096);
    const auto shared = find_shareable(p, 4096);
    ASSERT_TRUE(shared);
    m.size = 1 << 20;  // the file has 4096 bytes
    EXPECT_EQ(error_of(c.ask(Command::kDmaMap, encode(m), &shared->fd, 1)), static_cast<std::uint32_t>(EINVAL));
    m.size = 4096;
    m.address = 0x1000;  // below the device's IOVA space
    EXPECT_EQ(error_of(c.ask(Command::kDmaMap, encode(m), &shared->fd, 1)), static_cast<std::uint32_t>(EINVAL));
    m.address = 0x10'0000'0000ull;
    EXPECT_EQ(error_of(c.ask(Command::kDmaMap, encode(m), &shared->fd, 1)), 0u);
    EXPECT_EQ(error_of(c.ask(Command::kDmaMap, encode(m), &shared->fd, 1)), static_cast<std::uint32_t>(EEXIST));
    vfio::DmaUnmap u{0, 0x10'0000'0000ull, 4097};  // the size does not match the mapping
    EXPECT_EQ(error_of(c.ask(Command::kDmaUnmap, encode(u))), static_cast<std::uint32_t>(EINVAL));
    free_shareable(p);
    // A header that cannot be trusted ends the connection.
    std::vector<std::uint8_t> bad(vfio::kHeaderBytes, 0);
    vfio::Header h;
    h.size = 0xFFFF'FFFF;
    vfio::write_header(h, bad.data());
    c.send_raw(bad);
    EXPECT_THROW(c.channel().receive(5s), vfio::ConnectionClosed);
  }
  EXPECT_GT(server.logged(), 0);
  // The next client finds a fresh device.
  vfio::ClientOptions o;
  o.socket_path = server.path();
  auto engine = Engine::open(vfio::connect(o));
  round_trip(*engine, 1 << 16, 3);
}

// A server that answers the client's first message with `answer` (raw bytes), then closes.
class HostileServer {
 public:
  HostileServer(const char* name, std::vector<std::uint8_t> answer)
      : path_(temp_socket(name)), answer_(std::move(answer)) {
    ::unlink(path_.c_str());
    listen_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path_.c_str(), sizeof addr.sun_path - 1);
    if (::bind(listen_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listen_, 1) != 0) {
      throw std::runtime_error("no socket");
    }
    thread_ = std::thread([this] {
      const int c = ::accept(listen_, nullptr, nullptr);
      if (c < 0) return;
      std::uint8_t head[vfio::kHeaderBytes];
      if (::recv(c, head, sizeof head, MSG_WAITALL) == static_cast<ssize_t>(sizeof head)) {
        const vfio::Header h = vfio::parse_header(head, sizeof head);
        std::vector<std::uint8_t> rest(h.size - vfio::kHeaderBytes);
        (void)::recv(c, rest.data(), rest.size(), MSG_WAITALL);
        (void)::send(c, answer_.data(), answer_.size(), MSG_NOSIGNAL);
      }
      std::this_thread::sleep_for(100ms);
      ::close(c);
    });
  }
  ~HostileServer() {
    thread_.join();
    ::close(listen_);
    ::unlink(path_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::vector<std::uint8_t> answer_;
  int listen_ = -1;
  std::thread thread_;
};

std::vector<std::uint8_t> message(std::uint16_t id, Command c, std::uint32_t flags, const std::vector<std::uint8_t>& payload,
                                  std::uint32_t size_override = 0) {
  vfio::Header h;
  h.id = id;
  h.command = c;
  h.flags = flags;
  h.size = size_override ? size_override : static_cast<std::uint32_t>(vfio::kHeaderBytes + payload.size());
  std::vector<std::uint8_t> out(vfio::kHeaderBytes);
  vfio::write_header(h, out.data());
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

TEST(VfioUser, AHostileServerIsRefusedByName) {
  vfio::Version v;
  v.capabilities_json = "{}";
  const struct {
    const char* name;
    std::vector<std::uint8_t> answer;
    const char* says;
  } cases[] = {
      {"wrong-id", message(9, Command::kVersion, vfio::kFlagReply, encode(v)), "with a reply to message 9"},
      {"huge", message(0, Command::kVersion, vfio::kFlagReply, {}, 0xFFFF'FFF0u), "msg_size"},
      {"short-version", message(0, Command::kVersion, vfio::kFlagReply, {1}), "field major"},
      {"old-major", message(0, Command::kVersion, vfio::kFlagReply, [] {
         vfio::Version old;
         old.major = 7;
         return encode(old);
       }()), "speaks version 7"},
      {"silent-close", {}, "closed the connection"},
  };
  for (const auto& c : cases) {
    HostileServer server(c.name, c.answer);
    vfio::ClientOptions o;
    o.socket_path = server.path();
    o.reply_timeout = 2s;
    try {
      (void)vfio::connect(o);
      ADD_FAILURE() << c.name << ": the client accepted the server";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << c.name << ": " << e.what();
    }
  }
}

#ifdef SPYRE_DMA_TEST_SERVER_PROGRAM
// The build's spyre-dma as a separate client process, killed with its copies in flight.
TEST(VfioUser, AClientKilledMidTransferLeavesTheServerReady) {
  ServerThread server("killed-client");
  std::vector<std::string> args = {SPYRE_DMA_TEST_SERVER_PROGRAM, "demo", "--backend", "vfio-user", "--vfio-socket",
                                   server.path(), "--sizes", "64MiB", "--repeat", "1000", "--memory", "registered"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t quiet;
  posix_spawn_file_actions_init(&quiet);
  posix_spawn_file_actions_addopen(&quiet, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  ASSERT_EQ(::posix_spawn(&pid, argv[0], &quiet, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&quiet);
  std::this_thread::sleep_for(800ms);  // connected, copying (the whole run takes tens of seconds)
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status)) << "the client ended by itself before it was killed";
  vfio::ClientOptions o;
  o.socket_path = server.path();
  auto engine = Engine::open(vfio::connect(o));
  round_trip(*engine, 1 << 20, 4);
}

TEST(VfioUser, AServerKilledMidTransferFailsEachOpOnceWithATypedError) {
  vfio::SpawnOptions s;
  s.program = SPYRE_DMA_TEST_SERVER_PROGRAM;
  s.backend = "refdev";
  const std::shared_ptr<Device> device = vfio::spawn(s);
  const pid_t server = vfio::server_pid(*device);
  ASSERT_GT(server, 0);
  auto engine = Engine::open(device);
  constexpr std::size_t kBytes = 16 << 20;
  constexpr int kOps = 32;
  HostBuffer src = engine->allocate_host(kBytes);
  DeviceBuffer dev = engine->allocate(kBytes);
  Stream stream = engine->create_stream();
  std::vector<std::atomic<int>> calls(kOps);
  std::vector<Op> ops;
  for (int i = 0; i < kOps; ++i) {
    ops.push_back(stream.copy_h2d(dev, 0, src.data(), kBytes, [&calls, i](const Status&) { calls[i].fetch_add(1); }));
  }
  ::kill(server, SIGKILL);
  const Status st = stream.synchronize(20s);
  EXPECT_FALSE(st.ok());
  int failed = 0;
  for (int i = 0; i < kOps; ++i) {
    EXPECT_EQ(calls[i].load(), 1) << "op " << i;
    const Status op_status = ops[i].status();
    if (!op_status.ok()) {
      ++failed;
      EXPECT_EQ(op_status.code(), ErrorCode::kDeviceFault) << op_status.to_string();
      EXPECT_NE(op_status.to_string().find("vfio-user"), std::string::npos) << op_status.to_string();
    }
  }
  EXPECT_GT(failed, 0);
  EXPECT_THROW(round_trip(*engine, 4096, 5), std::exception);
  // Reconnecting works: a new server, a new engine, while the dead one's engine still lives.
  auto again = Engine::open(vfio::spawn(s));
  round_trip(*again, 1 << 20, 6);
}
#endif

}  // namespace
