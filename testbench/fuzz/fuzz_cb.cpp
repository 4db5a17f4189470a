// Control-block decoder: what a device (or the engine's own ring) reads from host memory.
//
// Two views of each input. The first 128 bytes are a raw CB for decode_cb(), which never throws:
// an accepted CB must re-encode to the same bytes and pass validate(); translate() of its own
// sections must not misbehave. The same bytes also seed a structured ControlBlock with arbitrary
// field values (enumerations outside their range included) for validate(): what it accepts must
// survive encode() -> decode_cb() unchanged (the round trip the contract defines).
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "fuzz_support.hpp"
#include "spyre_dma/hw/contract.hpp"

namespace {

using namespace spyre_dma::hw;
using spyre_dma::fuzz::require;

// Reads little-endian values off the input; zeros once it runs out.
class Reader {
 public:
  Reader(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  std::uint64_t take(unsigned bytes) {
    std::uint64_t v = 0;
    for (unsigned i = 0; i < bytes; ++i) v |= std::uint64_t(pos_ < size_ ? data_[pos_++] : 0) << (8 * i);
    return v;
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

DmaSection section_from(Reader& r) {
  DmaSection s;
  s.type = static_cast<DmaType>(r.take(1));
  s.device.segment = static_cast<std::uint8_t>(r.take(1));
  s.device.flit_offset = static_cast<std::uint32_t>(r.take(4));
  s.length_flits = static_cast<std::uint32_t>(r.take(4));
  s.last_flit_bytes = static_cast<std::uint8_t>(r.take(1));
  s.host_iova_flits = r.take(8);
  s.fill_pattern = static_cast<std::uint32_t>(r.take(4));
  s.source.segment = static_cast<std::uint8_t>(r.take(1));
  s.source.flit_offset = static_cast<std::uint32_t>(r.take(4));
  return s;
}

void check_translate(const ControlBlock& cb, const DmaSection& s, bool write) {
  if (s.type == DmaType::kSkip) return;
  const XlatResult x = translate(cb, s.device, s.length_flits, write);
  if (x.error == ErrorKind::kNone) {
    const XlatEntry& e = cb.xlat[s.device.segment];
    require(s.device.flit_offset + std::uint64_t(s.length_flits) <= e.length_flits,
            "translate() accepted a range beyond its XLAT entry");
    require(x.phys_flits == e.base_flits + s.device.flit_offset, "translate() physical address");
  }
}

void raw_cb(const std::uint8_t* data, std::size_t size) {
  CbBytes bytes{};
  std::memcpy(bytes.data(), data, size < kCbBytes ? size : kCbBytes);
  const CbDecodeResult r = decode_cb(bytes.data());
  if (r.error) return;
  require(encode(r.cb) == bytes, "an accepted CB re-encodes to its own bytes");
  require(!validate(r.cb), "validate() accepts what decode_cb() accepted");
  check_translate(r.cb, r.cb.dmi, true);
  check_translate(r.cb, r.cb.dmo, false);
  if (r.cb.dmi.type == DmaType::kDeviceCopy) check_translate(r.cb, DmaSection{DmaType::kImmediate, r.cb.dmi.source, r.cb.dmi.length_flits, 0, 0, 0, {}}, false);
}

void structured_cb(const std::uint8_t* data, std::size_t size) {
  Reader in(data, size);
  ControlBlock cb;
  cb.tag = static_cast<std::uint32_t>(in.take(4));
  const std::uint64_t flags = in.take(1);
  cb.barrier = flags & 1;
  cb.interrupt = flags & 2;
  cb.dmi = section_from(in);
  cb.dmo = section_from(in);
  cb.cmpt.type = static_cast<ComputeType>(in.take(1));
  cb.cmpt.duration_ns = in.take(8);
  for (XlatEntry& e : cb.xlat) {
    e.mode = static_cast<XlatMode>(in.take(1));
    e.base_flits = in.take(8);
    e.length_flits = static_cast<std::uint32_t>(in.take(4));
  }
  if (validate(cb)) return;
  const CbBytes bytes = encode(cb);
  const CbDecodeResult r = decode_cb(bytes.data());
  require(!r.error, "decode_cb() accepts what validate() accepted");
  // Fields a section of type SKIP (or an invalid XLAT entry) holds are not encoded: compare the
  // canonical form, which is what re-encoding gives.
  require(encode(r.cb) == bytes, "encode(decode_cb(encode(cb))) == encode(cb)");
  require(r.cb.tag == cb.tag && r.cb.barrier == cb.barrier && r.cb.interrupt == cb.interrupt,
          "CTRL fields survive the round trip");
  if (cb.dmi.type != DmaType::kSkip) require(r.cb.dmi.length_flits == cb.dmi.length_flits, "DMI length survives");
  if (cb.dmo.type != DmaType::kSkip) require(r.cb.dmo.length_flits == cb.dmo.length_flits, "DMO length survives");
  require(r.cb.cmpt == cb.cmpt || cb.cmpt.type == ComputeType::kSkip, "CMPT survives the round trip");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  raw_cb(data, size);
  structured_cb(data, size);
  return 0;
}
