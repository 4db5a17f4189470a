// The regression bench's random numbers: splitmix64 with Lemire's bounded draw. Written out
// rather than taken from <random> because the standard distributions differ between library
// implementations, and a seed must mean the same test everywhere.
#pragma once

#include <cstdint>

namespace spyre_dma::regress {

// GCC and Clang both have a 128-bit integer; __extension__ keeps -Wpedantic quiet about it.
__extension__ typedef unsigned __int128 Uint128;

class Rng {
 public:
  explicit Rng(std::uint64_t seed) noexcept : state_(seed) {}

  std::uint64_t next() noexcept {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n); 0 when n is 0.
  std::uint64_t below(std::uint64_t n) noexcept {
    if (n == 0) return 0;
    return static_cast<std::uint64_t>((static_cast<Uint128>(next()) * n) >> 64);
  }
  // Uniform in [lo, hi].
  std::uint64_t between(std::uint64_t lo, std::uint64_t hi) noexcept { return lo + below(hi - lo + 1); }
  double unit() noexcept { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  bool chance(double p) noexcept { return unit() < p; }

 private:
  std::uint64_t state_;
};

// A stateless mix of a 64-bit value: data patterns derived from (buffer, offset) without a
// generator to carry around.
inline std::uint64_t mix64(std::uint64_t x) noexcept {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

}  // namespace spyre_dma::regress
