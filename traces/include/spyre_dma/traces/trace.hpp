// The trace data model: what a DMA workload did, in enough detail to replay it on any backend.
//
// A Trace is a header (where it came from, on what device and link, at what time resolution),
// the device allocations it uses and its operations in issue order. Operations name allocations
// by id, so a replay recreates them; host memory is described only by its kind (registered or
// pageable) and the replay synthesises its content. Times are optional: a trace imported from a
// profiler may know issue times and durations, a captured one knows all three, a synthetic one
// none. traces/README.md documents the file format (JSON Lines) key by key.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace spyre_dma::traces {

// The largest time, in ns, a trace may hold (about 31 years): any larger would wrap the 64-bit
// nanosecond clocks a replay runs on. check_trace refuses an op's time beyond it, naming the field.
inline constexpr double kMaxTraceTimeNs = 1e18;

inline constexpr int kFormatVersion = 1;

enum class OpKind : std::uint8_t {
  kH2D, kD2H, kD2D, kFill, kCompute, kHostCallback, kEventRecord, kEventWait,
};
// JSON names: "h2d", "d2h", "d2d", "fill", "compute", "host_callback", "event_record",
// "event_wait".
const char* to_string(OpKind kind);
std::optional<OpKind> parse_op_kind(std::string_view name);

// The host side of an H2D or D2H: registered memory is DMA'd directly, pageable memory goes
// through the engine's staging buffers. kNone for every other kind.
enum class HostMemory : std::uint8_t { kNone, kRegistered, kPageable };
// JSON names: "none", "registered", "pageable".
const char* to_string(HostMemory host);
std::optional<HostMemory> parse_host_memory(std::string_view name);

struct Header {
  int version = kFormatVersion;
  std::string source;          // "capture", "kineto:<file>", "bandwidthtest:<file>", ...
  std::string device;          // e.g. "NVIDIA A100", "sim spyre-gen5x16"
  std::string link;            // e.g. "PCIe Gen3 x16"; "" unknown
  double resolution_ns = 0;    // resolution of captured times (Kineto: 1000); 0 = exact
  // Devices the trace's ops run on (numbered from 0): a replay runs device d's ops on device d of
  // a server of this many, all at once. 1 for a trace of one device.
  std::uint32_t devices = 1;
  nlohmann::json extra = nlohmann::json::object();  // anything else the producer wants to keep
};

// One device allocation. max_chunk_bytes as in spyre_dma::AllocOptions (0: no forced cut).
struct Allocation {
  std::uint64_t id = 0;  // unique, nonzero
  std::uint64_t bytes = 0;
  std::uint64_t max_chunk_bytes = 0;
  std::uint32_t device = 0;  // the device whose memory holds it (< header.devices)
};

struct Op {
  std::uint64_t id = 0;              // unique, increasing in issue order
  std::uint32_t device = 0;          // the device it runs on (< header.devices); its allocations are that device's
  std::uint32_t stream = 0;          // a stream of its device: (device, stream) is one ordered queue
  OpKind kind = OpKind::kH2D;
  std::uint64_t bytes = 0;
  HostMemory host = HostMemory::kNone;            // H2D / D2H
  std::uint64_t dst_alloc = 0, dst_offset = 0;    // device side: allocation id (0 = none) and offset
  std::uint64_t src_alloc = 0, src_offset = 0;
  std::uint32_t pattern = 0;         // fill
  std::uint64_t compute_ns = 0;      // compute: kernel duration
  std::uint32_t event = 0;           // record / wait; events are their device's own
  std::vector<std::uint64_t> deps;   // op ids that must complete first, besides stream order (any device's)
  std::optional<double> issue_ns;    // host issue time (trace clock), e.g. cudaMemcpyAsync start
  std::optional<double> start_ns;    // captured device start
  std::optional<double> duration_ns; // captured device duration
  // Captured host time (docs/engine.md, "Timing"): the call that submitted the op (on start_ns's
  // clock) and from there to the completion the host saw, staging copies included.
  std::optional<double> host_start_ns;
  std::optional<double> host_duration_ns;
};

struct Trace {
  Header header;
  std::vector<Allocation> allocations;
  std::vector<Op> ops;
};

// "" when the trace is consistent, else what is wrong, naming the op (or allocation) id, the
// field and its value: ids not increasing, references to unknown allocations or earlier ops,
// ranges past an allocation, fields that do not fit the op's kind, a device index not below
// header.devices, an op naming an allocation of another device.
std::string check_trace(const Trace& trace);

}  // namespace spyre_dma::traces
