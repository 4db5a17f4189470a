// Trace reader (traces/README.md format): JSON Lines, plain or gzip-compressed, as read from a
// file a user or another tool wrote. The input goes to parse_trace() as it is (so corrupt and
// truncated gzip streams are covered by inputs that start with the gzip magic), and, when it is
// not gzip itself, once more gzip-compressed by the harness: both must give the same outcome.
// Only TraceError may escape. An accepted trace passes check_trace(), and writing it and reading
// it back is a fixed point (write(read(write(t))) == write(t)).
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "fuzz_support.hpp"
#include "spyre_dma/traces/trace_io.hpp"

namespace {

using namespace spyre_dma::traces;
using spyre_dma::fuzz::expect_only;
using spyre_dma::fuzz::finding;
using spyre_dma::fuzz::require;

// The outcome of one parse: the written form of the trace, or the error's text.
struct Outcome {
  bool ok = false;
  std::string text;
};

Outcome parse(const std::string& input) {
  Outcome out;
  std::string error;
  out.ok = expect_only<TraceError>("parse_trace", [&] {
    try {
      std::istringstream in(input, std::ios::binary);
      const Trace trace = parse_trace(in, "fuzz.jsonl");
      require(check_trace(trace).empty(), "an accepted trace passes check_trace()");
      std::ostringstream written;
      write_trace(trace, written);
      out.text = written.str();
    } catch (const TraceError& e) {
      out.text = e.what();
      throw;
    }
  });
  return out;
}

std::string gzip(const std::string& data) {
  z_stream zs{};
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    finding("harness: deflateInit2 failed");
  }
  std::string out(deflateBound(&zs, static_cast<uLong>(data.size())) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  if (deflate(&zs, Z_FINISH) != Z_STREAM_END) finding("harness: deflate failed");
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

bool is_gzip(const std::string& s) {
  return s.size() >= 2 && static_cast<unsigned char>(s[0]) == 0x1f && static_cast<unsigned char>(s[1]) == 0x8b;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const Outcome plain = parse(input);
  if (plain.ok) {
    const Outcome again = parse(plain.text);
    require(again.ok, "a written trace reads back");
    require(again.text == plain.text, "write(read(write(t))) == write(t)");
  }
  if (!is_gzip(input)) {
    const Outcome packed = parse(gzip(input));
    require(packed.ok == plain.ok, "gzip and plain input: the same verdict");
    if (plain.ok) require(packed.text == plain.text, "gzip and plain input: the same trace");
  }
  return 0;
}
