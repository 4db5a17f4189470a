// The scoreboard: shadow copies of every host buffer and device allocation a test uses, checked
// byte for byte against the real memories.
//
// When an op completes, its source must still hold what the shadow says (else "source
// overwritten"), its destination must hold what the source held (else "not copied" when it still
// holds its old bytes, "corrupted" otherwise), and the bytes next to the destination must not have
// changed (else "out of range write") - the classification dmatest makes with its canary
// patterns. The shadow then takes the op's effect. This is exact because programs keep the
// hazard rules of program.hpp: a destination is written once per epoch and sources are never
// written while an epoch may still read them, so what an op's source held when it ran is what it
// holds when the op completes. At an epoch's end every byte the epoch touched, with its
// neighbours, is compared again.
//
// A failed op's destination becomes unknown (the device may have written part of it); unknown
// bytes are skipped, propagate through copies, and are adopted from the real memory at the end of
// the epoch, so one injected fault never hides a corruption anywhere else.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "buffer_pool.hpp"
#include "digest.hpp"
#include "findings.hpp"

namespace spyre_dma::regress {

// The real memory behind one shadow region: a host buffer, or device memory through the
// backend's backdoor (never through the DMA path under test).
class MemoryPort {
 public:
  virtual ~MemoryPort() = default;
  virtual void read(std::uint64_t offset, std::uint8_t* dst, std::size_t n) const = 0;
  virtual void write(std::uint64_t offset, const std::uint8_t* src, std::size_t n) = 0;
  // The bytes at `offset` in place, where the memory is plainly addressable here (a host buffer,
  // device memory the backend holds in this process): as many of the n as lie together (`got`),
  // so a check reads them without a copy first. Null (got 0) where only read() reaches them.
  virtual const std::uint8_t* view(std::uint64_t /*offset*/, std::size_t /*n*/, std::size_t& got) const {
    got = 0;
    return nullptr;
  }
  // The n bytes at `offset` in place for writing, where they lie together in plain memory of this
  // process (a host buffer), so set-up makes its pattern there rather than copying it in; null
  // where only write() reaches them.
  virtual std::uint8_t* writable(std::uint64_t /*offset*/, std::size_t /*n*/) { return nullptr; }
};

// What one op reads and writes. src_region < 0: a fill of `pattern`.
struct Access {
  int src_region = -1;
  std::uint64_t src_offset = 0;
  int dst_region = -1;
  std::uint64_t dst_offset = 0;
  std::uint64_t bytes = 0;
  std::uint32_t pattern = 0;
};

class Scoreboard {
 public:
  // `margin`: bytes checked on each side of a destination.
  explicit Scoreboard(Findings& findings, std::uint32_t margin = 256);

  // Adds a region and fills it (real and shadow) with a pattern drawn from `seed`; returns its id.
  int add_region(std::string name, std::unique_ptr<MemoryPort> port, std::uint64_t bytes, std::uint64_t seed);

  // Call before handing the op to the engine, and once when it completes (from any thread).
  void submitted(std::int64_t op, const Access& a);
  void completed(std::int64_t op, const Access& a, bool ok);

  // With nothing in flight: compares the epoch's touched ranges and their margins, then adopts
  // the real content of unknown bytes. verify_all() compares every byte of every region.
  void verify_epoch();
  // `memory` (optional) takes what the memory holds at the end, as far as it can differ from one
  // run of the test to another: region by region its size and each run of real bytes that differ
  // from the shadow (with its offset), then every byte the epochs adopted (digest.hpp).
  void verify_all(Digest* memory = nullptr);

  // Self-test of the checker: flips one byte of a region's real memory behind everyone's back.
  void corrupt(int region, std::uint64_t offset);

  std::uint64_t bytes_checked() const;
  std::uint64_t unknown_bytes_adopted() const;

 private:
  struct Range {
    std::uint64_t lo, hi;
  };
  struct Pending {
    std::uint64_t lo, hi;
    std::int64_t op;
  };
  // A region's expected bytes, in a buffer reused from an earlier test of the process where one
  // is free (add_region writes every byte first).
  class Shadow {
   public:
    explicit Shadow(std::uint64_t bytes) : buffer_(bytes), size_(bytes) {}
    std::uint8_t* data() noexcept { return buffer_.data(); }
    const std::uint8_t* data() const noexcept { return buffer_.data(); }
    std::uint64_t size() const noexcept { return size_; }
    std::uint8_t operator[](std::uint64_t i) const noexcept { return buffer_.data()[i]; }

   private:
    PooledBuffer buffer_;
    std::uint64_t size_;
  };
  struct Region {
    std::string name;
    std::unique_ptr<MemoryPort> port;
    Shadow shadow;
    std::vector<Range> unknown;  // unordered, small: only failed ops add to it
    std::vector<Range> touched;  // this epoch
    std::vector<Pending> pending;
  };

  bool any_unknown(const Region& r, std::uint64_t lo, std::uint64_t hi) const;
  bool unknown_at(const Region& r, std::uint64_t at) const;
  // Compares the real bytes of [lo, hi) with the shadow (unknown bytes skipped; with skip_pending,
  // bytes of ops in flight are not read at all); returns the number of differing bytes and the
  // first one's offset.
  std::uint64_t compare(const Region& r, std::uint64_t lo, std::uint64_t hi, bool skip_pending,
                        std::uint64_t& first) const;
  // compare() over [lo, hi) with no op in flight there: adds to `bad`, sets `first` at the first.
  // `digest` (optional) takes each run of real bytes that differ from the shadow, with its offset.
  void compare_range(const Region& r, std::uint64_t lo, std::uint64_t hi, std::uint64_t& bad,
                     std::uint64_t& first, Digest* digest = nullptr) const;
  void check_margins(std::int64_t op, const Region& r, std::uint64_t lo, std::uint64_t hi);
  // The n bytes op `a` should have written `from` bytes into its destination: in the source's
  // shadow for a copy, made in `buffer` for a fill.
  const std::uint8_t* expected_bytes(const Access& a, std::uint64_t from, std::size_t n,
                                     std::vector<std::uint8_t>& buffer) const;

  Findings& findings_;
  std::uint32_t margin_;
  mutable std::mutex mu_;
  std::vector<Region> regions_;
  std::uint64_t bytes_checked_ = 0;
  std::uint64_t adopted_ = 0;
  Digest adopted_digest_;  // every adoption: region, offset, bytes
};

}  // namespace spyre_dma::regress
