// vfio-user messages as a hostile peer sends them: the header, then the payload parsed as the
// command it names, both ways (command and reply), exactly as the device server and the client
// parse them. A finding is: a sanitizer report, any exception other than ProtocolError, or an
// accepted payload that does not survive encode() -> parse unchanged.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz_support.hpp"
#include "spyre_dma/vfio/protocol.hpp"

namespace {

using namespace spyre_dma::vfio;
using spyre_dma::fuzz::require;

template <class T, class Parse>
void round_trip(const T& v, Command c, Parse parse) {
  const std::vector<std::uint8_t> bytes = encode(v);
  Reader again(c, bytes.data(), bytes.size());
  const T back = parse(again);
  require(encode(back) == bytes, "an accepted payload re-encodes to the same bytes");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Header h;
  try {
    h = parse_header(data, size);
  } catch (const ProtocolError&) {
    return 0;
  }
  require(h.size >= kHeaderBytes && h.size <= kMaxMessageBytes, "an accepted header has a size in range");
  const std::uint8_t* payload = data + kHeaderBytes;
  const std::size_t n = size - kHeaderBytes;
  for (const bool with_data : {false, true}) {
    Reader r(h.command, payload, n);
    try {
      switch (h.command) {
        case Command::kVersion: round_trip(parse_version(r), h.command, parse_version); break;
        case Command::kDmaMap: round_trip(parse_dma_map(r), h.command, parse_dma_map); break;
        case Command::kDmaUnmap: round_trip(parse_dma_unmap(r), h.command, parse_dma_unmap); break;
        case Command::kDeviceGetInfo: round_trip(parse_device_info(r), h.command, parse_device_info); break;
        case Command::kDeviceGetRegionInfo: {
          const RegionInfo i = parse_region_info(r);
          require(!i.has_type || (i.flags & kRegionCaps) != 0, "a region type comes from a capability chain");
          break;
        }
        case Command::kDeviceGetIrqInfo: round_trip(parse_irq_info(r), h.command, parse_irq_info); break;
        case Command::kDeviceSetIrqs: round_trip(parse_irq_set(r), h.command, parse_irq_set); break;
        case Command::kRegionRead:
        case Command::kRegionWrite: {
          const RegionAccess a = parse_region_access(r, with_data);
          require(!with_data || a.data.size() == a.count, "an access carries exactly count bytes");
          break;
        }
        default: break;
      }
    } catch (const ProtocolError& e) {
      require(e.what()[0] != '\0', "a refusal names what is wrong");
    }
  }
  return 0;
}
