#include "gzip.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <limits>

#include "spyre_dma/traces/trace_io.hpp"

namespace spyre_dma::traces::detail {

std::size_t max_inflated_bytes() {
  constexpr std::size_t kDefault = std::size_t{4} << 30;
  const char* env = std::getenv("SPYRE_DMA_MAX_INPUT_BYTES");
  if (!env || !*env) return kDefault;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(env, &end, 10);
  if (errno != 0 || *end != '\0' || v == 0 || env[0] == '-') {
    throw TraceError("SPYRE_DMA_MAX_INPUT_BYTES", 0, "", fmt::format("'{}' is not a positive byte count", env));
  }
  return static_cast<std::size_t>(std::min<unsigned long long>(v, std::numeric_limits<std::size_t>::max()));
}

std::string gunzip(const std::string& data, const std::string& name, std::size_t limit) {
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
