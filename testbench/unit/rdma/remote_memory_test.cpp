// Remote memory: handles as text, and one-sided puts and gets between two UCX nodes (two workers
// in one process; testbench/rdma/two_processes.py runs them in two). Every error names what is
// wrong and moves nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <cstring>
#include <numeric>
#include <vector>

#include "spyre_dma/rdma/remote_handle.hpp"
#include "spyre_dma/rdma/ucx_node.hpp"

namespace spyre_dma::rdma {
namespace {

using namespace std::chrono_literals;

std::string error_of(std::string_view text) {
  try {
    (void)RemoteHandle::from_text(text);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "no error";
}

TEST(RemoteHandle, TextRoundTrip) {
  RemoteHandle h;
  h.owner = std::string("\x00\x01\xff owner", 9);
  h.base = 0x7f0012345000;
  h.size = 4 << 20;
  h.key = std::string("key\x00\x80", 5);
  const std::string text = h.to_text();
  EXPECT_EQ(text.rfind("spyre-dma-remote 1 size=4194304 base=0x7f0012345000 owner=0001ff", 0), 0u) << text;
  EXPECT_EQ(RemoteHandle::from_text(text + "\n"), h);
}

TEST(RemoteHandle, MalformedTextNamesTheField) {
  const std::string ok = "spyre-dma-remote 1 size=64 base=0x1000 owner=00ff key=ab";
  EXPECT_NO_THROW(RemoteHandle::from_text(ok));
  EXPECT_NE(error_of("").find("is empty"), std::string::npos);
  EXPECT_NE(error_of("hello 1 size=1").find("does not start with 'spyre-dma-remote'"), std::string::npos);
  EXPECT_NE(error_of("spyre-dma-remote 2 size=1").find("version '2'"), std::string::npos);
  EXPECT_NE(error_of("spyre-dma-remote 1 base=0x1000 owner=00 key=ab").find("field 'size' is missing"), std::string::npos);
  EXPECT_NE(error_of(ok + " size=3").find("field 'size' appears twice"), std::string::npos);
  EXPECT_NE(error_of(ok + " color=red").find("unknown field 'color'"), std::string::npos);
  EXPECT_NE(error_of("spyre-dma-remote 1 size=6x4 base=0x1000 owner=00 key=ab").find("size '6x4' is not a number"),
            std::string::npos);
  EXPECT_NE(error_of("spyre-dma-remote 1 size=64 base=0x1000 owner=0 key=ab").find("owner '0' is not whole hex"),
            std::string::npos);
  EXPECT_NE(error_of("spyre-dma-remote 1 size=64 base=0x1000 owner=00 key=zz").find("key has a non-hex digit"),
            std::string::npos);
  EXPECT_NE(error_of("spyre-dma-remote 1 size=0 base=0x1000 owner=00 key=ab").find("size is 0"), std::string::npos);
  EXPECT_NE(error_of("spyre-dma-remote 1 size=2 base=0xffffffffffffffff owner=00 key=ab").find("passes the end"),
            std::string::npos);
}

// Two nodes; B exposes the middle of a buffer with guard bytes around it.
struct Pair {
  UcxNode a, b;
  std::vector<std::uint8_t> memory = std::vector<std::uint8_t>(3 << 20, 0xa5);
  std::uint8_t* range = memory.data() + (1 << 20);
  static constexpr std::uint64_t kRange = 1 << 20;
  RemoteHandle handle = b.expose(range, kRange);
  bool guards_intact() const {
    return std::all_of(memory.begin(), memory.begin() + (1 << 20), [](std::uint8_t x) { return x == 0xa5; }) &&
           std::all_of(memory.end() - (1 << 20), memory.end(), [](std::uint8_t x) { return x == 0xa5; });
  }
};

TEST(UcxNode, PutAndGetAreByteExactInBothDirectionsOfSize) {
  Pair p;
  // The handle goes through text, as it would between processes.
  const RemoteHandle remote = RemoteHandle::from_text(p.handle.to_text());
  for (std::uint64_t bytes : {1ull, 8ull, 4095ull, 65536ull, 1000003ull}) {
    std::vector<std::uint8_t> out(bytes), back(bytes, 0);
    std::iota(out.begin(), out.end(), static_cast<std::uint8_t>(bytes));
    const std::uint64_t offset = Pair::kRange - bytes;  // up to the range's last byte
    ASSERT_TRUE(p.a.put(remote, offset, out.data(), bytes, 10s).ok()) << bytes;
    EXPECT_EQ(std::memcmp(p.range + offset, out.data(), bytes), 0) << "in the peer's memory, " << bytes;
    ASSERT_TRUE(p.a.get(back.data(), remote, offset, bytes, 10s).ok()) << bytes;
    EXPECT_EQ(back, out) << bytes;
  }
  EXPECT_TRUE(p.guards_intact());
}

TEST(UcxNode, ManyTransfersInFlightEachCompleteOnce) {
  Pair p;
  std::vector<std::vector<std::uint8_t>> blocks(32, std::vector<std::uint8_t>(32 << 10));
  std::vector<Transfer> puts;
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    std::fill(blocks[i].begin(), blocks[i].end(), static_cast<std::uint8_t>(i + 1));
    puts.push_back(p.a.put(p.handle, i * (32 << 10), blocks[i].data(), blocks[i].size()));
  }
  for (auto& t : puts) EXPECT_TRUE(t.wait(10s).ok());
  for (std::size_t i = 0; i < blocks.size(); ++i) EXPECT_EQ(p.range[i * (32 << 10) + 7], i + 1);
  for (auto& t : puts) EXPECT_TRUE(t.done());
}

TEST(UcxNode, AnAccessOutsideTheRangeIsRefusedAndMovesNothing) {
  Pair p;
  std::vector<std::uint8_t> data(4096, 0x11);
  const Status past_end = p.a.put(p.handle, Pair::kRange - 4095, data.data(), 4096, 10s);
  EXPECT_EQ(past_end.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(past_end.message().find("4096 bytes at offset 1044481 leave the remote range of 1048576 bytes"),
            std::string::npos)
      << past_end.message();
  EXPECT_EQ(p.a.get(data.data(), p.handle, ~0ull, 1, 10s).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(p.a.put(p.handle, 0, data.data(), 0, 10s).code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(std::all_of(p.memory.begin(), p.memory.end(), [](std::uint8_t x) { return x == 0xa5; }));
}

TEST(UcxNode, AKeyOrAnOwnerNoNodeIssuedIsRefused) {
  Pair p;
  std::vector<std::uint8_t> data(64, 1);
  RemoteHandle forged = p.handle;
  forged.key[forged.key.size() / 2] ^= 0x40;
  const Status k = p.a.put(forged, 0, data.data(), data.size(), 10s);
  EXPECT_EQ(k.code(), ErrorCode::kRemoteAccess);
  EXPECT_NE(k.message().find("the key fails its checksum"), std::string::npos) << k.message();
  RemoteHandle stranger = p.handle;
  stranger.owner = "not an address";
  const Status o = p.a.get(data.data(), stranger, 0, data.size(), 10s);
  EXPECT_EQ(o.code(), ErrorCode::kRemoteAccess);
  EXPECT_NE(o.message().find("the owner is not one a node issued"), std::string::npos) << o.message();
  EXPECT_TRUE(p.guards_intact());
  // The node and its connection to the real peer are still usable.
  EXPECT_TRUE(p.a.put(p.handle, 0, data.data(), data.size(), 10s).ok());
}

// A peer that does not progress (and a transport that needs it to): the wait gives up at its
// timeout, cancels the transfer and says so; once the peer moves again the connection works.
TEST(UcxNode, AWaitGivesUpAtItsTimeout) {
  UcxNode a;
  UcxNode b(UcxNode::Progress::kCaller);
  std::vector<std::uint8_t> range(4096, 0), data(64, 7);
  const RemoteHandle h = b.expose(range.data(), range.size());
  const auto start = std::chrono::steady_clock::now();
  const Status s = a.put(h, 0, data.data(), data.size(), 200ms);
  if (s.ok()) GTEST_SKIP() << "this transport moved the data with no progress at the owner";
  EXPECT_EQ(s.code(), ErrorCode::kWaitTimeout) << s.to_string();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  std::atomic<bool> stop{false};
  std::thread owner([&] {
    while (!stop) b.progress();
  });
  EXPECT_TRUE(a.put(h, 0, data.data(), data.size(), 10s).ok());
  stop = true;
  owner.join();
  EXPECT_EQ(range[63], 7);
}

TEST(UcxNode, RevokeTakesOnlyWhatTheNodeExposed) {
  Pair p;
  EXPECT_THROW(p.a.revoke(p.handle), InvalidArgument);  // B's range, not A's
  p.b.revoke(p.handle);
  EXPECT_THROW(p.b.revoke(p.handle), InvalidArgument);  // once
  EXPECT_THROW(p.b.expose(nullptr, 64), InvalidArgument);
}

}  // namespace
}  // namespace spyre_dma::rdma
