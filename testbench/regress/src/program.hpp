// A regression test program: the buffers, streams and operations one test runs, whether drawn by
// the random generator (generator.hpp) or read from a directed test file (directed.hpp).
//
// Programs are plain data, so a test is reproducible from its description alone. Operations refer
// to buffers, streams and events by index. kSync ends an epoch: every stream is synchronised and
// every byte the epoch touched is compared with the scoreboard's shadow. Within an epoch a program
// obeys the hazard rules the scoreboard relies on (see scoreboard.hpp): a byte is written at most
// once, nothing is written after it was read, and a read of a byte written earlier in the epoch is
// ordered after that write (same stream in a mode that orders it, an event, or the engine's
// ordering by footprint where the program runs with it).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "spyre_dma/hw/contract.hpp"
#include "spyre_dma/options.hpp"
#include "spyre_dma/status.hpp"

namespace spyre_dma::regress {

enum class HostKind : std::uint8_t {
  kRegistered,  // Engine::allocate_host: pinned, mapped once, DMA'd directly when aligned
  kPageable,    // plain heap memory: every copy goes through the staging pipeline
};

struct HostBufferSpec {
  std::uint64_t bytes = 0;
  HostKind kind = HostKind::kRegistered;
  // Bytes the buffer's start sits past a 128-byte boundary (pageable only): unaligned host
  // addresses exercise the staging path's head and tail handling.
  std::uint32_t misalign = 0;
};

struct DeviceBufferSpec {
  std::uint64_t bytes = 0;
  std::uint64_t max_chunk_bytes = 0;  // AllocOptions::max_chunk_bytes: 0 = one chunk if possible
};

struct StreamSpec {
  Ordering ordering = Ordering::kStrict;
  int priority = 0;
  FailurePolicy on_failure = FailurePolicy::kIsolate;
};

enum class OpType : std::uint8_t {
  kH2D, kD2H, kD2D, kFill, kCompute, kHostCallback, kRecord, kWait, kSync,
};
const char* to_string(OpType type) noexcept;

// The hardware queue an op's CBs go to (pipeline-FIFO streams order per queue); kNone for what the
// host handles itself (callbacks, events, sync).
enum class Queue : std::uint8_t { kCompute, kDmai, kDmao, kNone };
Queue queue_of(OpType type) noexcept;

// What a directed test expects of one operation. Random programs leave it empty: there every op
// must succeed unless a fault was injected.
struct Expectation {
  ErrorCode code = ErrorCode::kOk;
  std::optional<hw::ErrorKind> kind;  // for kDeviceError: the RB's error kind
};

struct OpSpec {
  OpType type = OpType::kSync;
  std::uint32_t stream = 0;
  std::uint32_t host = 0;            // H2D source / D2H destination buffer
  std::uint64_t host_offset = 0;
  std::uint32_t dev = 0;             // H2D, D2D, fill destination / D2H source buffer
  std::uint64_t dev_offset = 0;      // a multiple of 128
  std::uint32_t src_dev = 0;         // D2D source buffer
  std::uint64_t src_offset = 0;      // a multiple of 128
  std::uint64_t bytes = 0;
  std::uint32_t pattern = 0;         // fill
  std::uint64_t duration_ns = 0;     // compute
  std::uint32_t event = 0;           // record / wait
  std::optional<Expectation> expect; // directed tests only
};

// Engine settings a program runs with (0: the engine's default).
struct EngineTuning {
  std::uint32_t ring_slots = 0;        // per pipeline: small rings force queue-full stalls
  std::uint64_t max_cb_bytes = 0;
  std::uint32_t staging_buffers = 0;
  std::uint64_t staging_buffer_bytes = 0;
  bool order_by_footprint = false;  // EngineOptions::order_by_footprint: reads need no events
};

// Faults the sim backend injects (rates per TLP or per CB; see model/sim_config.hpp FaultConfig).
struct FaultPlan {
  double poisoned_rate = 0, unsupported_request_rate = 0, completer_abort_rate = 0;
  double dropped_completion_rate = 0, lcrc_rate = 0, iommu_fault_rate = 0;
  double malformed_cb_rate = 0, device_reset_rate = 0;
  std::uint64_t at_cb = 0;   // the n-th CB the device executes (1-based); 0: none
  std::string at_cb_fault;   // its fault kind, as the model names it
  bool any() const noexcept {
    return poisoned_rate > 0 || unsupported_request_rate > 0 || completer_abort_rate > 0 ||
           dropped_completion_rate > 0 || lcrc_rate > 0 || iommu_fault_rate > 0 ||
           malformed_cb_rate > 0 || device_reset_rate > 0 || at_cb > 0;
  }
  // The plan as a patch of the model's configuration (backend::Settings::patch): its faults.*
  // keys and link.lcrc_error_rate; null when the plan injects nothing.
  nlohmann::json config_patch() const;
  // The rates by the names the directed format gives them.
  static const std::array<std::pair<const char*, double FaultPlan::*>, 8>& rates();
};

struct Program {
  std::string name;
  std::uint64_t seed = 0;
  std::vector<StreamSpec> streams;
  std::vector<HostBufferSpec> host_buffers;
  std::vector<DeviceBufferSpec> device_buffers;
  std::uint32_t events = 0;
  std::vector<OpSpec> ops;
  EngineTuning tuning;
  FaultPlan faults;
};

// A byte range an op reads or writes: in a host buffer or a device buffer, by index.
struct SpecTouch {
  bool host = false;
  std::uint32_t buf = 0;
  std::uint64_t lo = 0, hi = 0;  // [lo, hi)
  bool write = false;
  bool overlaps(const SpecTouch& o) const noexcept { return host == o.host && buf == o.buf && lo < o.hi && o.lo < hi; }
};
// Whether stream `stream` alone orders an op on queue `later` after an earlier one of its own on
// queue `earlier`: every mode does, except pipeline FIFO across queues.
bool stream_orders(const Program& program, std::uint32_t stream, Queue earlier, Queue later);

// What `op` reads and writes (none for compute, host work, events and syncs).
std::vector<SpecTouch> touches(const OpSpec& op);

// Structural checks (indices in range, ranges inside their buffers, device offsets aligned): the
// empty string when the program is runnable, else what is wrong, naming the op and field.
std::string check_program(const Program& program);
// The hazard rules above, epoch by epoch: the empty string when the program keeps them, else the
// first op that breaks one and how.
std::string check_hazards(const Program& program);

}  // namespace spyre_dma::regress
