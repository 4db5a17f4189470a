// The DMA engine: one per device.
//
// Engine::open() resets and initialises the device through its BAR0 registers (ring bases and
// sizes, queue enables), then owns its queues, the tag space (1..32768), the IOVA mappings, the
// device-memory allocator, the staging pool and the completion path. Streams, events and buffers
// are handles that stay safe to use after the Engine is gone: they then fail with Closed.
//
// Thread safety: every method may be called from any thread. Completions run on the engine's
// poller thread (CompletionMode::kPollerThread) or on threads that wait (kCallerDriven).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "spyre_dma/device.hpp"
#include "spyre_dma/memory.hpp"
#include "spyre_dma/options.hpp"
#include "spyre_dma/status.hpp"
#include "spyre_dma/stream.hpp"

namespace spyre_dma {

namespace detail {
class EngineCore;
}

// What the device reported at open() and what the engine made of it.
struct DeviceLimits {
  std::uint32_t id = 0;
  std::uint32_t version = 0;
  std::uint64_t capabilities = 0;
  std::array<std::uint32_t, 3> depth{};       // device maximum per pipeline
  std::array<std::uint32_t, 3> ring_slots{};  // what the engine programmed
  std::uint64_t max_cb_bytes = 0;             // what the engine cuts at
  std::uint64_t device_memory_bytes = 0;
  std::uint64_t device_memory_usable = 0;
};

struct EngineStats {
  std::uint64_t ops_submitted = 0;
  std::uint64_t ops_completed = 0;
  std::uint64_t ops_failed = 0;
  std::uint64_t cbs_submitted = 0;
  std::uint64_t cbs_completed = 0;
  std::uint64_t doorbells = 0;
  std::uint64_t bytes_h2d = 0;
  std::uint64_t bytes_d2h = 0;
  std::uint64_t bytes_d2d = 0;
  std::uint64_t bytes_fill = 0;
  std::uint64_t bytes_staged = 0;        // moved through staging buffers
  std::uint64_t queue_full_stalls = 0;   // times an op waited for a queue slot
  std::uint64_t staging_stalls = 0;      // times an op waited for a staging buffer
  std::uint64_t footprint_waits = 0;     // waits of an op for an earlier one that touches its bytes
  std::uint64_t priority_yields = 0;     // times an op waited for its ring share (a higher priority was active)
  std::uint64_t tags_in_use = 0;
  std::uint64_t quarantined_tags = 0;
  std::uint64_t quarantined_staging = 0;
  std::uint64_t device_faults = 0;       // RBs the engine could not match, broken rings
  std::uint64_t device_memory_allocated = 0;
};

// A stream that has not moved (docs/engine.md, "Stalls"): it has work, and none of its ops has
// completed for `idle`. What holds it is its first unfinished op and what that op waits for;
// `chain` follows event waits to the streams that hold it in turn.
struct StreamStall {
  std::uint64_t stream = 0;  // Stream::id()
  std::string name;          // StreamOptions::name
  std::chrono::nanoseconds idle{0};
  std::uint64_t ops_pending = 0;
  std::uint64_t head_op = 0;  // the first unfinished op's id
  OpKind head_kind = OpKind::kH2D;
  std::string waiting_for;  // what the head op waits for, in words
  // The streams it waits on through events, nearest first, each as "stream N: op M (kind) <what
  // it waits for>"; the last names what holds them all.
  std::vector<std::string> chain;
  std::string to_string() const;
};

class Engine {
 public:
  // Throws DeviceFault when the device does not identify as a contract-1 device or does not come
  // out of reset, InvalidArgument for options the device cannot honour.
  static std::unique_ptr<Engine> open(std::shared_ptr<Device> device, EngineOptions options = {});
  ~Engine();  // waits (bounded by cb_timeout) for in-flight work, cancels the rest, resets
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  Stream create_stream(StreamOptions options = {});
  // A stream from the engine's pools, as a runtime takes one per task rather than creating it
  // (CUDA's stream pools, flex's pools of low- and high-priority streams): round robin over
  // EngineOptions::pooled_streams strict streams per class, made on first use. Low: priority 0;
  // high: kPooledHighPriority, so that a high one's copies overtake the low ones' bulk
  // (docs/engine.md, "Priority"). Streams handed out twice are shared: their order is one.
  static constexpr int kPooledHighPriority = 1;
  Stream pooled_stream(bool high_priority = false);
  Event create_event();

  // Device memory. Throws OutOfMemory (naming the size) when it cannot be satisfied,
  // InvalidArgument for a zero size or a max_chunk_bytes that is not a multiple of 128.
  DeviceBuffer allocate(std::uint64_t bytes, AllocOptions options = {});
  // Whether `buffer` is this engine's memory (a valid buffer this engine allocated).
  bool owns(const DeviceBuffer& buffer) const noexcept;

  // Pins (maps for DMA) [ptr, ptr + bytes) of the caller's memory. A device in another process
  // (vfio-user) can map only shareable memory (spyre_dma/shareable_memory.hpp); other memory is
  // refused with InvalidArgument naming the address.
  HostBuffer register_host(void* ptr, std::size_t bytes);
  // Allocates page-aligned host memory, registered and shareable (a sealed memfd); freed when the
  // handle and its users are gone.
  HostBuffer allocate_host(std::size_t bytes);

  // Waits for every operation of every stream.
  Status synchronize(std::chrono::nanoseconds timeout = kDefaultWait);

  // Resets the device: in-flight and queued operations complete with kCancelled, quarantined
  // tags and staging buffers return to service, the rings start over. New work then succeeds.
  Status reset(std::chrono::nanoseconds timeout = 10s);

  // Defers the doorbells of submissions made while the returned guard lives, so that many CBs
  // reach the device with one doorbell per pipeline when the last guard ends. Completion
  // processing still rings doorbells, so a batch never stalls the device for long.
  class SubmitBatch {
   public:
    explicit SubmitBatch(std::shared_ptr<detail::EngineCore> core);
    ~SubmitBatch();
    SubmitBatch(SubmitBatch&&) noexcept = default;
    SubmitBatch(const SubmitBatch&) = delete;
    SubmitBatch& operator=(const SubmitBatch&) = delete;
    SubmitBatch& operator=(SubmitBatch&&) = delete;

   private:
    std::shared_ptr<detail::EngineCore> core_;
  };
  [[nodiscard]] SubmitBatch batch();

  EngineStats stats() const;
  // Every stream with work that has completed no op for `idle_for` or longer, and what holds it.
  // A wait that times out names the same for what it waited on.
  std::vector<StreamStall> stalls(std::chrono::nanoseconds idle_for = std::chrono::seconds(1)) const;
  const DeviceLimits& limits() const;
  const EngineOptions& options() const;
  Device& device();

 private:
  explicit Engine(std::shared_ptr<detail::EngineCore> core);
  std::shared_ptr<detail::EngineCore> core_;
};

}  // namespace spyre_dma
