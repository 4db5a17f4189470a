// Import of PyTorch profiler (Kineto) Chrome-trace JSON into a Trace.
//
// What is taken (docs/traces.md, "Kineto import"): GPU copies ("Memcpy HtoD/DtoH/DtoD", category
// gpu_memcpy) with args.bytes, their stream (args.stream, else tid), ts and dur (microseconds);
// pageable vs pinned host memory from the event name; memsets (gpu_memset) as fills; kernels on
// the same streams as compute ops of their duration; the host cudaMemcpy*/cudaMemset*/launch call
// joined by args.correlation gives an op's issue time. Each copy gets device allocations of its own,
// sized to it: a profile names no device addresses, and separate allocations let a replay verify
// each copy's data on its own.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "spyre_dma/traces/trace.hpp"

namespace spyre_dma::traces {

struct ImportReport {
  std::size_t events_seen = 0;     // entries of traceEvents
  std::size_t memcpy = 0;          // GPU copies imported
  std::size_t memset = 0;          // GPU memsets imported (as fills)
  std::size_t kernels = 0;         // kernels imported (as compute ops)
  std::size_t joined_to_host = 0;  // imported ops whose host call was found (issue_ns set)
  std::size_t ignored = 0;         // host-side and metadata events a DMA trace has no use for
  std::size_t unknown = 0;         // device-side events of a kind the importer does not know
  std::size_t malformed = 0;       // events of a known kind with a missing or bad field
  std::vector<std::string> notes;  // one line per unknown kind and per malformed event (capped)
};

// Reads a Chrome-trace JSON file, plain or gzip (recognised by its magic bytes). Unknown and
// malformed events are counted in `report`, never fatal; throws TraceError naming the file when
// it cannot be read or parsed, or when nothing usable (no copy, memset or kernel) remains.
Trace import_kineto(const std::string& path, ImportReport& report);

// The same from JSON text already in memory; `name` is what errors and the header call it.
Trace import_kineto_text(const std::string& text, const std::string& name, ImportReport& report);

}  // namespace spyre_dma::traces
