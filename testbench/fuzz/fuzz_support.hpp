// Shared by the fuzz targets: what counts as a finding besides a sanitizer report or a crash.
//
// Every parser documents the one exception type it throws for bad input. That type is the
// expected outcome of most fuzz inputs; any other exception (std::out_of_range from a container,
// nlohmann::json's type_error, std::bad_alloc, ...) escaping the parser is a finding, and so is a
// broken round-trip property. Both abort with a message, which libFuzzer reports as a crash and
// saves the input for.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <typeinfo>

namespace spyre_dma::fuzz {

[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "FINDING: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

inline void require(bool ok, const char* property) {
  if (!ok) finding(std::string("property violated: ") + property);
}

// Runs `body`; returns true when it completed, false when it threw `Expected` (the parser's
// documented error). Any other exception is a finding.
template <class Expected, class Body>
bool expect_only(const char* parser, Body&& body) {
  try {
    body();
    return true;
  } catch (const Expected&) {
    return false;
  } catch (const std::exception& e) {
    finding(std::string(parser) + " threw " + typeid(e).name() + " instead of its documented error: " +
            e.what());
  } catch (...) {
    finding(std::string(parser) + " threw a non-std exception");
  }
}

}  // namespace spyre_dma::fuzz
