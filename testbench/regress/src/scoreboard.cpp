#include "scoreboard.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "rng.hpp"
#include "vector_clones.hpp"

namespace spyre_dma::regress {
namespace {

constexpr std::size_t kBlock = 1u << 20;  // real memory is read in blocks of this size

// Room for n bytes the caller is about to overwrite. Never shrinks: resizing a vector down and up
// again zeroes the regrown part each time, bytes that are overwritten at once.
std::uint8_t* room(std::vector<std::uint8_t>& v, std::size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

// The real bytes at `at`, up to n of them (`got` says how many): in place where the port offers
// them, as many as lie together there; else all n, read into `scratch`.
const std::uint8_t* real_bytes(const MemoryPort& port, std::uint64_t at, std::size_t n,
                               std::vector<std::uint8_t>& scratch, std::size_t& got) {
  if (const std::uint8_t* p = port.view(at, n, got); p != nullptr && got > 0) return p;
  std::uint8_t* out = room(scratch, n);
  port.read(at, out, n);
  got = n;
  return out;
}

// A region's pattern, its first n bytes into dst: the word at offset w holds mix64(salt + w), and a
// last word cut short by n its first bytes. Made scalar, two 64-bit multiplies a word, this was
// most of a test's set-up.
SPYRE_DMA_VECTOR_CLONES void fill_region(std::uint8_t* dst, std::uint64_t salt, std::uint64_t n) {
  const std::uint64_t whole = n / 8 * 8;
  for (std::uint64_t w = 0; w < whole; w += 8) {
    const std::uint64_t v = mix64(salt + w);
    std::memcpy(dst + w, &v, 8);
  }
  if (whole < n) {
    const std::uint64_t v = mix64(salt + whole);
    std::memcpy(dst + whole, &v, n - whole);
  }
}

void fill_pattern(std::uint8_t* dst, std::uint64_t offset, std::size_t n, std::uint32_t pattern) {
  // A 32-bit little-endian pattern repeated from the fill's start (`offset` bytes into it): byte i
  // is the pattern's byte (offset + i) % 4, which repeats every 8 bytes too, so whole words of 8
  // go at a time (a loop the compiler vectorises), then the tail.
  std::uint8_t word[8];
  for (std::size_t i = 0; i < 8; ++i) word[i] = static_cast<std::uint8_t>(pattern >> (8 * ((offset + i) % 4)));
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) std::memcpy(dst + i, word, 8);
  for (; i < n; ++i) dst[i] = word[i % 8];
}

}  // namespace

Scoreboard::Scoreboard(Findings& findings, std::uint32_t margin) : findings_(findings), margin_(margin) {}

int Scoreboard::add_region(std::string name, std::unique_ptr<MemoryPort> port, std::uint64_t bytes,
                           std::uint64_t seed) {
  Region r{std::move(name), std::move(port), Shadow(bytes), {}, {}, {}};
  // Each 8-byte word names its region and offset: no two places hold the same bytes, so a byte
  // that lands in the wrong place cannot match by accident.
  const std::uint64_t salt = mix64(seed ^ (0xA5A5ull << 32) ^ regions_.size());
  // The pattern goes into the shadow, and into the real memory too where the port offers it in
  // place (making it is quicker than copying it); else the real memory is written from the shadow,
  // in one write: the device memory behind such a port clears what the first write into each of its
  // pages leaves, and a region written in pieces had most of each page cleared for the next piece
  // to overwrite (3.4% of a refdev smoke run).
  std::uint8_t* shadow = r.shadow.data();
  fill_region(shadow, salt, bytes);
  if (std::uint8_t* real = r.port->writable(0, static_cast<std::size_t>(bytes))) {
    fill_region(real, salt, bytes);
  } else {
    r.port->write(0, shadow, static_cast<std::size_t>(bytes));
  }
  std::lock_guard<std::mutex> g(mu_);
  regions_.push_back(std::move(r));
  return static_cast<int>(regions_.size() - 1);
}

void Scoreboard::submitted(std::int64_t op, const Access& a) {
  std::lock_guard<std::mutex> g(mu_);
  Region& d = regions_.at(static_cast<std::size_t>(a.dst_region));
  d.pending.push_back(Pending{a.dst_offset, a.dst_offset + a.bytes, op});
  d.touched.push_back(Range{a.dst_offset, a.dst_offset + a.bytes});
  if (a.src_region >= 0) {
    regions_.at(static_cast<std::size_t>(a.src_region)).touched.push_back(Range{a.src_offset, a.src_offset + a.bytes});
  }
}

bool Scoreboard::any_unknown(const Region& r, std::uint64_t lo, std::uint64_t hi) const {
  for (const Range& u : r.unknown) {
    if (u.lo < hi && lo < u.hi) return true;
  }
  return false;
}

bool Scoreboard::unknown_at(const Region& r, std::uint64_t at) const {
  for (const Range& u : r.unknown) {
    if (at >= u.lo && at < u.hi) return true;
  }
  return false;
}

std::uint64_t Scoreboard::compare(const Region& r, std::uint64_t lo, std::uint64_t hi, bool skip_pending,
                                  std::uint64_t& first) const {
  std::uint64_t bad = 0;
  if (!skip_pending) {
    compare_range(r, lo, hi, bad, first);
    return bad;
  }
  // Bytes an op in flight writes are not even read: the device may be writing them right now.
  std::vector<Range> busy;
  for (const Pending& p : r.pending) {
    if (p.lo < hi && p.hi > lo) busy.push_back(Range{std::max(p.lo, lo), std::min(p.hi, hi)});
  }
  std::sort(busy.begin(), busy.end(), [](const Range& a, const Range& b) { return a.lo < b.lo; });
  std::uint64_t at = lo;
  for (const Range& b : busy) {
    if (b.lo > at) compare_range(r, at, b.lo, bad, first);
    at = std::max(at, b.hi);
  }
  if (at < hi) compare_range(r, at, hi, bad, first);
  return bad;
}

void Scoreboard::compare_range(const Region& r, std::uint64_t lo, std::uint64_t hi, std::uint64_t& bad,
                               std::uint64_t& first, Digest* digest) const {
  thread_local std::vector<std::uint8_t> scratch;
  // With `digest`: each run of real bytes that differ from the shadow, with its offset. The rest
  // of the memory holds the shadow's bytes, which the test's seed, its ops and the bytes adopted
  // (verify_epoch) decide, so the runs say all that can differ from one run of the test to the
  // next; a run is whole however the memory is laid out.
  std::uint64_t run_at = 0;
  std::vector<std::uint8_t> run;
  const auto end_run = [&] {
    if (run.empty()) return;
    digest->add(run_at);
    digest->add(run.data(), run.size());
    run.clear();
  };
  std::size_t n = 0;
  for (std::uint64_t at = lo; at < hi; at += n) {
    const std::uint8_t* real =
        real_bytes(*r.port, at, static_cast<std::size_t>(std::min<std::uint64_t>(kBlock, hi - at)), scratch, n);
    if (std::memcmp(real, r.shadow.data() + at, n) == 0) continue;
    for (std::size_t i = 0; i < n; ++i) {
      if (real[i] == r.shadow[at + i]) continue;
      if (digest) {
        if (!run.empty() && run_at + run.size() != at + i) end_run();
        if (run.empty()) run_at = at + i;
        run.push_back(real[i]);
      }
      if (unknown_at(r, at + i)) continue;
      if (bad++ == 0) first = at + i;
    }
  }
  if (digest) end_run();
}

const std::uint8_t* Scoreboard::expected_bytes(const Access& a, std::uint64_t from, std::size_t n,
                                               std::vector<std::uint8_t>& buffer) const {
  if (a.src_region >= 0) return regions_[static_cast<std::size_t>(a.src_region)].shadow.data() + a.src_offset + from;
  std::uint8_t* out = room(buffer, n);
  fill_pattern(out, from, n, a.pattern);
  return out;
}

void Scoreboard::check_margins(std::int64_t op, const Region& r, std::uint64_t lo, std::uint64_t hi) {
  const std::uint64_t below = lo - std::min<std::uint64_t>(lo, margin_);
  const std::uint64_t above = std::min<std::uint64_t>(r.shadow.size(), hi + margin_);
  std::uint64_t first = 0;
  const std::uint64_t bad = compare(r, below, lo, true, first) + compare(r, hi, above, true, first);
  bytes_checked_ += (lo - below) + (above - hi);
  if (bad > 0) {
    findings_.add(FindingKind::kOutOfRangeWrite, op,
                  fmt::format("{}: {} byte(s) next to the destination [{}, {}) changed, first at offset {}", r.name, bad,
                              lo, hi, first));
  }
}

void Scoreboard::completed(std::int64_t op, const Access& a, bool ok) {
  std::lock_guard<std::mutex> g(mu_);
  Region& d = regions_.at(static_cast<std::size_t>(a.dst_region));
  const std::uint64_t lo = a.dst_offset, hi = a.dst_offset + a.bytes;
  auto it = std::find_if(d.pending.begin(), d.pending.end(), [&](const Pending& p) { return p.op == op; });
  if (it != d.pending.end()) d.pending.erase(it);
  if (!ok) {
    d.unknown.push_back(Range{lo, hi});
    return;
  }
  bool src_unknown = false;
  if (a.src_region >= 0) {
    const Region& s = regions_.at(static_cast<std::size_t>(a.src_region));
    std::uint64_t first = 0;
    const std::uint64_t bad = compare(s, a.src_offset, a.src_offset + a.bytes, false, first);
    bytes_checked_ += a.bytes;
    if (bad > 0) {
      findings_.add(FindingKind::kSourceOverwritten, op,
                    fmt::format("{}: {} byte(s) of the source [{}, {}) changed, first at offset {}", s.name, bad,
                                a.src_offset, a.src_offset + a.bytes, first));
    }
    src_unknown = any_unknown(s, a.src_offset, a.src_offset + a.bytes);
  }
  if (src_unknown) {  // what was copied is not known: neither is the destination now
    d.unknown.push_back(Range{lo, hi});
  } else {
    // Destination against the expected bytes, block by block; the shadow takes them after.
    thread_local std::vector<std::uint8_t> scratch, pattern;
    std::uint64_t not_copied = 0, wrong = 0, first = 0;
    std::size_t n = 0;
    for (std::uint64_t at = lo; at < hi; at += n) {
      const std::uint8_t* real =
          real_bytes(*d.port, at, static_cast<std::size_t>(std::min<std::uint64_t>(kBlock, hi - at)), scratch, n);
      const std::uint8_t* want = expected_bytes(a, at - lo, n, pattern);
      if (std::memcmp(real, want, n) != 0) {
        for (std::size_t i = 0; i < n; ++i) {
          if (real[i] == want[i]) continue;
          if (not_copied + wrong == 0) first = at + i;
          (real[i] == d.shadow[at + i] ? not_copied : wrong)++;
        }
      }
      std::memmove(d.shadow.data() + at, want, n);  // a device copy within one region may overlap
    }
    bytes_checked_ += a.bytes;
    if (not_copied + wrong > 0) {
      findings_.add(wrong == 0 ? FindingKind::kNotCopied : FindingKind::kCorrupted, op,
                    fmt::format("{}: {} of {} destination byte(s) in [{}, {}) wrong ({} still hold their old value), "
                                "first at offset {}",
                                d.name, not_copied + wrong, a.bytes, lo, hi, not_copied, first));
    }
  }
  check_margins(op, d, lo, hi);
}

void Scoreboard::verify_epoch() {
  std::lock_guard<std::mutex> g(mu_);
  for (Region& r : regions_) {
    // The touched ranges with their margins, sorted and merged: ops of an epoch often touch the
    // same bytes (a copy's source and a later copy's destination, buffers reused), and each byte
    // needs comparing once.
    std::vector<Range>& touched = r.touched;
    for (Range& t : touched) {
      t.lo -= std::min<std::uint64_t>(t.lo, margin_);
      t.hi = std::min<std::uint64_t>(r.shadow.size(), t.hi + margin_);
    }
    std::sort(touched.begin(), touched.end(), [](const Range& a, const Range& b) { return a.lo < b.lo; });
    std::size_t merged = 0;
    for (const Range& t : touched) {
      if (merged > 0 && t.lo <= touched[merged - 1].hi) {
        touched[merged - 1].hi = std::max(touched[merged - 1].hi, t.hi);
      } else {
        touched[merged++] = t;
      }
    }
    touched.resize(merged);
    for (const Range& t : touched) {
      const std::uint64_t lo = t.lo, hi = t.hi;
      std::uint64_t first = 0;
      const std::uint64_t bad = compare(r, lo, hi, false, first);
      bytes_checked_ += hi - lo;
      if (bad > 0) {
        findings_.add(FindingKind::kEpochMismatch, -1,
                      fmt::format("{}: {} byte(s) in [{}, {}) differ from the shadow at the end of the epoch, first "
                                  "at offset {}",
                                  r.name, bad, lo, hi, first));
      }
    }
    r.touched.clear();
    for (const Range& u : r.unknown) {
      r.port->read(u.lo, r.shadow.data() + u.lo, static_cast<std::size_t>(u.hi - u.lo));
      adopted_ += u.hi - u.lo;
      adopted_digest_.add(static_cast<std::uint64_t>(&r - regions_.data()));
      adopted_digest_.add(u.lo);
      adopted_digest_.add(r.shadow.data() + u.lo, static_cast<std::size_t>(u.hi - u.lo));
    }
    r.unknown.clear();
  }
}

void Scoreboard::verify_all(Digest* memory) {
  std::lock_guard<std::mutex> g(mu_);
  for (const Region& r : regions_) {
    std::uint64_t first = 0, bad = 0;
    if (memory) memory->add(r.shadow.size());
    compare_range(r, 0, r.shadow.size(), bad, first, memory);
    bytes_checked_ += r.shadow.size();
    if (bad > 0) {
      findings_.add(FindingKind::kEpochMismatch, -1,
                    fmt::format("{}: {} byte(s) differ from the shadow at the end of the test, first at offset {}",
                                r.name, bad, first));
    }
  }
  if (memory) memory->add(adopted_digest_.value());
}

void Scoreboard::corrupt(int region, std::uint64_t offset) {
  std::lock_guard<std::mutex> g(mu_);
  Region& r = regions_.at(static_cast<std::size_t>(region));
  std::uint8_t b = 0;
  r.port->read(offset, &b, 1);
  b = static_cast<std::uint8_t>(b ^ 0x5A);
  r.port->write(offset, &b, 1);
}

std::uint64_t Scoreboard::bytes_checked() const {
  std::lock_guard<std::mutex> g(mu_);
  return bytes_checked_;
}

std::uint64_t Scoreboard::unknown_bytes_adopted() const {
  std::lock_guard<std::mutex> g(mu_);
  return adopted_;
}

}  // namespace spyre_dma::regress
