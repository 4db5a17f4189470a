// The device server against clients that misbehave: descriptors of the wrong kind, a client that
// stops reading its replies, one that holds too much, stop() while clients hang on, and a seeded
// generator of hostile clients over a real socket (SPYRE_DMA_HOSTILE_SECONDS runs it for longer,
// SPYRE_DMA_HOSTILE_SEED picks another sequence). The test process does not ignore SIGPIPE: a write
// of the server's that could raise it ends the test.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "doorbell_log.hpp"
#include "server_fixture.hpp"
#include "spyre_dma/shareable_memory.hpp"
#include "spyre_dma/vfio/client.hpp"

namespace {

using namespace spyre_dma;
using namespace std::chrono_literals;
using vfio::Command;
using vfio::testing::error_of;
using vfio::testing::RawClient;
using vfio::testing::round_trip;
using vfio::testing::ServerThread;

constexpr std::uint64_t kIova = 0x10'0000'0000ull;  // the bottom of the device's IOVA space

std::unique_ptr<Engine> engine_at(const ServerThread& server) {
  vfio::ClientOptions o;
  o.socket_path = server.path();
  return Engine::open(vfio::connect(o));
}

vfio::IrqSet msix(std::uint32_t start, std::uint32_t count) {
  vfio::IrqSet s;
  s.flags = vfio::kIrqDataEventfd | vfio::kIrqActionTrigger;
  s.index = vfio::kMsixIrqIndex;
  s.start = start;
  s.count = count;
  return s;
}

vfio::RegionAccess memory_access(std::uint64_t offset, std::uint32_t count, bool with_data) {
  vfio::RegionAccess a;
  a.region = vfio::kMemoryRegion;
  a.offset = offset;
  a.count = count;
  if (with_data) a.data.assign(count, 0xA5);
  return a;
}

TEST(VfioUserHostile, AnInterruptDescriptorThatIsNotAnEventfdIsRefused) {
  ServerThread server("irq-kinds");
  {
    RawClient c(server.path());
    int pipe_fds[2];
    ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
    ::close(pipe_fds[0]);  // nobody will ever read it: a write there would raise SIGPIPE
    EXPECT_EQ(error_of(c.ask(Command::kDeviceSetIrqs, encode(msix(0, 1)), &pipe_fds[1], 1)),
              static_cast<std::uint32_t>(EINVAL));
    EXPECT_NE(server.last_logged().find("not an eventfd"), std::string::npos) << server.last_logged();
    EXPECT_NE(server.last_logged().find("client 1"), std::string::npos) << server.last_logged();
    ::close(pipe_fds[1]);
    const int null_fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    EXPECT_EQ(error_of(c.ask(Command::kDeviceSetIrqs, encode(msix(1, 1)), &null_fd, 1)),
              static_cast<std::uint32_t>(EINVAL));
    ::close(null_fd);
    const int efd = ::eventfd(0, EFD_CLOEXEC);
    EXPECT_EQ(error_of(c.ask(Command::kDeviceSetIrqs, encode(msix(0, 1)), &efd, 1)), 0u);
    ::close(efd);
  }
  round_trip(*engine_at(server), 1 << 16, 1);
}

// The client never reads: the server's reply fills the socket and it disconnects the client after
// the reply timeout, while a second client's work goes on.
TEST(VfioUserHostile, AClientThatStopsReadingIsDisconnectedWhileAnotherKeepsWorking) {
  vfio::ServerLimits limits;
  limits.clients = 2;
  limits.reply_timeout = 300ms;
  ServerThread server("slow-reader", limits);
  RawClient bad(server.path());
  ASSERT_EQ(error_of(bad.ask(Command::kVersion, encode(vfio::Version{}))), 0u);
  std::atomic<bool> disconnected{false};
  std::thread flood([&] {
    try {
      for (int i = 0; i < 1000; ++i) bad.send(Command::kRegionRead, encode(memory_access(0, vfio::kMaxMemoryAccess, false)));
    } catch (const vfio::ConnectionClosed&) {
      disconnected.store(true);
    }
  });
  auto engine = engine_at(server);
  const auto t0 = std::chrono::steady_clock::now();
  int rounds = 0;
  while (!disconnected.load() && std::chrono::steady_clock::now() - t0 < 20s) {
    round_trip(*engine, 1 << 16, static_cast<std::uint8_t>(++rounds));
  }
  flood.join();
  EXPECT_TRUE(disconnected.load()) << "the client that never reads was not disconnected";
  EXPECT_GT(rounds, 0);
  round_trip(*engine, 1 << 20, 7);  // and the good client goes on after it
  EXPECT_GT(server.logged(), 0);
}

TEST(VfioUserHostile, StopEndsEverySessionWithinASecond) {
  vfio::ServerLimits limits;
  limits.clients = 3;
  limits.reply_timeout = 60s;  // the stop, not the timeout, must end the blocked session
  ServerThread server("stop", limits);
  RawClient blocked(server.path());  // a reply larger than the socket holds, never read
  for (int i = 0; i < 4; ++i) blocked.send(Command::kRegionRead, encode(memory_access(0, vfio::kMaxMemoryAccess, false)));
  RawClient idle(server.path());  // connected, silent
  ASSERT_EQ(error_of(idle.ask(Command::kVersion, encode(vfio::Version{}))), 0u);
  auto engine = engine_at(server);  // and one with work in flight
  HostBuffer src = engine->allocate_host(64 << 20);
  DeviceBuffer dev = engine->allocate(64 << 20);
  Stream stream = engine->create_stream();
  for (int i = 0; i < 8; ++i) stream.copy_h2d(dev, 0, src.data(), 64 << 20);
  std::this_thread::sleep_for(200ms);
  const auto took = server.stop();
  EXPECT_LT(took, 1s) << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms";
  EXPECT_TRUE(server.returned());
  EXPECT_EQ(server.served(), 3u);
  (void)stream.synchronize(10s);  // the engine's ops end, with the server's words or done
}

TEST(VfioUserHostile, DeviceMemoryWrittenThroughTheMemoryRegionIsBounded) {
  vfio::ServerLimits limits;
  limits.client_memory_bytes = 2 << 20;  // two 1 MiB blocks
  ServerThread server("memory-bound", limits);
  RawClient c(server.path());
  EXPECT_EQ(error_of(c.ask(Command::kRegionWrite, encode(memory_access(0, 4096, true)))), 0u);
  EXPECT_EQ(error_of(c.ask(Command::kRegionWrite, encode(memory_access((1 << 20) + 100, 4096, true)))), 0u);
  EXPECT_EQ(error_of(c.ask(Command::kRegionWrite, encode(memory_access(0, 8192, true)))), 0u) << "a block touched again";
  EXPECT_EQ(error_of(c.ask(Command::kRegionWrite, encode(memory_access(2 << 20, 4096, true)))),
            static_cast<std::uint32_t>(ENOMEM));
  EXPECT_NE(server.last_logged().find("limit of 2097152 bytes"), std::string::npos) << server.last_logged();
  // A write across into a third block is refused whole.
  EXPECT_EQ(error_of(c.ask(Command::kRegionWrite, encode(memory_access((2 << 20) - 16, 32, true)))),
            static_cast<std::uint32_t>(ENOMEM));
  EXPECT_EQ(error_of(c.ask(Command::kRegionRead, encode(memory_access(64 << 20, 4096, false)))), 0u)
      << "reads allocate nothing and are not counted";
}

TEST(VfioUserHostile, MappingsAClientHoldsAreBounded) {
  vfio::ServerLimits limits;
  limits.client_mappings = 2;
  ServerThread server("mapping-bound", limits);
  RawClient c(server.path());
  void* p = allocate_shareable(3 * 4096);
  const auto shared = find_shareable(p, 3 * 4096);
  ASSERT_TRUE(shared);
  for (std::uint64_t i = 0; i < 3; ++i) {
    const vfio::DmaMap m{vfio::kDmaRead, shared->offset + i * 4096, kIova + i * 0x10000, 4096};
    EXPECT_EQ(error_of(c.ask(Command::kDmaMap, encode(m), &shared->fd, 1)),
              i < 2 ? 0u : static_cast<std::uint32_t>(ENOSPC))
        << "mapping " << i;
  }
  EXPECT_NE(server.last_logged().find("2 mappings"), std::string::npos) << server.last_logged();
  const vfio::DmaUnmap u{0, kIova, 4096};
  EXPECT_EQ(error_of(c.ask(Command::kDmaUnmap, encode(u))), 0u);
  const vfio::DmaMap again{vfio::kDmaRead, shared->offset + 2 * 4096, kIova + 2 * 0x10000, 4096};
  EXPECT_EQ(error_of(c.ask(Command::kDmaMap, encode(again), &shared->fd, 1)), 0u) << "room again after an unmap";
  free_shareable(p);
}

// --- A seeded generator of hostile clients ------------------------------------------------------

// Descriptors a hostile client hands over; each is closed by the client after the message.
class FdZoo {
 public:
  explicit FdZoo(std::mt19937_64& rng) : rng_(rng) {}
  ~FdZoo() { clear(); }
  std::vector<int> pick(std::size_t n) {
    std::vector<int> fds;
    for (std::size_t i = 0; i < n; ++i) fds.push_back(make());
    open_.insert(open_.end(), fds.begin(), fds.end());
    return fds;
  }
  void clear() {
    for (int fd : open_) ::close(fd);
    open_.clear();
  }

