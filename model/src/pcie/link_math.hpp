// PCIe link arithmetic for the model: raw rates, TLP sizes, data-link overhead, how transfers are
// cut into TLPs, and the analytic bandwidth of a stream of transfers.
//
// The bandwidth arithmetic reproduces the pcie-bench PCIe model (Neugebauer et al., "Understanding
// PCIe performance for end host networking", SIGCOMM 2018; repository pcie-bench/pcie-model,
// model/pcie.py for rates and overheads, model/mem_bw.py for write/read/read-write streams) to the
// last digit it prints; see docs/model-pcie.md. Where this file is more precise than that model
// (unaligned addresses, MRRS < MPS) it says so next to the function.
//
// Directions are named from the device, which is the bus master both ways:
//   upstream   = device -> host (the device's transmit side: MWr, MRd),
//   downstream = host -> device (completions: CplD, Cpl).
// Rates are in bytes per nanosecond, which is decimal GB/s.
//
// All functions are pure; invalid arguments throw std::invalid_argument, arithmetic that would
// overflow throws std::overflow_error.
#pragma once

#include <cstdint>
#include <vector>

#include "spyre_dma/model/address_range.hpp"
#include "spyre_dma/model/sim_config.hpp"

namespace spyre_dma::model::pcie {

// No TLP may cross a 4 KiB address boundary (PCIe Base Spec 2.2.7, MWr and MRd requests).
inline constexpr std::uint64_t kPageBytes = 4096;

// The link parameters the arithmetic needs (the timing-free part of LinkConfig).
struct LinkParams {
  std::uint32_t generation = 5;  // 1..5
  std::uint32_t lanes = 16;      // 1, 2, 4, 8, 16, 32
  std::uint32_t mps = 512;       // 128..4096, power of two
  std::uint32_t mrrs = 4096;     // 128..4096, power of two
  std::uint32_t rcb = 64;        // 64..512, power of two, <= mps
  bool ecrc = false;             // 4 B TLP digest on every TLP
  bool addr64 = true;            // 16 B headers for MWr/MRd (12 B with 32-bit addresses)
  bool dllp_overhead = true;     // charge ACK/UpdateFC DLLPs and SKP ordered sets
  // pcie-bench's `rcb_chunks`: the completer returns RCB-sized completions (seen on older
  // chipsets) instead of MPS-sized ones. Not in LinkConfig; false there.
  bool rcb_chunks = false;
};

// LinkParams of a LinkConfig (validated).
LinkParams link_params(const LinkConfig& config);

// Throws std::invalid_argument naming the first bad field.
void validate(const LinkParams& p);

// ---------------------------------------------------------------------------------------------
// Rates
// ---------------------------------------------------------------------------------------------

// An exact time per byte: num / den picoseconds. Always reduced; den > 0.
struct PsPerByte {
  std::uint64_t num = 0;
  std::uint64_t den = 1;
  double value() const { return static_cast<double>(num) / static_cast<double>(den); }
  // ceil(bytes * num / den): the whole picoseconds `bytes` occupy the link.
  std::uint64_t ceil_ps(std::uint64_t bytes) const;
  friend bool operator==(const PsPerByte& a, const PsPerByte& b) {
    return a.num == b.num && a.den == b.den;
  }
};

// Per lane: 2500, 5000, 8000, 16000, 32000 MT/s for Gen1..5.
std::uint32_t transfer_rate_mts(std::uint32_t generation);

// Line code: 8b/10b for Gen1-2, 128b/130b for Gen3-5, as {payload bits, line bits}.
struct Encoding {
  std::uint32_t payload_bits;
  std::uint32_t line_bits;
};
Encoding encoding(std::uint32_t generation);

// Raw rate of one direction: GT/s x encoding x lanes / 8.
PsPerByte raw_ps_per_byte(const LinkParams& p);
double raw_bytes_per_ns(const LinkParams& p);

// The spec's recommended intervals, in symbol times, that the pcie-bench model charges one 8-byte
// DLLP per: the Ack latency limit (Base Spec 5.0 Tables 3-7..3-9) and the UpdateFC transmission
// interval (Tables 2-46..2-48), by generation, width and MPS. Values exactly as pcie-bench lists
// them (including its Gen1/Gen2 x32 entries, where its two tables differ).
std::uint32_t ack_limit_symbols(std::uint32_t generation, std::uint32_t lanes, std::uint32_t mps);
std::uint32_t fc_update_symbols(std::uint32_t generation, std::uint32_t lanes, std::uint32_t mps);

inline constexpr std::uint32_t kDllpBytes = 8;  // 2 framing + 4 DLLP + 2 CRC
inline constexpr std::uint32_t kSkpIntervalSymbols = 1538;
inline constexpr std::uint32_t kSkpSymbols = 4;

// Fraction of the raw rate pcie-bench charges a direction for DLLPs and SKPs: 8/ack + 8/fc +
// 4/1538 (0 without dllp_overhead), whatever traffic the direction carries. The model keeps it as
// the one-way efficiency that measurements confirm, and sends the DLLPs themselves on the reverse
// wire at their physical size (docs/model-pcie.md, "Rates" and "Traffic in both directions").
double link_overhead_fraction(const LinkParams& p);

// The rate left for TLPs: raw x (1 - overhead). Exact as a ratio.
PsPerByte tlp_ps_per_byte(const LinkParams& p);
double tlp_bytes_per_ns(const LinkParams& p);

// ---------------------------------------------------------------------------------------------
// TLP sizes on the wire
// ---------------------------------------------------------------------------------------------

enum class TlpType : std::uint8_t { kMWr, kMRd, kCplD, kCpl };

// Physical framing + data-link sequence number + LCRC, per TLP (pcie-bench: 2 + 2 + 4).
inline constexpr std::uint32_t kTlpFramingBytes = 8;
inline constexpr std::uint32_t kEcrcBytes = 4;
inline constexpr std::uint32_t kCreditDataBytes = 16;  // one data credit = 4 DW

// Header: 12 B (3 DW) for 32-bit MWr/MRd and for completions, 16 B (4 DW) for 64-bit MWr/MRd.
std::uint32_t tlp_header_bytes(const LinkParams& p, TlpType type);
// Everything but the payload: framing + header + ECRC (MWr64: 24, MRd64: 24, CplD: 20).
std::uint32_t tlp_overhead_bytes(const LinkParams& p, TlpType type);
// Overhead + payload. MRd and Cpl carry no payload: a nonzero payload for them throws. The payload
// is counted in bytes as given; pcie-bench does not round it up to whole DWs (pass
// dword_span_bytes() to charge DW padding).
std::uint64_t tlp_wire_bytes(const LinkParams& p, TlpType type, std::uint64_t payload_bytes);
// Bytes of the whole DWs [addr, addr + len) touches (a TLP's real payload field).
std::uint64_t dword_span_bytes(std::uint64_t addr, std::uint64_t len);
// Data credits of a payload: ceil(payload / 16).
std::uint64_t data_credits(std::uint64_t payload_bytes);

// ---------------------------------------------------------------------------------------------
// Splitting a transfer into TLPs. All exact integer arithmetic.
// ---------------------------------------------------------------------------------------------

using Segment = AddressRange;

// Requests (MWr and MRd) are cut at every multiple of `limit` (MPS or MRRS; a power of two
// <= 4096, so every 4 KiB boundary is a cut): the first segment runs up to the next limit-aligned
// address, every later one starts aligned. Nothing crosses 4 KiB; an aligned transfer gives
// ceil(len / limit) segments, as pcie-bench counts. This is how DMA engines keep writes
// cache-line and MPS aligned at the host; it costs at most one TLP over the fewest possible.
// Every function throws if addr + len overflows 64 bits.
std::uint64_t request_step(std::uint64_t addr, std::uint64_t len, std::uint32_t limit);
std::uint64_t count_requests(std::uint64_t addr, std::uint64_t len, std::uint32_t limit);
std::vector<Segment> write_segments(std::uint64_t addr, std::uint64_t len, std::uint32_t mps);
std::vector<Segment> read_requests(std::uint64_t addr, std::uint64_t len, std::uint32_t mrrs);

// The CplDs a completer (root complex) returns for ONE read request [addr, addr + len), which
// must not cross a 4 KiB boundary (it never does: see read_requests). Rule implemented:
//   - if addr is not RCB-aligned, the first completion runs up to the next RCB boundary;
//   - every other completion starts RCB-aligned and carries min(MPS, what is left).
// So every completion but the last ends on an RCB boundary and none exceeds MPS: the conditions
// PCIe Base Spec 2.3.1.1 puts on split completions. The short first completion is what a
// completer working in RCB (cache-line) units produces; for an aligned request the count is
// ceil(len / MPS), pcie-bench's count. With mps = rcb this is pcie-bench's rcb_chunks mode.
std::uint64_t completion_step(std::uint64_t addr, std::uint64_t len, std::uint32_t rcb,
                              std::uint32_t mps);
std::uint64_t count_completions(std::uint64_t addr, std::uint64_t len, std::uint32_t rcb,
                                std::uint32_t mps);
std::vector<Segment> completions(std::uint64_t addr, std::uint64_t len, std::uint32_t rcb,
                                 std::uint32_t mps);
// Completions of a whole read [addr, addr + len): completions() of every read_requests() piece,
// in order. Per request, so with MRRS < MPS a completion never exceeds its request (pcie-bench
// counts ceil(len / MPS) there, which no completer can do).
std::uint64_t count_read_completions(std::uint64_t addr, std::uint64_t len, std::uint32_t mrrs,
                                     std::uint32_t rcb, std::uint32_t mps);
std::vector<Segment> read_completions(std::uint64_t addr, std::uint64_t len, std::uint32_t mrrs,
                                      std::uint32_t rcb, std::uint32_t mps);

// The completion size limit the link uses: rcb if p.rcb_chunks, else mps.
std::uint32_t completion_limit(const LinkParams& p);

// ---------------------------------------------------------------------------------------------
// Wire bytes of a transfer, and the analytic bandwidth of a stream of equal transfers
// ---------------------------------------------------------------------------------------------

struct WireBytes {
  std::uint64_t upstream = 0;    // device -> host, TLP bytes incl. framing
  std::uint64_t downstream = 0;  // host -> device
  std::uint64_t upstream_tlps = 0;
  std::uint64_t downstream_tlps = 0;
  WireBytes& operator+=(const WireBytes& o);
};

// Device writes host memory [addr, addr + len): MWr upstream.
WireBytes write_wire(const LinkParams& p, std::uint64_t addr, std::uint64_t len);
// Device reads host memory [addr, addr + len): MRd upstream, CplD downstream.
WireBytes read_wire(const LinkParams& p, std::uint64_t addr, std::uint64_t len);

struct StreamRate {
  double transactions_per_s = 0;    // transfers per second (read/write: pairs per second)
  double payload_bytes_per_ns = 0;  // payload per direction that carries it, GB/s
  double upstream_utilization = 0;  // share of the TLP rate used, 0..1
  double downstream_utilization = 0;
};

// Back-to-back transfers, each costing `per_transfer` on the wire and moving `payload` bytes,
// both directions at the TLP rate: transfers/ns = min over the directions used of
// tlp_rate / bytes. This is pcie-bench's mem_bw arithmetic (its read "TX runs out first" branch
// is this min()).
StreamRate stream_rate(const LinkParams& p, const WireBytes& per_transfer, std::uint64_t payload);

// pcie-bench's three streams, for transfers of `size` bytes starting at `addr` (pcie-bench
// assumes aligned addresses: addr = 0).
StreamRate write_stream(const LinkParams& p, std::uint64_t size, std::uint64_t addr = 0);
StreamRate read_stream(const LinkParams& p, std::uint64_t size, std::uint64_t addr = 0);
// One write and one read of `size` per transaction, at the same time (pcie-bench read_write):
// payload_bytes_per_ns is what each of the two data directions carries.
StreamRate read_write_stream(const LinkParams& p, std::uint64_t size, std::uint64_t addr = 0);

// Little's law for non-posted reads: `tags` requests of `request_bytes` in flight, each taking
// `round_trip_ps` from issue to last completion: at most tags x bytes / RTT (bytes per ns).
double tag_limited_bytes_per_ns(std::uint32_t tags, std::uint64_t request_bytes,
                                std::uint64_t round_trip_ps);

}  // namespace spyre_dma::model::pcie
