#include "gzip.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cerrno>
#include <cstdlib>
#include <limits>

#include "spyre_dma/input_file.hpp"
#include "spyre_dma/traces/trace_io.hpp"

namespace spyre_dma::traces::detail {

std::size_t max_inflated_bytes() {
  try {
    return static_cast<std::size_t>(std::min<std::uint64_t>(max_input_bytes(), std::numeric_limits<std::size_t>::max()));
  } catch (const std::invalid_argument& e) {
    throw TraceError("SPYRE_DMA_MAX_INPUT_BYTES", 0, "", e.what());
  }
}

std::string gunzip(const std::string& data, const std::string& name, std::size_t limit) {
  // The trailer's ISIZE is the inflated size modulo 2^32: at least that much will come out, so a
  // stream whose trailer already says more than the limit is refused before any inflating.
  if (data.size() >= 18) {
    std::uint32_t isize = 0;
    for (int i = 0; i < 4; ++i) isize |= std::uint32_t{static_cast<unsigned char>(data[data.size() - 4 + i])} << (8 * i);
    if (isize > limit) {
      throw TraceError(name, 0, "",
                       fmt::format("inflates to more than {} bytes (the limit; SPYRE_DMA_MAX_INPUT_BYTES raises it): "
                                   "its trailer says {}",
                                   limit, isize));
    }
  }
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) throw TraceError(name, 0, "", "zlib: cannot start inflate");
  std::string out;
  char buf[1 << 16];
  std::size_t fed = 0;  // input handed to zlib so far (avail_in is 32 bits: large inputs go in parts)
  int rc = Z_OK;
  auto fail = [&](const std::string& why) {
    inflateEnd(&zs);
    throw TraceError(name, 0, "", why);
  };
  while (rc != Z_STREAM_END) {
    if (zs.avail_in == 0 && fed < data.size()) {
      const std::size_t part = std::min<std::size_t>(data.size() - fed, std::numeric_limits<uInt>::max());
      zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data() + fed));
      zs.avail_in = static_cast<uInt>(part);
      fed += part;
    }
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof buf;
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      fail(fmt::format("gzip data is corrupt (zlib: {})", zs.msg ? zs.msg : fmt::format("error {}", rc)));
    }
    const std::size_t got = sizeof buf - zs.avail_out;
    if (out.size() + got > limit) {
      fail(fmt::format("inflates to more than {} bytes (the limit; SPYRE_DMA_MAX_INPUT_BYTES raises it)", limit));
    }
    out.append(buf, got);
    if (rc != Z_STREAM_END && zs.avail_in == 0 && fed == data.size() && zs.avail_out != 0) fail("gzip data is truncated");
  }
  inflateEnd(&zs);
  return out;
}

}  // namespace spyre_dma::traces::detail
