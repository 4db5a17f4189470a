// The IOMMU of every simulated device: the only way the device reaches host memory.
//
// map() hands out page-granular IOVA space from [iova_base, iova_limit) (0x10'0000'0000 upwards by
// default), next-fit, with at least one unmapped guard page between mappings, and returns
// IOVA = page base + (host & 0xFFF), as a real IOMMU maps whole 4 KiB pages. The device may touch
// exactly the bytes mapped, not the rest of their pages. Freed IOVA space is reused only after the
// allocator has gone round the whole range once, so a stale IOVA faults rather than aliasing a
// newer mapping.
//
// map_at() maps at an IOVA the host chose instead (VFIO's IOMMU API, where the host picks IOVAs),
// under the same page and guard rules.
//
// translate() resolves a device access [iova, iova + bytes) in one direction. It succeeds only when
// the whole range lies within one mapping and that mapping allows the direction; a range crossing
// two mappings (or a guard page) faults. A successful translation returns a Window that pins the
// mapping: unmap() of that mapping waits until every window on it has closed, so after unmap()
// returns the device can no longer reach those bytes, and memory the device was still copying is
// not freed under it. Keep windows short (one memcpy).
//
// Thread safety: every member may be called from any thread; translations share a reader lock.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <shared_mutex>

#include "spyre_dma/device.hpp"

namespace spyre_dma::device_core {

class Iommu {
  struct Mapping;

 public:
  static constexpr std::uint64_t kPageBytes = 4096;
  static constexpr std::uint64_t kDefaultIovaBase = 0x10'0000'0000ull;
  static constexpr std::uint64_t kDefaultIovaLimit = 1ull << 48;

  // Pins one mapping while the device accesses it. Move-only; converts to false on a fault.
  class Window {
   public:
    Window() = default;
    ~Window() { release(); }
    Window(Window&& o) noexcept : host_(o.host_), mapping_(o.mapping_) {
      o.host_ = nullptr;
      o.mapping_ = nullptr;
    }
    Window& operator=(Window&& o) noexcept;
    Window(const Window&) = delete;
    Window& operator=(const Window&) = delete;

    explicit operator bool() const noexcept { return host_ != nullptr; }
    std::uint8_t* host() const noexcept { return host_; }  // the host address of the IOVA
    void release() noexcept;

   private:
    friend class Iommu;
    Window(std::uint8_t* host, Mapping* mapping) noexcept : host_(host), mapping_(mapping) {}
    std::uint8_t* host_ = nullptr;
    Mapping* mapping_ = nullptr;  // pinned while set
  };

  // Throws std::invalid_argument unless iova_base is page aligned and below iova_limit.
  explicit Iommu(std::uint64_t iova_base = kDefaultIovaBase, std::uint64_t iova_limit = kDefaultIovaLimit);
  ~Iommu();
  Iommu(const Iommu&) = delete;
  Iommu& operator=(const Iommu&) = delete;

  // As Device::map: std::invalid_argument for a null pointer, zero bytes or an access value outside
  // DmaAccess; std::runtime_error when no IOVA range of that size is free.
  std::uint64_t map(void* host, std::size_t bytes, DmaAccess access);
  // As Device::map_at: the mapping at an IOVA the host chose, which must keep host's offset in
  // its page and leave the guard page free. std::invalid_argument (naming the IOVA) for one
  // outside [iova_base, iova_limit) or overlapping a mapping or its guard page.
  std::uint64_t map_at(void* host, std::size_t bytes, DmaAccess access, std::uint64_t iova);
  // Removes the mapping map() returned `iova` for (exactly that IOVA, else std::invalid_argument),
  // after waiting for open windows on it.
  void unmap(std::uint64_t iova);

  // The device's access: `device_writes` true for a write into host memory (needs kDeviceWrites),
  // false for a read (needs kDeviceReads). A fault returns an empty window and counts in faults().
  Window translate(std::uint64_t iova, std::size_t bytes, bool device_writes) noexcept;
  // translate() into a window the caller keeps open across accesses: when `w` still pins a live
  // mapping that covers the access, it is pointed at it without a new pin; else it is closed and
  // translated afresh. Returns whether `w` is open. For a device model that streams TLP after TLP
  // through one mapping: a pin per access is an atomic read-modify-write right after the access's
  // memcpy, which waits for the copy's stores. unmap() of that mapping waits until `w` closes, so
  // the caller must close it before anything it waits for can wait for unmap().
  bool retarget(Window& w, std::uint64_t iova, std::size_t bytes, bool device_writes) noexcept;

  std::size_t mappings_live() const;
  std::uint64_t faults() const noexcept { return faults_.load(std::memory_order_relaxed); }
  std::uint64_t iova_base() const noexcept { return base_; }
  std::uint64_t iova_limit() const noexcept { return limit_; }

 private:
  struct Mapping {
    std::uint64_t iova = 0;          // what map() returned
    std::uint64_t bytes = 0;         // the bytes the device may touch, from iova
    std::uint64_t reserved_end = 0;  // end of the pages plus the guard page
    std::uint8_t* host = nullptr;
    DmaAccess access = DmaAccess::kBoth;
    std::atomic<std::uint32_t> pins{0};
    std::atomic<bool> live{true};  // false once unmap() has begun
  };

  // The access [iova, iova + bytes) is nonempty, lies within m, and m allows its direction.
  static bool covers(const Mapping& m, std::uint64_t iova, std::size_t bytes, bool device_writes) noexcept;
  // Records a mapping whose pages start at `page` and reserve `need` bytes; under the lock.
  std::uint64_t insert(std::uint64_t page, std::uint64_t need, void* host, std::size_t bytes, DmaAccess access);

  mutable std::shared_mutex mutex_;
  std::map<std::uint64_t, std::unique_ptr<Mapping>> by_page_;  // keyed by the first page's IOVA
  std::uint64_t base_;
  std::uint64_t limit_;
  std::uint64_t cursor_;  // next-fit position
  std::atomic<std::uint64_t> faults_{0};
};

}  // namespace spyre_dma::device_core