 private:
  int make() {
    switch (rng_() % 6) {
      case 0: return ::eventfd(0, EFD_CLOEXEC);
      case 1: {  // a full eventfd: a signal to it cannot be written
        const int fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        const std::uint64_t full = 0xFFFF'FFFF'FFFF'FFFEull;
        (void)!::write(fd, &full, sizeof full);
        return fd;
      }
      case 2: {  // a pipe whose reader is gone
        int p[2];
        if (::pipe2(p, O_CLOEXEC) != 0) return ::eventfd(0, EFD_CLOEXEC);
        ::close(p[0]);
        return p[1];
      }
      case 3: {  // a memfd sealed against shrinking, of a random size
        const int fd = static_cast<int>(::memfd_create("hostile", MFD_CLOEXEC | MFD_ALLOW_SEALING));
        (void)!::ftruncate(fd, static_cast<off_t>(4096 * (1 + rng_() % 4)));
        (void)::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK);
        return fd;
      }
      case 4: return static_cast<int>(::memfd_create("unsealed", MFD_CLOEXEC));
      default: return ::open("/dev/null", O_RDWR | O_CLOEXEC);
    }
  }
  std::mt19937_64& rng_;
  std::vector<int> open_;
};

std::uint64_t interesting(std::mt19937_64& rng) {
  static const std::uint64_t values[] = {0, 1, 4, 8, 4095, 4096, 1u << 20, 0x7FFF'FFFF, 0xFFFF'FFFF,
                                         kIova, kIova + 4096, 1ull << 37, ~0ull, ~0ull - 7};
  return rng() % 3 == 0 ? rng() : values[rng() % (sizeof values / sizeof values[0])];
}

