// The doorbell region: the log's order and bounds on its own, the region as the server offers it,
// and a client that corrupts the log (disconnected and named, the server unharmed).
#include <gtest/gtest.h>

#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "doorbell_log.hpp"
#include "server_fixture.hpp"
#include "spyre_dma/hw/contract.hpp"
#include "spyre_dma/vfio/client.hpp"

namespace spyre_dma::vfio {
namespace {

using namespace std::chrono_literals;
using testing::RawClient;
using testing::ServerThread;

// A page as both sides see it (one process here), and a socket pair standing for the connection.
struct Page {
  Page() {
    void* p = ::mmap(nullptr, kDoorbellRegionBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("no page");
    page = static_cast<DoorbellPage*>(p);
    wake.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) throw std::runtime_error("no socket pair");
    ours.reset(sv[0]);
    theirs.reset(sv[1]);
  }
  ~Page() { ::munmap(page, kDoorbellRegionBytes); }
  DoorbellPage* page = nullptr;
  UniqueFd wake, ours, theirs;
};

TEST(DoorbellLog, KeepsEveryWriteInOrderAcrossManyWrapsWhileTheReaderDrainsConcurrently) {
  Page p;
  DoorbellWriter writer(p.page, p.wake.get(), p.ours.get());
  DoorbellReader reader(p.page);
  constexpr std::uint64_t kWrites = 20 * DoorbellPage::kEntries + 7;
  std::vector<std::uint64_t> seen;
  std::atomic<bool> bad{false};
  std::thread drain([&] {
    while (seen.size() < kWrites) {
      reader.drain([&](std::uint64_t offset, unsigned width, std::uint64_t value) {
        // Offsets and widths travel with their values: alternate registers, alternate widths.
        const std::uint64_t i = seen.size();
        if (offset != hw::reg::pipe(static_cast<hw::Pipeline>(i % 3), hw::reg::kCbPi) || width != (i % 2 ? 8u : 4u)) {
          bad.store(true);
        }
        seen.push_back(value);
      });
      std::this_thread::yield();
    }
  });
  for (std::uint64_t i = 0; i < kWrites; ++i) {
    writer.append(hw::reg::pipe(static_cast<hw::Pipeline>(i % 3), hw::reg::kCbPi), i % 2 ? 8 : 4, i * 3, 10s,
                  "the test's reader");
  }
  drain.join();
  EXPECT_FALSE(bad.load());
  ASSERT_EQ(seen.size(), kWrites);
  for (std::uint64_t i = 0; i < kWrites; ++i) ASSERT_EQ(seen[i], i * 3) << "write " << i;
  EXPECT_TRUE(writer.applied(kWrites - 1));
}

TEST(DoorbellLog, AFullLogThatNobodyDrainsFailsTheWriteNamingThePeer) {
  Page p;
  DoorbellWriter writer(p.page, p.wake.get(), p.ours.get());
  for (std::size_t i = 0; i < DoorbellPage::kEntries; ++i) writer.append(0x100C, 4, i, 1s, "the server at x.sock");
  try {
    writer.append(0x100C, 4, 0, 50ms, "the server at x.sock");
    FAIL() << "a full log took a write";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("the server at x.sock took no doorbell from its full log"), std::string::npos)
        << e.what();
  }
}

TEST(DoorbellLog, AWaitOnAServerThatIsGoneEndsAtOnce) {
  Page p;
  DoorbellWriter writer(p.page, p.wake.get(), p.ours.get());
  const std::uint64_t n = writer.append(0x100C, 4, 1, 1s, "the server");
  p.theirs.reset();  // the server's end of the connection closes
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(writer.wait_applied(n, 30s, "the server"), std::runtime_error);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
}

TEST(DoorbellLog, ASleepingReaderIsKickedAndAnAwakeOneIsNot) {
  Page p;
  DoorbellWriter writer(p.page, p.wake.get(), p.ours.get());
  DoorbellReader reader(p.page);
  std::uint64_t kicks = 0;
  writer.append(0x100C, 4, 1, 1s, "the server");
  EXPECT_LT(::read(p.wake.get(), &kicks, sizeof kicks), 0) << "an awake reader was kicked";
  reader.set_sleeping(true);
  writer.append(0x100C, 4, 2, 1s, "the server");
  ASSERT_EQ(::read(p.wake.get(), &kicks, sizeof kicks), static_cast<ssize_t>(sizeof kicks));
  EXPECT_EQ(kicks, 1u);
  reader.set_sleeping(false);
  EXPECT_TRUE(reader.has_entries());
  EXPECT_EQ(reader.drain([](std::uint64_t, unsigned, std::uint64_t) {}), 2u);
  EXPECT_FALSE(reader.has_entries());
}

TEST(DoorbellLog, TheReaderRefusesALogTheClientCorruptedNamingTheField) {
  Page p;
  DoorbellReader reader(p.page);
  const auto nothing = [](std::uint64_t, unsigned, std::uint64_t) {};
  p.page->produced.store(DoorbellPage::kEntries + 1);  // ahead of what the page holds
  try {
    reader.drain(nothing);
    FAIL() << "a count beyond the page was taken";
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("field produced is " + std::to_string(DoorbellPage::kEntries + 1)),
              std::string::npos)
        << e.what();
  }
  Page q;
  DoorbellReader second(q.page);
  q.page->entries[0].offset_width.store(0x100C | (std::uint64_t{3} << 32));
  q.page->produced.store(1);
  try {
    second.drain(nothing);
    FAIL() << "a write of 3 bytes was applied";
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("field width is 3"), std::string::npos) << e.what();
  }
}

