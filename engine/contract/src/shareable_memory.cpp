// Shareable host memory (see shareable_memory.hpp): one memfd per allocation, kept in a table by
// address so that a device in another process can be handed the file behind any range.
#include "spyre_dma/shareable_memory.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <mutex>
#include <new>

namespace spyre_dma {
namespace {

constexpr std::size_t kPage = 4096;

struct Allocation {
  std::size_t bytes = 0;  // mapped, a whole number of pages
  int fd = -1;            // -1: private anonymous memory (not shareable)
};

struct Table {
  std::mutex mu;
  std::map<std::uintptr_t, Allocation> by_address;
};

Table& table() {
  static Table* const t = new Table;  // deliberately leaked: buffers freed by static destructors find it
  return *t;
}

}  // namespace

void* allocate_shareable(std::size_t bytes) {
  if (bytes == 0) throw std::bad_alloc();
  const std::size_t rounded = (bytes + kPage - 1) / kPage * kPage;
  if (rounded < bytes) throw std::bad_alloc();
  Allocation a;
  a.bytes = rounded;
  void* p = MAP_FAILED;
  a.fd = static_cast<int>(::memfd_create("spyre-dma-host", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (a.fd >= 0) {
    // Sealed at its size: a process it is shared with can rely on every byte staying there.
    if (::ftruncate(a.fd, static_cast<off_t>(rounded)) == 0 &&
        ::fcntl(a.fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0) {
      p = ::mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_SHARED, a.fd, 0);
    }
    if (p == MAP_FAILED) {
      ::close(a.fd);
      a.fd = -1;
    }
  }
  if (p == MAP_FAILED) p = ::mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  Table& t = table();
  try {
    std::lock_guard<std::mutex> lock(t.mu);
    t.by_address.emplace(reinterpret_cast<std::uintptr_t>(p), a);
  } catch (...) {
    ::munmap(p, rounded);
    if (a.fd >= 0) ::close(a.fd);
    throw std::bad_alloc();
  }
  return p;
}

void free_shareable(void* p) noexcept {
  if (!p) return;
  Allocation a;
  {
    Table& t = table();
    std::lock_guard<std::mutex> lock(t.mu);
    const auto it = t.by_address.find(reinterpret_cast<std::uintptr_t>(p));
    if (it == t.by_address.end()) return;  // not ours: nothing to free
    a = it->second;
    t.by_address.erase(it);
  }
  ::munmap(p, a.bytes);
  if (a.fd >= 0) ::close(a.fd);
}

std::optional<ShareableRange> find_shareable(const void* p, std::size_t bytes) {
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.by_address.upper_bound(at);
  if (it == t.by_address.begin()) return std::nullopt;
  --it;
  const std::uintptr_t offset = at - it->first;
  if (it->second.fd < 0 || offset > it->second.bytes || bytes > it->second.bytes - offset) return std::nullopt;
  return ShareableRange{it->second.fd, offset};
}

}  // namespace spyre_dma