// One hostile message: a well-formed command with hostile fields, or bytes of no shape.
std::vector<std::uint8_t> hostile_payload(Command c, std::mt19937_64& rng) {
  if (rng() % 5 == 0) {
    std::vector<std::uint8_t> junk(rng() % 96);
    for (auto& b : junk) b = static_cast<std::uint8_t>(rng());
    return junk;
  }
  switch (c) {
    case Command::kVersion: {
      vfio::Version v;
      v.major = static_cast<std::uint16_t>(rng() % 3);
      v.capabilities_json = rng() % 2 ? "{\"capabilities\":{}}" : std::string(rng() % 64, '{');
      return encode(v);
    }
    case Command::kDmaMap:
      return encode(vfio::DmaMap{static_cast<std::uint32_t>(rng() % 4), interesting(rng) % (1 << 16),
                                 interesting(rng), interesting(rng)});
    case Command::kDmaUnmap:
      return encode(vfio::DmaUnmap{0, interesting(rng), interesting(rng)});
    case Command::kDeviceSetIrqs: {
      vfio::IrqSet s;
      s.flags = static_cast<std::uint32_t>(rng() % 64);
      s.index = static_cast<std::uint32_t>(rng() % 6);
      s.start = static_cast<std::uint32_t>(rng() % 5);
      s.count = static_cast<std::uint32_t>(rng() % 5);
      return encode(s);
    }
    case Command::kRegionRead:
    case Command::kRegionWrite: {
      vfio::RegionAccess a;
      a.region = static_cast<std::uint32_t>(rng() % (vfio::kNumRegions + 2));
      a.offset = rng() % 2 ? interesting(rng) : (rng() % 0x2000) & ~3ull;  // BAR0's registers too
      const std::uint32_t counts[] = {0, 1, 3, 4, 8, 16, 32, 4096, vfio::kMaxMemoryAccess};
      a.count = counts[rng() % (sizeof counts / sizeof counts[0])];
      if (c == Command::kRegionWrite) {
        a.data.resize(a.count);
        for (auto& b : a.data) b = static_cast<std::uint8_t>(rng() % 4 == 0 ? rng() : 0);
      }
      return encode(a);
    }
    default: {
      vfio::RegionInfo i;
      // The doorbell region often: its page is the client's to scribble on (scribble_on_doorbells).
      i.index = static_cast<std::uint32_t>(rng() % 4 == 0 ? vfio::kDoorbellRegion : rng() % 16);
      return encode(i);
    }
  }
}