// The server's REGION_INFO reply for the doorbell region.
Message ask_doorbell_region(RawClient& client) {
  RegionInfo ask;
  ask.index = kDoorbellRegion;
  return client.ask(Command::kDeviceGetRegionInfo, encode(ask));
}

// The region as the server offers it: a vendor region with the sparse-mmap capability over the
// whole page and two descriptors; reads and writes of it by message are refused.
TEST(DoorbellRegion, IsOfferedAsAMappablePageWithItsWakeUpEventfd) {
  ServerThread server("doorbell-offer");
  RawClient client(server.path());
  Message m = ask_doorbell_region(client);
  ASSERT_EQ(testing::error_of(m), 0u);
  Reader r = m.reader();
  const RegionInfo info = parse_region_info(r);
  EXPECT_TRUE(info.has_type);
  EXPECT_EQ(info.subtype, kDoorbellRegionSubtype);
  EXPECT_EQ(info.size, kDoorbellRegionBytes);
  EXPECT_NE(info.flags & kRegionMmap, 0u);
  ASSERT_EQ(info.sparse_areas.size(), 1u);
  EXPECT_EQ(info.sparse_areas[0].offset, 0u);
  EXPECT_EQ(info.sparse_areas[0].size, kDoorbellRegionBytes);
  ASSERT_EQ(m.fds.size(), 2u);
  RegionAccess read;
  read.region = kDoorbellRegion;
  read.count = 8;
  EXPECT_EQ(testing::error_of(client.ask(Command::kRegionRead, encode(read))), static_cast<std::uint32_t>(EINVAL));
}

// A client that writes garbage into the log is disconnected and named; the next client is served.
TEST(DoorbellRegion, AClientThatCorruptsTheLogIsDisconnectedAndTheServerServesTheNext) {
  ServerThread server("doorbell-corrupt");
  {
    RawClient client(server.path());
    Message m = ask_doorbell_region(client);
    ASSERT_EQ(m.fds.size(), 2u);
    void* p = ::mmap(nullptr, kDoorbellRegionBytes, PROT_READ | PROT_WRITE, MAP_SHARED, m.fds[0].get(), 0);
    ASSERT_NE(p, MAP_FAILED);
    auto* page = static_cast<DoorbellPage*>(p);
    page->produced.store(1ull << 40);  // far beyond what was logged
    const std::uint64_t one = 1;
    ASSERT_EQ(::write(m.fds[1].get(), &one, sizeof one), static_cast<ssize_t>(sizeof one));
    // The server closes the connection: the next receive sees it.
    EXPECT_THROW((void)client.channel().receive(5s), ConnectionClosed);
    ::munmap(p, kDoorbellRegionBytes);
  }
  EXPECT_NE(server.last_logged().find("field produced"), std::string::npos) << server.last_logged();
  EXPECT_NE(server.last_logged().find("the connection is closed"), std::string::npos) << server.last_logged();
  ClientOptions o;
  o.socket_path = server.path();
  auto engine = Engine::open(connect(o));
  testing::round_trip(*engine, 64 << 10, 3);
}

// Both paths carry the same writes: an engine over each, mapped and not, moves the same bytes.
TEST(DoorbellRegion, AnEngineWorksWithTheRegionMappedAndWithout) {
  ServerThread server("doorbell-both", ServerLimits{2});
  for (const bool mapped : {true, false}) {
    ClientOptions o;
    o.socket_path = server.path();
    o.map_doorbells = mapped;
    auto engine = Engine::open(connect(o));
    for (std::uint8_t seed = 0; seed < 8; ++seed) testing::round_trip(*engine, 4096u << seed, seed);
  }
}

}  // namespace
}  // namespace spyre_dma::vfio
