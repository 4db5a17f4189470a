// Private to the runner: the memories a test's scoreboard regions stand for - host buffers the
// engine has not registered, host memory read and written directly, and device allocations
// reached through the backend's memory backdoor (never the DMA path under test).
#pragma once

#include <cstddef>
#include <cstdint>

#include "buffer_pool.hpp"
#include "scoreboard.hpp"
#include "spyre_dma/backend/capabilities.hpp"
#include "spyre_dma/spyre_dma.hpp"

namespace spyre_dma::regress::detail {

// Host memory the engine has not registered: plain heap memory (reused from an earlier test of
// the process where it can be) placed `misalign` bytes past a 4 KiB boundary.
class PageableBuffer {
 public:
  PageableBuffer(std::uint64_t bytes, std::uint32_t misalign)
      : buffer_(bytes + misalign), data_(buffer_.data() + misalign) {}
  std::uint8_t* data() const noexcept { return data_; }

 private:
  PooledBuffer buffer_;
  std::uint8_t* data_;
};

class HostPort final : public MemoryPort {
 public:
  explicit HostPort(std::uint8_t* base) : base_(base) {}
  void read(std::uint64_t off, std::uint8_t* dst, std::size_t n) const override;
  void write(std::uint64_t off, const std::uint8_t* src, std::size_t n) override;
  const std::uint8_t* view(std::uint64_t off, std::size_t n, std::size_t& got) const override {
    got = n;
    return base_ + off;
  }
  std::uint8_t* writable(std::uint64_t off, std::size_t /*n*/) override { return base_ + off; }

 private:
  std::uint8_t* base_;
};

// A device allocation through the backend's memory backdoor, chunk by chunk.
class DevicePort final : public MemoryPort {
 public:
  DevicePort(backend::MemoryBackdoor& mem, CompositeAddress address);
  void read(std::uint64_t off, std::uint8_t* dst, std::size_t n) const override;
  void write(std::uint64_t off, const std::uint8_t* src, std::size_t n) override;
  // Within the chunk that holds `off`, as far as the backend's memory lies together.
  const std::uint8_t* view(std::uint64_t off, std::size_t n, std::size_t& got) const override;

 private:
  template <typename F>
  void walk(std::uint64_t off, std::size_t n, F&& f) const;
  backend::MemoryBackdoor& mem_;
  CompositeAddress address_;
};

}  // namespace spyre_dma::regress::detail
