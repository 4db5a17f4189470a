// Kineto (PyTorch profiler) Chrome-trace JSON importer: profiles come from other machines and
// tools. Only TraceError may escape import_kineto_text(); an imported trace passes check_trace(),
// can be written, and its report's counts add up.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "fuzz_support.hpp"
#include "spyre_dma/traces/kineto.hpp"
#include "spyre_dma/traces/trace_io.hpp"

using namespace spyre_dma::traces;
using spyre_dma::fuzz::expect_only;
using spyre_dma::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  expect_only<TraceError>("import_kineto_text", [&] {
    ImportReport report;
    const Trace trace = import_kineto_text(text, "fuzz.json", report);
    require(check_trace(trace).empty(), "an imported trace passes check_trace()");
    require(report.memcpy + report.memset + report.kernels > 0, "an imported trace has work");
    require(report.memcpy + report.memset + report.kernels + report.ignored + report.unknown +
                    report.malformed <= report.events_seen,
            "no event is counted twice");
    require(report.joined_to_host <= report.memcpy + report.memset + report.kernels,
            "joined ops are imported ops");
    std::ostringstream out;
    write_trace(trace, out);
  });
  return 0;
}
