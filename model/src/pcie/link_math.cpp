// PCIe link arithmetic; see link_math.hpp and docs/model-pcie.md. Reproduces the pcie-bench PCIe
// model (Neugebauer et al., SIGCOMM 2018; pcie-bench/pcie-model, model/pcie.py, model/mem_bw.py).
#include "pcie/link_math.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <stdexcept>
#include <string>

namespace spyre_dma::model::pcie {
namespace {

__extension__ typedef unsigned __int128 U128;  // exact products of 64-bit values

constexpr std::uint64_t kU64Max = std::numeric_limits<std::uint64_t>::max();

[[noreturn]] void bad(const std::string& what) { throw std::invalid_argument("pcie: " + what); }

bool is_pow2(std::uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

U128 gcd128(U128 a, U128 b) {
  while (b != 0) {
    const U128 r = a % b;
    a = b;
    b = r;
  }
  return a;
}

PsPerByte make_ratio(U128 num, U128 den) {
  if (den == 0) bad("zero rate");
  const U128 g = gcd128(num, den);
  num /= g;
  den /= g;
  if (num > kU64Max || den > kU64Max) throw std::overflow_error("pcie: rate ratio overflows");
  return PsPerByte{static_cast<std::uint64_t>(num), static_cast<std::uint64_t>(den)};
}

void check_range(std::uint64_t addr, std::uint64_t len) {
  if (len > kU64Max - addr) throw std::overflow_error("pcie: addr + len overflows 64 bits");
}

void check_request_limit(std::uint32_t limit) {
  if (!is_pow2(limit) || limit > kPageBytes) {
    bad("request size limit " + std::to_string(limit) + " is not a power of two <= 4096");
  }
}

void check_completion_limits(std::uint32_t rcb, std::uint32_t mps) {
  if (!is_pow2(rcb) || !is_pow2(mps) || mps > kPageBytes || rcb > mps) {
    bad("completion limits rcb " + std::to_string(rcb) + ", mps " + std::to_string(mps) +
        " are not powers of two with rcb <= mps <= 4096");
  }
}

// Index of the width in {1, 2, 4, 8, 16, 32}, of the MPS in {128 .. 4096}.
std::size_t lane_index(std::uint32_t lanes) {
  switch (lanes) {
    case 1: return 0;
    case 2: return 1;
    case 4: return 2;
    case 8: return 3;
    case 16: return 4;
    case 32: return 5;
    default: bad("lanes " + std::to_string(lanes) + " is not 1, 2, 4, 8, 16 or 32");
  }
}

std::size_t mps_index(std::uint32_t mps) {
  switch (mps) {
    case 128: return 0;
    case 256: return 1;
    case 512: return 2;
    case 1024: return 3;
    case 2048: return 4;
    case 4096: return 5;
    default: bad("mps " + std::to_string(mps) + " is not a power of two in 128..4096");
  }
}

void check_generation(std::uint32_t generation) {
  if (generation == 0 || generation > 5) {
    bad("generation " + std::to_string(generation) +
        " is not 1..5 (Gen6+ FLIT mode is not modelled)");
  }
}

// Symbol-time intervals by [width][MPS], as the pcie-bench model tabulates them from the PCIe
// Base Spec (5.0: Ack latency limits Tables 3-7..3-9, UpdateFC intervals Tables 2-46..2-48).
// Gen3, Gen4 and Gen5 share one table. The Ack and UpdateFC tables are the same but for two
// Gen1/Gen2 x32 entries, which pcie-bench lists differently (kept as it has them).
using Table = std::array<std::array<std::uint16_t, 6>, 6>;

constexpr Table kGen1Ack = {{{237, 416, 559, 1071, 2095, 4143},
                             {128, 217, 289, 545, 1057, 2081},
                             {73, 118, 154, 282, 538, 1050},
                             {67, 107, 86, 150, 278, 534},
                             {48, 72, 86, 150, 278, 534},
                             {33, 45, 52, 84, 148, 276}}};
constexpr Table kGen2Ack = {{{288, 467, 610, 1122, 2146, 4194},
                             {179, 268, 340, 596, 1108, 2132},
                             {124, 169, 205, 333, 589, 1101},
                             {118, 158, 137, 201, 329, 585},
                             {99, 123, 137, 201, 329, 585},
                             {84, 96, 103, 135, 199, 237}}};
constexpr Table kGen3Ack = {{{333, 512, 655, 1167, 2191, 4239},
                             {224, 313, 385, 641, 1153, 2177},
                             {169, 214, 250, 378, 634, 1146},
                             {163, 203, 182, 246, 374, 630},
                             {144, 168, 182, 246, 374, 630},
                             {129, 141, 148, 180, 244, 372}}};

std::uint32_t lookup(std::uint32_t generation, std::uint32_t lanes, std::uint32_t mps, bool fc) {
  check_generation(generation);
  const std::size_t li = lane_index(lanes);
  const std::size_t mi = mps_index(mps);
  if (generation >= 3) return kGen3Ack[li][mi];
  if (fc && li == 5) {
    // The two x32 entries where pcie-bench's UpdateFC table differs from its Ack table.
    if (generation == 1 && mi == 4) return 248;
    if (generation == 2 && mi == 5) return 327;
  }
  return generation == 1 ? kGen1Ack[li][mi] : kGen2Ack[li][mi];
}

}  // namespace

std::uint64_t PsPerByte::ceil_ps(std::uint64_t bytes) const {
  // Once per TLP and more: the 64-bit division where the product fits (every TLP's does), the
  // 128-bit one (a call into the runtime library) only for long runs.
  std::uint64_t small;
  if (!__builtin_mul_overflow(bytes, num, &small)) return small / den + (small % den != 0 ? 1 : 0);
  const U128 product = static_cast<U128>(bytes) * num;
  const U128 t = product / den + (product % den != 0 ? 1 : 0);
  if (t > kU64Max) throw std::overflow_error("pcie: wire time overflows 64 bits of ps");
  return static_cast<std::uint64_t>(t);
}

void validate(const LinkParams& p) {
  check_generation(p.generation);
  lane_index(p.lanes);
  mps_index(p.mps);
  if (!is_pow2(p.mrrs) || p.mrrs < 128 || p.mrrs > 4096) {
    bad("mrrs " + std::to_string(p.mrrs) + " is not a power of two in 128..4096");
  }
  if (!is_pow2(p.rcb) || p.rcb < 64 || p.rcb > 512) {
    bad("rcb " + std::to_string(p.rcb) + " is not 64, 128, 256 or 512");
  }
  if (p.rcb > p.mps) bad("rcb " + std::to_string(p.rcb) + " exceeds mps " + std::to_string(p.mps));
}

LinkParams link_params(const LinkConfig& c) {
  LinkParams p;
  p.generation = c.generation;
  p.lanes = c.lanes;
  p.mps = c.mps;
  p.mrrs = c.mrrs;
  p.rcb = c.rcb;
  p.ecrc = c.ecrc;
  p.addr64 = c.addr64;
  p.dllp_overhead = c.dllp_overhead;
  p.rcb_chunks = false;
  validate(p);
  return p;
}

// ---------------------------------------------------------------------------------------------
// Rates
// ---------------------------------------------------------------------------------------------

std::uint32_t transfer_rate_mts(std::uint32_t generation) {
  check_generation(generation);
  static constexpr std::array<std::uint32_t, 5> kMts = {2500, 5000, 8000, 16000, 32000};
  return kMts[generation - 1];
}

Encoding encoding(std::uint32_t generation) {
  check_generation(generation);
  return generation <= 2 ? Encoding{8, 10} : Encoding{128, 130};
}

PsPerByte raw_ps_per_byte(const LinkParams& p) {
  // bytes/us = MT/s x lanes x payload_bits / (line_bits x 8), so
  // ps/byte = 8e6 x line_bits / (MT/s x lanes x payload_bits).
  validate(p);
  const Encoding e = encoding(p.generation);
  return make_ratio(static_cast<U128>(8000000) * e.line_bits,
                    static_cast<U128>(transfer_rate_mts(p.generation)) * p.lanes * e.payload_bits);
}

double raw_bytes_per_ns(const LinkParams& p) { return 1000.0 / raw_ps_per_byte(p).value(); }

std::uint32_t ack_limit_symbols(std::uint32_t generation, std::uint32_t lanes, std::uint32_t mps) {
  return lookup(generation, lanes, mps, false);
}

std::uint32_t fc_update_symbols(std::uint32_t generation, std::uint32_t lanes, std::uint32_t mps) {
  return lookup(generation, lanes, mps, true);
}

double link_overhead_fraction(const LinkParams& p) {
  validate(p);
  if (!p.dllp_overhead) return 0.0;
  const double ack = ack_limit_symbols(p.generation, p.lanes, p.mps);
  const double fc = fc_update_symbols(p.generation, p.lanes, p.mps);
  return kDllpBytes / ack + kDllpBytes / fc +
         static_cast<double>(kSkpSymbols) / kSkpIntervalSymbols;
}

PsPerByte tlp_ps_per_byte(const LinkParams& p) {
  const PsPerByte raw = raw_ps_per_byte(p);
  if (!p.dllp_overhead) return raw;
  // 1 - (8/A + 8/F + 4/S) = (A F S - 8 F S - 8 A S - 4 A F) / (A F S); the TLP time per byte is
  // the raw one divided by that.
  const U128 a = ack_limit_symbols(p.generation, p.lanes, p.mps);
  const U128 f = fc_update_symbols(p.generation, p.lanes, p.mps);
  const U128 s = kSkpIntervalSymbols;
  const U128 whole = a * f * s;
  const U128 lost = kDllpBytes * f * s + kDllpBytes * a * s + kSkpSymbols * a * f;
  return make_ratio(static_cast<U128>(raw.num) * whole,
                    static_cast<U128>(raw.den) * (whole - lost));
}

double tlp_bytes_per_ns(const LinkParams& p) { return 1000.0 / tlp_ps_per_byte(p).value(); }

// ---------------------------------------------------------------------------------------------
// TLP sizes
// ---------------------------------------------------------------------------------------------

std::uint32_t tlp_header_bytes(const LinkParams& p, TlpType type) {
  switch (type) {
    case TlpType::kMWr:
    case TlpType::kMRd: return p.addr64 ? 16 : 12;
    case TlpType::kCplD:
    case TlpType::kCpl: return 12;
  }
  bad("unknown TLP type");
}

std::uint32_t tlp_overhead_bytes(const LinkParams& p, TlpType type) {
  return kTlpFramingBytes + tlp_header_bytes(p, type) + (p.ecrc ? kEcrcBytes : 0);
}

std::uint64_t tlp_wire_bytes(const LinkParams& p, TlpType type, std::uint64_t payload_bytes) {
  if ((type == TlpType::kMRd || type == TlpType::kCpl) && payload_bytes != 0) {
    bad("MRd and Cpl TLPs carry no payload");
  }
  if (payload_bytes > p.mps && (type == TlpType::kMWr || type == TlpType::kCplD)) {
    bad("payload " + std::to_string(payload_bytes) + " exceeds mps " + std::to_string(p.mps));
  }
  return tlp_overhead_bytes(p, type) + payload_bytes;
}

std::uint64_t dword_span_bytes(std::uint64_t addr, std::uint64_t len) {
  check_range(addr, len);
  if (len == 0) return 0;
  const std::uint64_t first = addr / 4;
  const std::uint64_t last = (addr + len - 1) / 4;
  return (last - first + 1) * 4;
}

std::uint64_t data_credits(std::uint64_t payload_bytes) {
  return ceil_div(payload_bytes, kCreditDataBytes);
}

// ---------------------------------------------------------------------------------------------
// Splitting
// ---------------------------------------------------------------------------------------------

std::uint64_t request_step(std::uint64_t addr, std::uint64_t len, std::uint32_t limit) {
  check_request_limit(limit);
  check_range(addr, len);
  return std::min<std::uint64_t>(len, limit - (addr & (limit - 1)));
}

std::uint64_t count_requests(std::uint64_t addr, std::uint64_t len, std::uint32_t limit) {
  check_request_limit(limit);
  check_range(addr, len);
  if (len == 0) return 0;
  return (addr + len - 1) / limit - addr / limit + 1;
}

namespace {
std::vector<Segment> split_requests(std::uint64_t addr, std::uint64_t len, std::uint32_t limit) {
  std::vector<Segment> out;
  out.reserve(count_requests(addr, len, limit));
  while (len != 0) {
    const std::uint64_t n = request_step(addr, len, limit);
    out.push_back(Segment{addr, n});
    addr += n;
    len -= n;
  }
  return out;
}
}  // namespace

std::vector<Segment> write_segments(std::uint64_t addr, std::uint64_t len, std::uint32_t mps) {
  return split_requests(addr, len, mps);
}

std::vector<Segment> read_requests(std::uint64_t addr, std::uint64_t len, std::uint32_t mrrs) {
  return split_requests(addr, len, mrrs);
}

std::uint64_t completion_step(std::uint64_t addr, std::uint64_t len, std::uint32_t rcb,
                              std::uint32_t mps) {
  check_completion_limits(rcb, mps);
  check_range(addr, len);
  const std::uint64_t offset = addr & (rcb - 1);
  return std::min<std::uint64_t>(len, offset != 0 ? rcb - offset : mps);
}

namespace {
void check_one_request(std::uint64_t addr, std::uint64_t len) {
  check_range(addr, len);
  if ((addr & (kPageBytes - 1)) + len > kPageBytes) {
    bad("read request [" + std::to_string(addr) + ", +" + std::to_string(len) +
        ") crosses a 4 KiB boundary");
  }
}
}  // namespace

std::uint64_t count_completions(std::uint64_t addr, std::uint64_t len, std::uint32_t rcb,
                                std::uint32_t mps) {
  check_completion_limits(rcb, mps);
  check_one_request(addr, len);
  if (len == 0) return 0;
  std::uint64_t n = 0;
  if ((addr & (rcb - 1)) != 0) {
    const std::uint64_t head = completion_step(addr, len, rcb, mps);
    n = 1;
    len -= head;
  }
  return n + ceil_div(len, mps);
}

std::vector<Segment> completions(std::uint64_t addr, std::uint64_t len, std::uint32_t rcb,
                                 std::uint32_t mps) {
  std::vector<Segment> out;
  out.reserve(count_completions(addr, len, rcb, mps));
  while (len != 0) {
    const std::uint64_t n = completion_step(addr, len, rcb, mps);
    out.push_back(Segment{addr, n});
    addr += n;
    len -= n;
  }
  return out;
}

std::uint64_t count_read_completions(std::uint64_t addr, std::uint64_t len, std::uint32_t mrrs,
                                     std::uint32_t rcb, std::uint32_t mps) {
  check_completion_limits(rcb, mps);
  if (len == 0) {
    check_range(addr, len);
    return 0;
  }
  const std::uint64_t first = request_step(addr, len, mrrs);
  std::uint64_t n = count_completions(addr, first, rcb, mps);
  const std::uint64_t rest = len - first;
  if (rest == 0) return n;
  // Every later request starts MRRS-aligned. With MRRS >= RCB that is RCB-aligned, so a full one
  // takes ceil(MRRS / MPS); with MRRS < RCB <= MPS it takes one completion, which is that too.
  const std::uint64_t full = rest / mrrs;
  const std::uint64_t tail = rest % mrrs;
  n += full * ceil_div(mrrs, mps);
  if (tail != 0) n += count_completions(addr + first + full * mrrs, tail, rcb, mps);
  return n;
}

std::vector<Segment> read_completions(std::uint64_t addr, std::uint64_t len, std::uint32_t mrrs,
                                      std::uint32_t rcb, std::uint32_t mps) {
  std::vector<Segment> out;
  out.reserve(count_read_completions(addr, len, mrrs, rcb, mps));
  for (const Segment& request : read_requests(addr, len, mrrs)) {
    for (const Segment& c : completions(request.addr, request.len, rcb, mps)) out.push_back(c);
  }
  return out;
}

std::uint32_t completion_limit(const LinkParams& p) { return p.rcb_chunks ? p.rcb : p.mps; }

// ---------------------------------------------------------------------------------------------
// Wire bytes and streams
// ---------------------------------------------------------------------------------------------

WireBytes& WireBytes::operator+=(const WireBytes& o) {
  upstream += o.upstream;
  downstream += o.downstream;
  upstream_tlps += o.upstream_tlps;
  downstream_tlps += o.downstream_tlps;
  return *this;
}

WireBytes write_wire(const LinkParams& p, std::uint64_t addr, std::uint64_t len) {
  validate(p);
  WireBytes w;
  w.upstream_tlps = count_requests(addr, len, p.mps);
  w.upstream = w.upstream_tlps * tlp_overhead_bytes(p, TlpType::kMWr) + len;
  return w;
}

WireBytes read_wire(const LinkParams& p, std::uint64_t addr, std::uint64_t len) {
  validate(p);
  WireBytes w;
  w.upstream_tlps = count_requests(addr, len, p.mrrs);
  w.upstream = w.upstream_tlps * tlp_overhead_bytes(p, TlpType::kMRd);
  w.downstream_tlps = count_read_completions(addr, len, p.mrrs, p.rcb, completion_limit(p));
  w.downstream = w.downstream_tlps * tlp_overhead_bytes(p, TlpType::kCplD) + len;
  return w;
}

StreamRate stream_rate(const LinkParams& p, const WireBytes& per_transfer, std::uint64_t payload) {
  if (per_transfer.upstream == 0 && per_transfer.downstream == 0) bad("transfer costs no bytes");
  const double bw = tlp_bytes_per_ns(p);
  double per_ns = std::numeric_limits<double>::infinity();
  if (per_transfer.upstream != 0) {
    per_ns = std::min(per_ns, bw / static_cast<double>(per_transfer.upstream));
  }
  if (per_transfer.downstream != 0) {
    per_ns = std::min(per_ns, bw / static_cast<double>(per_transfer.downstream));
  }
  StreamRate r;
  r.transactions_per_s = per_ns * 1e9;
  r.payload_bytes_per_ns = per_ns * static_cast<double>(payload);
  r.upstream_utilization = per_ns * static_cast<double>(per_transfer.upstream) / bw;
  r.downstream_utilization = per_ns * static_cast<double>(per_transfer.downstream) / bw;
  return r;
}

StreamRate write_stream(const LinkParams& p, std::uint64_t size, std::uint64_t addr) {
  return stream_rate(p, write_wire(p, addr, size), size);
}

StreamRate read_stream(const LinkParams& p, std::uint64_t size, std::uint64_t addr) {
  return stream_rate(p, read_wire(p, addr, size), size);
}

StreamRate read_write_stream(const LinkParams& p, std::uint64_t size, std::uint64_t addr) {
  WireBytes w = write_wire(p, addr, size);
  w += read_wire(p, addr, size);
  return stream_rate(p, w, size);
}

double tag_limited_bytes_per_ns(std::uint32_t tags, std::uint64_t request_bytes,
                                std::uint64_t round_trip_ps) {
  if (round_trip_ps == 0) bad("round trip of 0 ps");
  return static_cast<double>(tags) * static_cast<double>(request_bytes) * 1000.0 /
         static_cast<double>(round_trip_ps);
}

}  // namespace spyre_dma::model::pcie
