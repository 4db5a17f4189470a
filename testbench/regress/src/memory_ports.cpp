// The memories behind the runner's scoreboard regions: direct host access (pageable buffers are
// in memory_ports.hpp), and device allocations walked chunk by chunk through the memory backdoor.
#include "memory_ports.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

namespace spyre_dma::regress::detail {

void HostPort::read(std::uint64_t off, std::uint8_t* dst, std::size_t n) const { std::memcpy(dst, base_ + off, n); }

void HostPort::write(std::uint64_t off, const std::uint8_t* src, std::size_t n) { std::memcpy(base_ + off, src, n); }

DevicePort::DevicePort(backend::MemoryBackdoor& mem, CompositeAddress address) : mem_(mem), address_(std::move(address)) {}

template <typename F>
void DevicePort::walk(std::uint64_t off, std::size_t n, F&& f) const {
  std::size_t done = 0;
  while (done < n) {
    const CompositeAddress::Position p = address_.locate(off + done);
    const DeviceChunk& c = address_.chunks()[p.chunk];
    const std::size_t len = static_cast<std::size_t>(std::min<std::uint64_t>(n - done, c.size - p.offset_in_chunk));
    f(c.physical() + p.offset_in_chunk, done, len);
    done += len;
  }
}

const std::uint8_t* DevicePort::view(std::uint64_t off, std::size_t n, std::size_t& got) const {
  got = 0;
  if (n == 0) return nullptr;
  const CompositeAddress::Position p = address_.locate(off);
  const DeviceChunk& c = address_.chunks()[p.chunk];
  const std::size_t len = static_cast<std::size_t>(std::min<std::uint64_t>(n, c.size - p.offset_in_chunk));
  return static_cast<const std::uint8_t*>(mem_.backdoor_view(c.physical() + p.offset_in_chunk, len, got));
}

void DevicePort::read(std::uint64_t off, std::uint8_t* dst, std::size_t n) const {
  walk(off, n, [&](std::uint64_t phys, std::size_t at, std::size_t len) { mem_.backdoor_read(phys, dst + at, len); });
}

void DevicePort::write(std::uint64_t off, const std::uint8_t* src, std::size_t n) {
  walk(off, n, [&](std::uint64_t phys, std::size_t at, std::size_t len) { mem_.backdoor_write(phys, src + at, len); });
}

}  // namespace spyre_dma::regress::detail
