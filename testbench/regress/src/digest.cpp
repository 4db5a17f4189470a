#include "digest.hpp"

#include <cstring>

#include <fmt/format.h>

#include "vector_clones.hpp"

namespace spyre_dma::regress {

SPYRE_DMA_VECTOR_CLONES std::uint64_t hash_bytes(const void* data, std::size_t n) noexcept {
  // FNV-1a over 64-bit words in eight independent lanes: a lane's multiply waits on its last one,
  // and eight in flight keep the multiplier busy (1.5x four lanes' bytes per second).
  constexpr unsigned kLanes = 8;
  constexpr std::uint64_t kPrime = 0x100000001b3ull;
  const auto* p = static_cast<const std::uint8_t*>(data);
  std::uint64_t lane[kLanes];
  for (unsigned k = 0; k < kLanes; ++k) lane[k] = 0xcbf29ce484222325ull + k * 0x9e3779b97f4a7c15ull;
  std::size_t i = 0;
  for (; i + 8 * kLanes <= n; i += 8 * kLanes) {
    for (unsigned k = 0; k < kLanes; ++k) {
      std::uint64_t w;
      std::memcpy(&w, p + i + 8 * k, 8);
      lane[k] = (lane[k] ^ w) * kPrime;
    }
  }
  std::uint64_t h = lane[0];
  for (unsigned k = 1; k < kLanes; ++k) h = (h ^ lane[k]) * kPrime;
  for (; i < n; ++i) h = (h ^ p[i]) * kPrime;
  return h;
}

void Digest::add(const void* p, std::size_t n) noexcept {
  // splitmix64's finaliser over (state, length, piece hash): order and boundaries both count.
  std::uint64_t z = state_ ^ (hash_bytes(p, n) + 0x9e3779b97f4a7c15ull + (std::uint64_t{n} << 6));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  state_ = z ^ (z >> 31);
}

std::string Digest::hex() const { return hex(state_); }

std::string Digest::hex(std::uint64_t v) { return fmt::format("{:016x}", v); }

}  // namespace spyre_dma::regress
