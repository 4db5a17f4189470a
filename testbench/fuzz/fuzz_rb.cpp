// Response-block decoder: the 64 bytes a device (or a corrupt, stale or half-written ring slot)
// hands back to the engine. decode_rb() never throws; what it accepts must re-encode to the same
// bytes, its enumerations must be in range, and an RB built from arbitrary field values must come
// back from encode() -> decode_rb() unchanged whenever decode_rb() accepts it.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "fuzz_support.hpp"
#include "spyre_dma/hw/contract.hpp"

namespace {

using namespace spyre_dma::hw;
using spyre_dma::fuzz::require;

std::uint64_t le(const std::uint8_t* p, unsigned n) {
  std::uint64_t v = 0;
  for (unsigned i = 0; i < n; ++i) v |= std::uint64_t(p[i]) << (8 * i);
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  RbBytes bytes{};
  std::memcpy(bytes.data(), data, size < kRbBytes ? size : kRbBytes);
  const RbDecodeResult r = decode_rb(bytes.data());
  require(rb_phase(bytes.data()) == ((bytes[4] & 1) != 0), "rb_phase() reads bit 32");
  if (!r.error) {
    require(encode(r.rb) == bytes, "an accepted RB re-encodes to its own bytes");
    require(r.rb.tag >= kMinTag && r.rb.tag <= kMaxTag, "accepted tag in range");
    require(static_cast<unsigned>(r.rb.locator) < kNumPipelines, "accepted locator in range");
    require(r.rb.phase == rb_phase(bytes.data()), "phase agrees with rb_phase()");
    // The names the engine prints for an accepted RB are all known ones.
    require(to_string(r.rb.status) != "Unknown" && to_string(r.rb.error) != "unknown" &&
                to_string(r.rb.field) != "unknown" && to_string(r.rb.locator) != "UNKNOWN",
            "accepted enumerations have names");
  } else {
    require(!r.error->empty(), "a rejected RB names what is wrong");
  }

  // Structured: arbitrary field values (the bytes beyond the first 64, else the same bytes).
  std::uint8_t f[45] = {};
  const std::uint8_t* src = size > kRbBytes ? data + kRbBytes : data;
  const std::size_t n = size > kRbBytes ? size - kRbBytes : size;
  std::memcpy(f, src, n < sizeof f ? n : sizeof f);
  ResponseBlock rb;
  rb.tag = static_cast<std::uint32_t>(le(f, 4));
  rb.status = static_cast<RbStatus>(f[4]);
  rb.locator = static_cast<Pipeline>(f[5]);
  rb.phase = f[6] & 1;
  rb.error = static_cast<ErrorKind>(le(f + 7, 2));
  rb.field = static_cast<CbField>(le(f + 9, 2));
  rb.detail = le(f + 11, 8);
  rb.start_ns = le(f + 19, 8);
  rb.end_ns = le(f + 27, 8);
  rb.bytes = le(f + 35, 8);
  const RbBytes encoded = encode(rb);
  const RbDecodeResult back = decode_rb(encoded.data());
  if (!back.error) require(encode(back.rb) == encoded, "encode(decode_rb(encode(rb))) is stable");
  const bool in_range = rb.tag >= kMinTag && rb.tag <= kMaxTag && f[4] <= 3 && f[5] < kNumPipelines &&
                        le(f + 7, 2) <= static_cast<unsigned>(ErrorKind::kQueueFault) &&
                        le(f + 9, 2) <= static_cast<unsigned>(CbField::kCmptDuration);
  if (in_range) {
    require(!back.error, "an RB with every field in range decodes");
    require(back.rb == rb, "decode_rb(encode(rb)) == rb");
  }
  return 0;
}
