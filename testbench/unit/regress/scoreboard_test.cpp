// The scoreboard tells "not copied", "corrupted", "out of range write" and "source overwritten"
// apart, skips what a failed op left undefined, and catches a stray byte at the full check.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "scoreboard.hpp"

namespace spyre_dma::regress {
namespace {

class VectorPort final : public MemoryPort {
 public:
  explicit VectorPort(std::vector<std::uint8_t>& mem) : mem_(mem) {}
  void read(std::uint64_t off, std::uint8_t* dst, std::size_t n) const override { std::memcpy(dst, mem_.data() + off, n); }
  void write(std::uint64_t off, const std::uint8_t* src, std::size_t n) override { std::memcpy(mem_.data() + off, src, n); }

 private:
  std::vector<std::uint8_t>& mem_;
};

class ScoreboardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    src.resize(8192);
    dst.resize(8192);
    s = sb.add_region("src", std::make_unique<VectorPort>(src), src.size(), 7);
    d = sb.add_region("dst", std::make_unique<VectorPort>(dst), dst.size(), 7);
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

TEST_F(ScoreboardTest, RegionsStartWithDistinctPatterns) {
  EXPECT_NE(std::memcmp(src.data(), dst.data(), src.size()), 0);
}

TEST_F(ScoreboardTest, ACorrectCopyPasses) {
  const Access a = copy(100, 1024, 1000);
  sb.submitted(0, a);
  do_copy(a);
  sb.completed(0, a, true);
  sb.verify_epoch();
  sb.verify_all();
  EXPECT_TRUE(findings.empty()) << findings.list().front().message;
}

TEST_F(ScoreboardTest, UntouchedDestinationIsNotCopied) {
  const Access a = copy(0, 1024, 512);
  sb.submitted(0, a);
  sb.completed(0, a, true);
  EXPECT_EQ(kinds(), std::vector<FindingKind>{FindingKind::kNotCopied});
}

TEST_F(ScoreboardTest, WrongBytesAreCorruption) {
  const Access a = copy(0, 1024, 512);
  sb.submitted(0, a);
  do_copy(a);
  dst[1024 + 77] ^= 0xFF;
  sb.completed(0, a, true);
  EXPECT_EQ(kinds(), std::vector<FindingKind>{FindingKind::kCorrupted});
}

TEST_F(ScoreboardTest, AWriteNextToTheDestinationIsOutOfRange) {
  const Access a = copy(0, 1024, 512);
  sb.submitted(0, a);
  do_copy(a);
  dst[1024 + 512 + 3] = static_cast<std::uint8_t>(dst[1024 + 512 + 3] ^ 1);
  sb.completed(0, a, true);
  EXPECT_EQ(kinds(), std::vector<FindingKind>{FindingKind::kOutOfRangeWrite});
}

TEST_F(ScoreboardTest, AChangedSourceIsReported) {
  const Access a = copy(0, 1024, 512);
  sb.submitted(0, a);
  do_copy(a);
  src[10] ^= 0x10;
  sb.completed(0, a, true);
  EXPECT_EQ(kinds().front(), FindingKind::kSourceOverwritten);
}

TEST_F(ScoreboardTest, ConcurrentNeighboursAreNotOutOfRange) {
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

TEST_F(ScoreboardTest, AFailedOpLeavesItsDestinationUnknownUntilTheEpochEnds) {
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

TEST_F(ScoreboardTest, AStrayByteShowsAtTheFullCheck) {
  dst[8000] ^= 1;
  sb.verify_all();
  EXPECT_EQ(kinds(), std::vector<FindingKind>{FindingKind::kEpochMismatch});
}

TEST_F(ScoreboardTest, FillsAreCheckedAgainstTheirPattern) {
  const Access f{-1, 0, d, 256, 10, 0x11223344};
  sb.submitted(0, f);
  const std::uint8_t want[10] = {0x44, 0x33, 0x22, 0x11, 0x44, 0x33, 0x22, 0x11, 0x44, 0x33};
  std::memcpy(dst.data() + 256, want, 10);
  sb.completed(0, f, true);
  EXPECT_TRUE(findings.empty());
}

TEST_F(ScoreboardTest, CorruptFlipsARealByte) {
  sb.corrupt(d, 5);
  sb.verify_all();
  EXPECT_EQ(findings.total(), 1u);
}

}  // namespace
}  // namespace spyre_dma::regress
