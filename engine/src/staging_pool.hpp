// The bounded pool of staging buffers that pageable and unaligned host memory moves through. A
// buffer returns to the pool only when the CB using it has retired; one whose CB timed out is
// quarantined until a late RB or a reset proves it idle.
//
// A buffer is DMA-mapped only while a CB uses it: acquire() maps it (a fresh IOVA each time) and
// release() / quarantine() unmap it, so the device reaches a staging buffer only for the lifetime
// of the CB it was given, never the data of an op that has completed, nor a buffer between uses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "spyre_dma/device.hpp"
#include "spyre_dma/status.hpp"

namespace spyre_dma::detail {

class StagingPool {
 public:
  StagingPool(Device& device, std::size_t buffer_bytes, std::size_t count);
  ~StagingPool();
  StagingPool(const StagingPool&) = delete;
  StagingPool& operator=(const StagingPool&) = delete;

  static constexpr int kNone = -1;       // every buffer is busy or quarantined
  static constexpr int kMapFailed = -2;  // the device refused the mapping (map_error() says why)
  int acquire() noexcept;
  void release(int index) noexcept;
  void quarantine(int index) noexcept;
  void release_quarantined() noexcept;  // after a reset

  std::uint8_t* data(int index) const noexcept { return buffers_[static_cast<std::size_t>(index)].data; }
  std::uint64_t iova(int index) const noexcept { return buffers_[static_cast<std::size_t>(index)].iova; }
  std::size_t buffer_bytes() const noexcept { return buffer_bytes_; }
  std::size_t count() const noexcept { return buffers_.size(); }
  std::size_t free_count() const noexcept { return free_.size(); }
  std::size_t quarantined() const noexcept;
  std::size_t mapped() const noexcept;
  const std::string& map_error() const noexcept { return map_error_; }
  // How the op that needed the buffer fails: kDeviceFault when the device itself has failed (a
  // dead vfio-user server, a stopped simulation), else kOutOfMemory (the device refused the map).
  ErrorCode map_error_code() const noexcept { return map_error_code_; }

 private:
  struct Buffer {
    std::uint8_t* data = nullptr;
    std::uint64_t iova = 0;
    bool mapped = false;
    bool quarantined = false;
  };
  void unmap(Buffer& b) noexcept;

  Device& device_;
  std::size_t buffer_bytes_;
  std::vector<Buffer> buffers_;
  std::vector<int> free_;
  std::string map_error_;
  ErrorCode map_error_code_ = ErrorCode::kOutOfMemory;
};

}  // namespace spyre_dma::detail
