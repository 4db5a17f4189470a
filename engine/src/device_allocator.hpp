// First-fit allocator of device memory over the 8 segments, handing out CompositeAddresses.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>

#include "spyre_dma/hw/contract.hpp"
#include "spyre_dma/memory.hpp"

namespace spyre_dma::detail {

class DeviceAllocator {
 public:
  // `usable_bytes` is spread evenly over the segments (the ECC reserve sits at the top of each).
  explicit DeviceAllocator(std::uint64_t usable_bytes);

  // Throws OutOfMemory naming the request when it cannot be met; nothing is allocated then.
  CompositeAddress allocate(std::uint64_t bytes, std::uint64_t max_chunk_bytes);
  void free(const CompositeAddress& address) noexcept;

  std::uint64_t allocated_bytes() const;
  std::uint64_t capacity_bytes() const noexcept { return capacity_; }

 private:
  using FreeList = std::map<std::uint64_t, std::uint64_t>;  // offset -> size, coalesced
  bool take(std::uint8_t segment, std::uint64_t want, std::uint64_t min, DeviceChunk& out);
  void give_back(std::uint8_t segment, std::uint64_t offset, std::uint64_t size);

  mutable std::mutex mu_;
  std::array<FreeList, hw::kNumSegments> free_;
  std::uint64_t capacity_ = 0;
  std::uint64_t allocated_ = 0;
  unsigned next_segment_ = 0;  // spreads allocations over segments
};

}  // namespace spyre_dma::detail
