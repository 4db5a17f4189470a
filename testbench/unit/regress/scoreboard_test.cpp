// The scoreboard tells "not copied", "corrupted", "out of range write" and "source overwritten"
// apart, skips what a failed op left undefined, and catches a stray byte at the full check; all of
// it whether the memory is read through copies, in place, or in place in short runs (as device
// memory is, chunk by chunk and page by page).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "scoreboard.hpp"

namespace spyre_dma::regress {
namespace {

// Memory in a vector. `run` 0: reached only by copies; otherwise in place, in runs that end at
// every multiple of `run` bytes, and written in place by set-up where it all lies in one run (as a
// host buffer is).
class VectorPort final : public MemoryPort {
 public:
  VectorPort(std::vector<std::uint8_t>& mem, std::size_t run) : mem_(mem), run_(run) {}
  void read(std::uint64_t off, std::uint8_t* dst, std::size_t n) const override { std::memcpy(dst, mem_.data() + off, n); }
  void write(std::uint64_t off, const std::uint8_t* src, std::size_t n) override { std::memcpy(mem_.data() + off, src, n); }
  const std::uint8_t* view(std::uint64_t off, std::size_t n, std::size_t& got) const override {
    got = run_ == 0 ? 0 : std::min<std::size_t>(n, run_ - off % run_);
    return run_ == 0 ? nullptr : mem_.data() + off;
  }
  std::uint8_t* writable(std::uint64_t off, std::size_t n) override {
    return run_ != 0 && off / run_ == (off + n - 1) / run_ ? mem_.data() + off : nullptr;
  }

 private:
  std::vector<std::uint8_t>& mem_;
  std::size_t run_;
};

class ScoreboardTest : public ::testing::TestWithParam<std::size_t> {
 protected:
  void SetUp() override {
    src.resize(8192);
    dst.resize(8192);
    s = sb.add_region("src", std::make_unique<VectorPort>(src, GetParam()), src.size(), 7);
    d = sb.add_region("dst", std::make_unique<VectorPort>(dst, GetParam()), dst.size(), 7);
  }
  Access copy(std::uint64_t from, std::uint64_t to, std::uint64_t n) const { return Access{s, from, d, to, n, 0}; }
  void do_copy(const Access& a) { std::memcpy(dst.data() + a.dst_offset, src.data() + a.src_offset, a.bytes); }
  std::vector<FindingKind> kinds() const {
    std::vector<FindingKind> k;
    for (const Finding& f : findings.list()) k.push_back(f.kind);
    return k;
  }

