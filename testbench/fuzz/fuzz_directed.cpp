// The regression bench's directed-test reader (docs/regress.md, "Directed tests"), as read by
// `spyre-dma regress --suite directed --directed FILE`. Only DirectedError may escape
// parse_directed(); an accepted test's program passes check_program() (or was rejected by it
// inside the reader), and to_directed_json() of the program reads back to the same text.
#include <cstddef>
#include <cstdint>
#include <string>

#include "directed.hpp"
#include "fuzz_support.hpp"

using namespace spyre_dma::regress;
using spyre_dma::fuzz::expect_only;
using spyre_dma::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  DirectedTest test;
  if (!expect_only<DirectedError>("parse_directed", [&] { test = parse_directed(text, "fuzz.json"); })) return 0;
  require(check_program(test.program).empty(), "an accepted directed test is runnable");
  const std::string written = to_directed_json(test.program, test.description);
  DirectedTest back;
  const bool ok = expect_only<DirectedError>("parse_directed", [&] { back = parse_directed(written, "written.json"); });
  require(ok, "to_directed_json() output reads back");
  require(to_directed_json(back.program, back.description) == written, "the directed format round-trips");
  return 0;
}