// A client that was offered the doorbell region writes into it what it likes: entries of any
// offset and width, counts ahead of or behind the server's, then kicks the server.
void scribble_on_doorbells(const vfio::Message& reply, std::mt19937_64& rng) {
  void* p = ::mmap(nullptr, vfio::kDoorbellRegionBytes, PROT_READ | PROT_WRITE, MAP_SHARED, reply.fds[0].get(), 0);
  if (p == MAP_FAILED) return;
  auto* page = static_cast<vfio::DoorbellPage*>(p);
  for (unsigned i = 0, n = static_cast<unsigned>(rng() % 8); i < n; ++i) {
    vfio::DoorbellPage::Entry& e = page->entries[rng() % vfio::DoorbellPage::kEntries];
    const std::uint64_t width = rng() % 4 == 0 ? rng() % 16 : (rng() % 2 ? 4 : 8);
    e.offset_width.store(rng() % 3 ? ((rng() % 0x2000) & ~3ull) | (width << 32) : rng());
    e.value.store(interesting(rng));
  }
  page->client_attached.store(static_cast<std::uint32_t>(rng() % 3));
  page->produced.store(rng() % 4 ? page->consumed.load() + rng() % 8 : interesting(rng));
  page->messages.fetch_add(rng() % 3);
  const std::uint64_t one = 1;
  (void)!::write(reply.fds[1].get(), &one, sizeof one);
  ::munmap(p, vfio::kDoorbellRegionBytes);
}

std::uint64_t env_number(const char* name, std::uint64_t otherwise) {
  const char* v = std::getenv(name);
  return v ? std::strtoull(v, nullptr, 0) : otherwise;
}

TEST(VfioUserHostile, SeededHostileClientsNeverStopTheServer) {
  const std::uint64_t seed = env_number("SPYRE_DMA_HOSTILE_SEED", 1);
  const auto budget = std::chrono::seconds(env_number("SPYRE_DMA_HOSTILE_SECONDS", 4));
  vfio::ServerLimits limits;
  limits.clients = 2;  // a hostile client that holds on does not keep the well-behaved one out
  limits.reply_timeout = 100ms;
  limits.client_memory_bytes = 64 << 20;
  ServerThread server("hostile-generator", limits);
  std::mt19937_64 rng(seed);
  FdZoo zoo(rng);
  const auto t0 = std::chrono::steady_clock::now();
  std::uint64_t clients = 0, messages = 0;
  while (std::chrono::steady_clock::now() - t0 < budget || clients < 20) {
    ++clients;
    {
      RawClient c(server.path());
      const bool reads = rng() % 4 != 0;  // one in four never reads a reply
      const unsigned n = 1 + static_cast<unsigned>(rng() % 40);
      try {
        for (unsigned i = 0; i < n; ++i, ++messages) {
          static const Command commands[] = {Command::kVersion,         Command::kDmaMap,
                                             Command::kDmaUnmap,        Command::kDeviceGetInfo,
                                             Command::kDeviceGetRegionInfo, Command::kDeviceGetIrqInfo,
                                             Command::kDeviceSetIrqs,   Command::kRegionRead,
                                             Command::kRegionWrite,     Command::kDeviceReset,
                                             static_cast<Command>(rng() % 64)};
          const Command cmd = commands[rng() % (sizeof commands / sizeof commands[0])];
          const std::vector<int> fds = zoo.pick(rng() % 3 == 0 ? rng() % 4 : 0);
          if (rng() % 50 == 0) {  // a header that lies about its size, then the connection goes
            std::vector<std::uint8_t> bad(vfio::kHeaderBytes + rng() % 8, 0xFF);
            c.send_raw(bad);
            break;
          }
          c.send(cmd, hostile_payload(cmd, rng), fds.empty() ? nullptr : fds.data(), fds.size());
          zoo.clear();
          if (reads) {
            const vfio::Message reply = c.channel().receive(2s);
            if (cmd == Command::kDeviceGetRegionInfo && reply.fds.size() == 2) scribble_on_doorbells(reply, rng);
          }
        }
      } catch (const std::runtime_error&) {
        // Disconnected, a reply cut short, no reply in time: the client's problem, not the server's.
      }
      zoo.clear();
    }
    if (clients % 8 == 0) {  // the server still answers a well-behaved client
      RawClient probe(server.path());
      ASSERT_EQ(error_of(probe.ask(Command::kVersion, encode(vfio::Version{}))), 0u)
          << "seed " << seed << ", after client " << clients;
    }
  }
  round_trip(*engine_at(server), 1 << 20, 9);
  EXPECT_LT(server.stop(), 1s);
  std::printf("hostile clients: %llu clients, %llu messages, seed %llu, server log lines %d\n",
              static_cast<unsigned long long>(clients), static_cast<unsigned long long>(messages),
              static_cast<unsigned long long>(seed), server.logged());
}

}  // namespace
