// Page-aligned bytes, for host memory a simulated device or NIC reaches directly (SimNic::expose,
// its puts' sources). A transfer's timing depends on where its buffers lie within their 4 KiB
// pages (a TLP never crosses a page, as on hardware); buffers that start on a page give the same
// simulated times on every run, wherever the allocator puts them. (An engine's HostBuffer is
// page aligned already.)
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>

namespace spyre_dma::model {

class PageBuffer {
 public:
  static constexpr std::size_t kPage = 4096;
  explicit PageBuffer(std::size_t bytes, std::uint8_t fill = 0)
      : size_(bytes), bytes_(static_cast<std::uint8_t*>(std::aligned_alloc(kPage, whole_pages(bytes)))) {
    if (!bytes_) throw std::bad_alloc();
    for (std::size_t i = 0; i < bytes; ++i) bytes_.get()[i] = fill;
  }
  std::uint8_t* data() noexcept { return bytes_.get(); }
  const std::uint8_t* data() const noexcept { return bytes_.get(); }
  std::size_t size() const noexcept { return size_; }
  std::uint8_t* begin() noexcept { return data(); }
  std::uint8_t* end() noexcept { return data() + size_; }
  std::uint8_t& operator[](std::size_t i) noexcept { return bytes_.get()[i]; }

  // aligned_alloc wants a multiple of the alignment, and at least one page (0 bytes too).
  static std::size_t whole_pages(std::size_t bytes) { return (std::max<std::size_t>(bytes, 1) + kPage - 1) / kPage * kPage; }

 private:
  struct Free {
    void operator()(std::uint8_t* p) const noexcept { std::free(p); }
  };
  std::size_t size_;
  std::unique_ptr<std::uint8_t, Free> bytes_;
};

}  // namespace spyre_dma::model
