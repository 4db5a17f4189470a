// FairShare (model/src/pcie/fair_share.hpp): two classes that share a resource in turn get equal
// bytes while both have work, each the whole resource alone, and one that asks for less leaves the
// rest to the other.
#include <gtest/gtest.h>

#include <cstdint>

#include "pcie/fair_share.hpp"
#include "pcie/link_math.hpp"

namespace pcie = spyre_dma::model::pcie;

namespace {

// Each class books `piece` bytes every `every_ps` of the kernel's time (0: not at all), each
// piece asked for at the time it is booked, for `until`; returns the bytes each moved by then.
struct Moved {
  double read_gbps = 0, write_gbps = 0;
};
Moved stream(pcie::FairShare& fs, pcie::Ps read_every, pcie::Ps write_every, std::uint64_t piece, pcie::Ps until) {
  pcie::Ps read_next = 0, write_next = 0, read_done = 0, write_done = 0;
  std::uint64_t read_bytes = 0, write_bytes = 0;
  for (pcie::Ps now = 0; now < until; now += 1000) {
    // A class keeps up to one piece queued: it asks again once its last piece is through.
    if (read_every && now >= read_next && now >= read_done) {
      read_done = fs.book(pcie::FairShare::kRead, now, piece, now).end;
      read_bytes += piece;
      read_next = now + read_every;
    }
    if (write_every && now >= write_next && now >= write_done) {
      write_done = fs.book(pcie::FairShare::kWrite, now, piece, now).end;
      write_bytes += piece;
      write_next = now + write_every;
    }
  }
  return Moved{double(read_bytes) / double(until) * 1000, double(write_bytes) / double(until) * 1000};
}

}  // namespace

TEST(PcieFairShare, EqualRatesShareEvenlyAndAloneTakeItAll) {
  const pcie::PsPerByte rate{10, 1};  // 100 GB/s
  {
    pcie::FairShare fs(rate, rate);
    const Moved m = stream(fs, 1, 0, 4096, 200'000'000);  // reads alone, as fast as they can
    EXPECT_NEAR(m.read_gbps, 100, 3);
  }
  {
    pcie::FairShare fs(rate, rate);
    const Moved m = stream(fs, 1, 1, 4096, 200'000'000);  // both as fast as they can
    EXPECT_NEAR(m.read_gbps, 50, 2);
    EXPECT_NEAR(m.write_gbps, 50, 2);
  }
  {
    pcie::FairShare fs(rate, rate);
    const Moved m = stream(fs, 1, 200'000, 4096, 200'000'000);  // writes ask for 20 GB/s
    EXPECT_NEAR(m.write_gbps, 20.5, 1);
    EXPECT_NEAR(m.read_gbps, 80, 3) << "the reads take what the writes leave";
  }
}

TEST(PcieFairShare, UnequalCostsShareEqualBytes) {
  // Memory that reads at 200 GB/s and writes at 100: equal bytes in turn, x (1/200 + 1/100) = 1,
  // 66.7 GB/s each.
  pcie::FairShare fs(pcie::PsPerByte{5, 1}, pcie::PsPerByte{10, 1});
  const Moved m = stream(fs, 1, 1, 4096, 200'000'000);
  EXPECT_NEAR(m.read_gbps, 66.7, 2);
  EXPECT_NEAR(m.write_gbps, 66.7, 2);
}
