// The determinism digest: a 64-bit fingerprint of what a test did, in the order it happened, so
// two runs of the same suite, seed and options (on two machines, with -j1 or -j2) can be compared
// by one number. A test's digest covers every RB the engine consumed (each pipeline's in ring
// order: tags, status, error fields and the device's timestamps), what every host buffer and device
// allocation holds at the end (as far as it can differ from run to run: the bytes that differ
// from the scoreboard's shadow, and those the scoreboard adopted from failed ops; the rest is the
// shadow's, which the test decides), and the simulated time the test ended at. On a simulated
// backend (sim, rtl) every part is a pure function of the test; elsewhere the RB timestamps are
// wall time, so only the memory part repeats.
//
// Not a cryptographic hash: FNV-1a over 8-byte words in eight interleaved lanes (the lanes'
// multiplies do not wait for each other), folded; each piece is then mixed into the running value
// with its length, so moving a byte from one piece to the next changes the digest.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace spyre_dma::regress {

// FNV-1a of [p, p + n) in eight lanes, folded.
std::uint64_t hash_bytes(const void* p, std::size_t n) noexcept;

class Digest {
 public:
  void add(const void* p, std::size_t n) noexcept;
  void add(std::uint64_t v) noexcept { add(&v, sizeof v); }
  std::uint64_t value() const noexcept { return state_; }
  // 16 lowercase hex digits.
  std::string hex() const;
  static std::string hex(std::uint64_t v);

 private:
  std::uint64_t state_ = 0x6a09e667f3bcc908ull;
};

}  // namespace spyre_dma::regress