  Findings findings;
  Scoreboard sb{findings, 64};
  std::vector<std::uint8_t> src, dst;
  int s = 0, d = 0;
};

TEST_P(ScoreboardTest, RegionsStartWithDistinctPatterns) {
  EXPECT_NE(std::memcmp(src.data(), dst.data(), src.size()), 0);
}

TEST_P(ScoreboardTest, ACorrectCopyPasses) {
  const Access a = copy(100, 1024, 1000);
  sb.submitted(0, a);
  do_copy(a);
  sb.completed(0, a, true);
  sb.verify_epoch();
  sb.verify_all();
  EXPECT_TRUE(findings.empty()) << findings.list().front().message;
}

TEST_P(ScoreboardTest, UntouchedDestinationIsNotCopied) {
  const Access a = copy(0, 1024, 512);
  sb.submitted(0, a);
  sb.completed(0, a, true);
  EXPECT_EQ(kinds(), std::vector<FindingKind>{FindingKind::kNotCopied});
}

TEST_P(ScoreboardTest, WrongBytesAreCorruption) {
  const Access a = copy(0, 1024, 512);
  sb.submitted(0, a);
  do_copy(a);
  dst[1024 + 77] ^= 0xFF;
  sb.completed(0, a, true);
  EXPECT_EQ(kinds(), std::vector<FindingKind>{FindingKind::kCorrupted});
}

TEST_P(ScoreboardTest, AWriteNextToTheDestinationIsOutOfRange) {
  const Access a = copy(0, 1024, 512);
  sb.submitted(0, a);
  do_copy(a);
  dst[1024 + 512 + 3] = static_cast<std::uint8_t>(dst[1024 + 512 + 3] ^ 1);
  sb.completed(0, a, true);
  EXPECT_EQ(kinds(), std::vector<FindingKind>{FindingKind::kOutOfRangeWrite});
}

TEST_P(ScoreboardTest, AChangedSourceIsReported) {
  const Access a = copy(0, 1024, 512);
  sb.submitted(0, a);
  do_copy(a);
  src[10] ^= 0x10;
  sb.completed(0, a, true);
  EXPECT_EQ(kinds().front(), FindingKind::kSourceOverwritten);
}

TEST_P(ScoreboardTest, ConcurrentNeighboursAreNotOutOfRange) {
  // Two ops side by side: the second one's bytes change while the first completes.
  const Access a = copy(0, 1024, 512), b = copy(512, 1536, 512);
  sb.submitted(0, a);
  sb.submitted(1, b);
  do_copy(a);
  do_copy(b);
  sb.completed(0, a, true);
  sb.completed(1, b, true);
  EXPECT_TRUE(findings.empty());
}

TEST_P(ScoreboardTest, AFailedOpLeavesItsDestinationUnknownUntilTheEpochEnds) {
  const Access a = copy(0, 1024, 512);
  sb.submitted(0, a);
  std::memset(dst.data() + 1024, 0xEE, 100);  // a partial, wrong write: allowed for a failed op
  sb.completed(0, a, false);
  // A copy of the unknown bytes onwards is unknown as well: no finding for it.
  const Access b{d, 1024, s, 4096, 512, 0};
  sb.submitted(1, b);
  std::memcpy(src.data() + 4096, dst.data() + 1024, 512);
  sb.completed(1, b, true);
  sb.verify_epoch();
  sb.verify_all();
  EXPECT_TRUE(findings.empty()) << findings.list().front().message;
  EXPECT_EQ(sb.unknown_bytes_adopted(), 1024u);
}

TEST_P(ScoreboardTest, AStrayByteShowsAtTheFullCheck) {
  dst[8000] ^= 1;
  sb.verify_all();
  EXPECT_EQ(kinds(), std::vector<FindingKind>{FindingKind::kEpochMismatch});
}

TEST_P(ScoreboardTest, FillsAreCheckedAgainstTheirPattern) {
  const Access f{-1, 0, d, 256, 10, 0x11223344};
  sb.submitted(0, f);
  const std::uint8_t want[10] = {0x44, 0x33, 0x22, 0x11, 0x44, 0x33, 0x22, 0x11, 0x44, 0x33};
  std::memcpy(dst.data() + 256, want, 10);
  sb.completed(0, f, true);
  EXPECT_TRUE(findings.empty());
}

TEST_P(ScoreboardTest, CorruptFlipsARealByte) {
  sb.corrupt(d, 5);
  sb.verify_all();
  EXPECT_EQ(findings.total(), 1u);
}

// Set-up gives a region the same bytes whether it makes them in place or writes them, a last word
// cut short by the region's end included.
TEST_P(ScoreboardTest, SetUpWritesTheSameBytesInPlaceAndThroughWrites) {
  const auto region_bytes = [](std::size_t run) {
    Findings f;
    Scoreboard board{f, 64};
    std::vector<std::uint8_t> mem(8195, 0xAB);
    (void)board.add_region("r", std::make_unique<VectorPort>(mem, run), mem.size(), 9);
    board.verify_all();
    EXPECT_TRUE(f.empty());
    return mem;
  };
  const std::vector<std::uint8_t> written = region_bytes(0), here = region_bytes(GetParam());
  EXPECT_EQ(here, written);
  EXPECT_EQ(std::count(here.end() - 3, here.end(), 0xAB), 0);  // the tail was written too
}

// The memory digest hashes the same blocks however the port lays its memory out.
TEST_P(ScoreboardTest, TheMemoryDigestDoesNotDependOnHowTheMemoryIsReached) {
  Digest here;
  sb.verify_all(&here);
  Findings other_findings;
  Scoreboard other{other_findings, 64};
  std::vector<std::uint8_t> a(8192), b(8192);
  (void)other.add_region("src", std::make_unique<VectorPort>(a, 0), a.size(), 7);
  (void)other.add_region("dst", std::make_unique<VectorPort>(b, 0), b.size(), 7);
  Digest copied;
  other.verify_all(&copied);
  EXPECT_EQ(here.hex(), copied.hex());
}

// The memory digest changes with any byte that differs from the shadow, and with what the epochs
// adopted from failed ops, though bytes equal to the shadow are not hashed.
TEST_P(ScoreboardTest, TheMemoryDigestSeesEveryByteThatCanDiffer) {
  Digest clean, flipped, other;
  sb.verify_all(&clean);
  dst[100] ^= 1;
  sb.verify_all(&flipped);
  dst[100] ^= 3;
  sb.verify_all(&other);
  EXPECT_NE(clean.hex(), flipped.hex());
  EXPECT_NE(flipped.hex(), other.hex());

  const auto adopted_digest = [](std::uint8_t written) {
    Findings f;
    Scoreboard board{f, 64};
    std::vector<std::uint8_t> a(4096), b(4096);
    const int from = board.add_region("src", std::make_unique<VectorPort>(a, GetParam()), a.size(), 7);
    const int to = board.add_region("dst", std::make_unique<VectorPort>(b, GetParam()), b.size(), 7);
    const Access op{from, 0, to, 512, 256, 0};
    board.submitted(0, op);
    std::memset(b.data() + 512, written, 100);  // what a failed op left: not known to the scoreboard
    board.completed(0, op, false);
    board.verify_epoch();  // adopts it
    Digest digest;
    board.verify_all(&digest);
    EXPECT_TRUE(f.empty());
    return digest.hex();
  };
  EXPECT_NE(adopted_digest(0x11), adopted_digest(0x22));
}

INSTANTIATE_TEST_SUITE_P(Ports, ScoreboardTest, ::testing::Values(std::size_t{0}, std::size_t{1} << 30, std::size_t{1000}),
                         [](const ::testing::TestParamInfo<std::size_t>& i) {
                           return i.param == 0 ? std::string("Copied") : i.param > 8192 ? std::string("InPlace")
                                                                                       : std::string("InPlaceRuns");
                         });

}  // namespace
}  // namespace spyre_dma::regress
