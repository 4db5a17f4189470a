// Device and host memory as the engine's users see them.
//
// Device memory is 8 segments of 16 GiB (hw::kNumSegments x hw::kSegmentBytes). An allocation is a
// CompositeAddress: an ordered list of chunks, each inside one segment and 128-byte aligned, that
// together form one logical buffer. Transfers over several chunks are scatter-gathered: the engine
// cuts them at chunk boundaries into CBs whose XLAT entries confine each CB to its chunk.
//
// Host memory comes in two kinds. Registered (pinned, mapped once for DMA) buffers are DMA'd
// directly when the transfer's host address is 128-byte aligned; everything else (pageable memory,
// unaligned addresses) moves through the engine's bounded staging pipeline.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace spyre_dma {

namespace detail {
struct AllocationState;
struct HostRegistrationState;
}  // namespace detail

struct DeviceChunk {
  std::uint8_t segment = 0;     // 0..7
  std::uint64_t offset = 0;     // bytes from the segment's start, 128-byte aligned
  std::uint64_t size = 0;       // bytes, a multiple of 128
  // Physical byte address in device memory (segment * 16 GiB + offset).
  std::uint64_t physical() const noexcept;
};

class CompositeAddress {
 public:
  CompositeAddress() = default;
  explicit CompositeAddress(std::vector<DeviceChunk> chunks);

  const std::vector<DeviceChunk>& chunks() const noexcept { return chunks_; }
  std::uint64_t size() const noexcept { return size_; }
  bool empty() const noexcept { return chunks_.empty(); }

  // The chunk holding logical byte `offset`, and the offset within it.
  struct Position {
    std::size_t chunk = 0;
    std::uint64_t offset_in_chunk = 0;
  };
  // Throws std::out_of_range past size(). Inline for the one-chunk case, which is most
  // allocations and is looked up for every CB.
  Position locate(std::uint64_t offset) const {
    if (starts_.size() == 1 && offset < size_) return Position{0, offset};
    return locate_among_chunks(offset);
  }

 private:
  Position locate_among_chunks(std::uint64_t offset) const;

  std::vector<DeviceChunk> chunks_;
  std::vector<std::uint64_t> starts_;  // logical start of each chunk
  std::uint64_t size_ = 0;
};

// A device allocation. A handle: copies share the allocation, which returns to the allocator when
// the last handle is gone and no operation still uses it (an operation keeps its buffers alive).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  bool valid() const noexcept { return state_ != nullptr; }
  std::uint64_t size() const noexcept;            // bytes requested
  const CompositeAddress& address() const;        // the chunks
  std::uint64_t id() const noexcept;              // unique per engine, never reused

  explicit DeviceBuffer(std::shared_ptr<detail::AllocationState> state) : state_(std::move(state)) {}
  const std::shared_ptr<detail::AllocationState>& state() const noexcept { return state_; }

 private:
  std::shared_ptr<detail::AllocationState> state_;
};

// The check every copy and fill makes of its device side, for code that must know a request is
// valid before it submits anything (spyre_dma/rdma's device variants): throws InvalidArgument,
// "<what>: <role> ...", unless `buffer` is valid and [offset, offset + bytes) lies in it with
// `offset` a multiple of 128.
void check_device_range(const char* what, const char* role, const DeviceBuffer& buffer, std::uint64_t offset,
                        std::uint64_t bytes);

// A registered (pinned, DMA-mapped) host buffer. Copies from or to any address inside it use it
// directly. The mapping lives while the handle or an operation using it does; release() removes
// it from the engine's registry at once (new copies then stage), and the unmap follows when the
// last operation using it completes.
class HostBuffer {
 public:
  HostBuffer() = default;
  bool valid() const noexcept { return state_ != nullptr; }
  void* data() const noexcept;
  std::size_t size() const noexcept;
  std::uint64_t iova() const noexcept;
  void release();

  explicit HostBuffer(std::shared_ptr<detail::HostRegistrationState> state)
      : state_(std::move(state)) {}

 private:
  std::shared_ptr<detail::HostRegistrationState> state_;
};

}  // namespace spyre_dma
