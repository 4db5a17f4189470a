// What replay expects device memory to hold: per allocation, a map of byte ranges to the
// deterministic source that last wrote them (an H2D's synthesised data, a fill pattern), so that
// large traces are checked without keeping a copy of their data.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace spyre_dma::traces::detail {

// The synthesised content of an H2D: byte i of op `seed`'s data.
inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

struct Source {
  enum Kind : std::uint8_t { kUnknown, kData, kFill } kind = kUnknown;
  std::uint64_t seed = 0;     // kData: the H2D's op id; kFill: the pattern
  std::uint64_t origin = 0;   // the allocation offset where byte 0 of the source lies
};

// Writes `n` bytes of the source, starting at allocation offset `at`, to `out`.
inline void generate(const Source& s, std::uint64_t at, std::uint8_t* out, std::uint64_t n) {
  std::uint64_t i = at - s.origin;
  std::uint64_t k = 0;
  if (s.kind == Source::kFill) {
    const auto p = static_cast<std::uint32_t>(s.seed);
    std::uint8_t b[4] = {std::uint8_t(p), std::uint8_t(p >> 8), std::uint8_t(p >> 16), std::uint8_t(p >> 24)};
    for (; k < n; ++k, ++i) out[k] = b[i & 3];
    return;
  }
  while (k < n) {
    const std::uint64_t w = mix64(s.seed * 0x100000001b3ull + (i >> 3));
    std::uint8_t b[8];
    std::memcpy(b, &w, 8);
    for (std::uint64_t j = i & 7; j < 8 && k < n; ++j, ++k, ++i) out[k] = b[j];
  }
}

struct Segment {
  std::uint64_t end;
  Source src;
};

class Shadow {
 public:
  using Map = std::map<std::uint64_t, Segment>;  // start -> segment

  // Sets [at, at + n) of the allocation's map to `src`.
  void write(Map& m, std::uint64_t at, std::uint64_t n, const Source& src) {
    const std::uint64_t end = at + n;
    split(m, at);
    split(m, end);
    m.erase(m.lower_bound(at), m.lower_bound(end));
    m.emplace(at, Segment{end, src});
  }

  // The pieces covering [at, at + n), gaps as kUnknown.
  struct Piece {
    std::uint64_t start, end;
    Source src;
  };
  std::vector<Piece> read(const Map& m, std::uint64_t at, std::uint64_t n) const {
    std::vector<Piece> out;
    const std::uint64_t end = at + n;
    auto it = m.upper_bound(at);
    if (it != m.begin()) --it;
    std::uint64_t pos = at;
    for (; it != m.end() && it->first < end; ++it) {
      if (it->second.end <= pos) continue;
      if (it->first > pos) out.push_back({pos, it->first, Source{}});
      const std::uint64_t s = std::max(pos, it->first), e = std::min(end, it->second.end);
      out.push_back({s, e, it->second.src});
      pos = e;
    }
    if (pos < end) out.push_back({pos, end, Source{}});
    return out;
  }

 private:
  static void split(Map& m, std::uint64_t at) {
    auto it = m.upper_bound(at);
    if (it == m.begin()) return;
    --it;
    if (it->first < at && it->second.end > at) {
      Segment tail = it->second;
      it->second.end = at;
      m.emplace(at, tail);
    }
  }
};

}  // namespace spyre_dma::traces::detail
