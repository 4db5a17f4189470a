// A host memory pool shared by several processes, for offloading device data that others may
// bring back (a KV cache): fixed-size slots in a named shared-memory file, a directory from key to
// slot, and a gate that publishes a slot only once the DMA that filled it has completed
// (docs/engine.md, "A shared host pool").
//
// The rule every reader relies on: a stale or half-written slot is a miss, never bytes. Each slot
// has one 64-bit state word, the owner's process id and a sequence number; the sequence is odd
// while a writer fills the slot and even once it is published. A writer takes a slot (even ->
// odd, or odd -> odd + 2 when the writer that held it has died), DMAs into it and, on the op's
// completion, records the key and length and makes the sequence even. A reader accepts the bytes
// it copied only if the state word was even, named its key, and did not change while it copied.
// A writer killed at any point leaves the slot odd (a miss) until another writer takes it over.
//
// The directory maps a key to one slot (key modulo the slot count, as a direct-mapped cache): a
// newer key evicts an older one. Several writers may share the pool; a slot held by a live writer
// is refused (kBusy) rather than waited for.
//
// Thread safety: every function may be called from any thread of any process that opened the pool.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "spyre_dma/memory.hpp"
#include "spyre_dma/stream.hpp"

namespace spyre_dma {

class Engine;

namespace detail {
struct HostPoolState;
}

class SharedHostPool {
 public:
  struct Options {
    std::size_t slots = 64;
    std::size_t slot_bytes = 1 << 20;  // rounded up to 4 KiB (the IOMMU page)
  };
  // Creates the pool `name` (a POSIX shared-memory name, "/kv" or "kv"), zeroed; fails with
  // InvalidArgument if it exists (remove() first) or the options are out of range.
  static SharedHostPool create(const std::string& name, Options options);
  // Opens a pool another process created; InvalidArgument names what is missing or wrong.
  static SharedHostPool open(const std::string& name);
  // Removes the name (processes that have it open keep their mapping).
  static void remove(const std::string& name);

  SharedHostPool() = default;
  bool valid() const noexcept { return state_ != nullptr; }
  std::size_t slots() const noexcept;
  std::size_t slot_bytes() const noexcept;
  std::size_t slot_of(std::uint64_t key) const noexcept { return static_cast<std::size_t>(key % slots()); }

  // The pool's memory registered with `engine` (once per engine), so that copies to and from
  // slots are direct DMA. A device that cannot map it (one in another process, behind vfio-user,
  // maps only the engine's own sealed memory) gets an invalid handle: the copies then go through
  // the engine's staging buffers, with the same rules.
  HostBuffer register_with(Engine& engine);

  // The writer's side: takes key's slot and copies `bytes` of `src` at `src_offset` into it on
  // `stream`; the slot is published when that copy completes well (and stays a miss if it fails
  // or the process dies first). kBusy: a live writer holds the slot. The returned op completes
  // once the copy has, after the publication.
  enum class Offer : std::uint8_t { kStarted, kBusy };
  struct Offload {
    Offer offer = Offer::kBusy;
    Op op;  // valid when kStarted
  };
  Offload offload(Stream& stream, std::uint64_t key, const DeviceBuffer& src, std::uint64_t src_offset,
                  std::uint64_t bytes);

  // The reader's side, on the host: copies key's bytes into `dst` (at most `capacity`) and returns
  // how many, or nothing on a miss (not there, being written, evicted, or changed during the copy).
  std::optional<std::size_t> read(std::uint64_t key, void* dst, std::size_t capacity) const;

  // The reader's side, to the device: copies key's bytes into `dst` at `dst_offset` on `stream`.
  // Nothing on a miss at the start. The copy's bytes count only if `valid()` is true once the op
  // has completed (the slot did not change while the device read it).
  class Fetch {
   public:
    Op op;
    std::size_t bytes = 0;
    bool valid() const;  // the op completed well and the slot is the one it started from

   private:
    friend class SharedHostPool;
    std::shared_ptr<detail::HostPoolState> pool_;
    std::size_t slot_ = 0;
    std::uint64_t state_ = 0;
  };
  std::optional<Fetch> fetch(Stream& stream, std::uint64_t key, const DeviceBuffer& dst, std::uint64_t dst_offset);

  // What the directory holds now: the slots published (a snapshot; tests and tools).
  std::size_t published() const;

 private:
  explicit SharedHostPool(std::shared_ptr<detail::HostPoolState> s) : state_(std::move(s)) {}
  std::shared_ptr<detail::HostPoolState> state_;
};

}  // namespace spyre_dma
