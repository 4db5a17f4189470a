// Host memory another process can map: what the engine allocates for its own DMA buffers (CB and
// RB rings, staging buffers, Engine::allocate_host), so that a device living in another process
// (a vfio-user server) reaches it through shared mappings rather than copies.
//
// Each allocation is a memfd of its own, mapped shared and page-aligned, zero-filled. Where the
// kernel refuses a memfd (no memfd_create, no file descriptor left) the allocation falls back to
// private anonymous memory: it works for every device in this process, and find_shareable() says
// it cannot be shared, so a device elsewhere refuses to map it with an error naming the address.
//
// Thread safety: every function may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace spyre_dma {

// Page-aligned, zero-filled memory of at least `bytes` (> 0). Throws std::bad_alloc when none.
void* allocate_shareable(std::size_t bytes);
// Frees what allocate_shareable returned (null is ignored).
void free_shareable(void* p) noexcept;

// Where [p, p + bytes) lies in a shareable allocation: its file descriptor (owned by the
// allocation: valid until it is freed) and the offset of `p` within that file.
struct ShareableRange {
  int fd = -1;
  std::uint64_t offset = 0;
};
// Empty unless the whole range lies within one shareable allocation.
std::optional<ShareableRange> find_shareable(const void* p, std::size_t bytes);

}  // namespace spyre_dma
