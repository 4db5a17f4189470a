// The shared host pool (spyre_dma/host_pool.hpp): the file's layout, the slot state word, and the
// writer's and readers' rules around it.
#include "spyre_dma/host_pool.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "spyre_dma/engine.hpp"
#include "spyre_dma/status.hpp"

namespace spyre_dma {
namespace detail {
namespace {

constexpr std::size_t kPage = 4096;
constexpr std::uint64_t kMagic = 0x314c4f4f50455053ull;  // "SPEPOOL1", little-endian
constexpr std::size_t kMaxSlots = std::size_t{1} << 24;
constexpr std::size_t kMaxSlotBytes = std::size_t{1} << 34;

// The first page of the file. `magic` is written last (release) by the creator: a pool whose
// magic is not there yet is not open-able.
struct FileHeader {
  std::atomic<std::uint64_t> magic;
  std::uint64_t slots;
  std::uint64_t slot_bytes;
};

// One per slot, after the first page. `state`: the owner's pid in the high 32 bits and the
// sequence in the low 32; odd while a writer fills the slot, even once done (published when
// `bytes` is nonzero; 0 is the empty slot of a new pool).
struct SlotHeader {
  std::atomic<std::uint64_t> state;
  std::atomic<std::uint64_t> key;
  std::atomic<std::uint64_t> bytes;
  std::uint64_t reserved;
};

constexpr std::uint64_t make_state(std::uint32_t pid, std::uint32_t seq) {
  return (std::uint64_t{pid} << 32) | seq;
}
constexpr std::uint32_t seq_of(std::uint64_t s) { return static_cast<std::uint32_t>(s); }
constexpr std::uint32_t pid_of(std::uint64_t s) { return static_cast<std::uint32_t>(s >> 32); }

bool alive(std::uint32_t pid) { return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM; }

std::string shm_name(const std::string& name) {
  if (name.empty() || name.size() > 200 || name.find('/', 1) != std::string::npos || name == "/") {
    throw InvalidArgument("shared host pool name \"" + name + "\": expected a name without '/' (a leading one allowed)");
  }
  return name[0] == '/' ? name : "/" + name;
}

std::size_t headers_bytes(std::size_t slots) {
  return (slots * sizeof(SlotHeader) + kPage - 1) / kPage * kPage;
}

}  // namespace

struct HostPoolState {
  void* base = nullptr;
  std::size_t file_bytes = 0;
  std::size_t slots = 0, slot_bytes = 0;
  ~HostPoolState() {
    if (base) ::munmap(base, file_bytes);
  }

  SlotHeader& slot(std::size_t i) const {
    return reinterpret_cast<SlotHeader*>(static_cast<std::uint8_t*>(base) + kPage)[i];
  }
  std::uint8_t* data(std::size_t i) const {
    return static_cast<std::uint8_t*>(base) + kPage + headers_bytes(slots) + i * slot_bytes;
  }
  // The state word if `key` is published in slot i (its length in `bytes`), else nothing.
  std::optional<std::uint64_t> published(std::size_t i, std::uint64_t key, std::uint64_t& bytes) const {
    const SlotHeader& h = slot(i);
    const std::uint64_t s = h.state.load(std::memory_order_acquire);
    if ((seq_of(s) & 1) != 0) return std::nullopt;  // being written, or its writer died
    bytes = h.bytes.load(std::memory_order_relaxed);
    if (bytes == 0 || h.key.load(std::memory_order_relaxed) != key) return std::nullopt;
    return s;
  }
  // The writer's end of a slot it holds (`held`): published with key and bytes, or (bytes 0)
  // given back empty. Nothing if the slot is no longer the one it held.
  void finish(std::size_t i, std::uint64_t held, std::uint64_t key, std::uint64_t bytes) const {
    SlotHeader& h = slot(i);
    if (h.state.load(std::memory_order_relaxed) != held) return;
    h.key.store(key, std::memory_order_relaxed);
    h.bytes.store(bytes, std::memory_order_relaxed);
    std::uint64_t expected = held;
    h.state.compare_exchange_strong(expected, make_state(pid_of(held), seq_of(held) + 1), std::memory_order_release,
                                    std::memory_order_relaxed);
  }
};

}  // namespace detail

namespace {

// Maps the pool's file (and closes `fd`: the mapping keeps the memory).
std::shared_ptr<detail::HostPoolState> map_pool(int fd, std::size_t file_bytes, const std::string& name) {
  void* p = ::mmap(nullptr, file_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int err = errno;
  ::close(fd);
  if (p == MAP_FAILED) {
    throw InvalidArgument("shared host pool " + name + ": cannot map " + std::to_string(file_bytes) +
                          " bytes: " + std::strerror(err));
  }
  auto s = std::make_shared<detail::HostPoolState>();
  s->base = p;
  s->file_bytes = file_bytes;
  return s;
}

}  // namespace

SharedHostPool SharedHostPool::create(const std::string& name, Options o) {
  const std::string n = detail::shm_name(name);
  if (o.slots == 0 || o.slots > detail::kMaxSlots) {
    throw InvalidArgument("shared host pool " + n + ": slots = " + std::to_string(o.slots) + ", expected 1.." +
                          std::to_string(detail::kMaxSlots));
  }
  if (o.slot_bytes == 0 || o.slot_bytes > detail::kMaxSlotBytes) {
    throw InvalidArgument("shared host pool " + n + ": slot_bytes = " + std::to_string(o.slot_bytes) +
                          ", expected 1.." + std::to_string(detail::kMaxSlotBytes));
  }
  const std::size_t slot_bytes = (o.slot_bytes + detail::kPage - 1) / detail::kPage * detail::kPage;
  const std::size_t file_bytes = detail::kPage + detail::headers_bytes(o.slots) + o.slots * slot_bytes;
  const int fd = ::shm_open(n.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    throw InvalidArgument("shared host pool " + n + ": cannot create it: " + std::strerror(errno) +
                          (errno == EEXIST ? " (SharedHostPool::remove() it first)" : ""));
  }
  if (::ftruncate(fd, static_cast<off_t>(file_bytes)) != 0) {
    const int err = errno;
    ::close(fd);
    ::shm_unlink(n.c_str());
    throw InvalidArgument("shared host pool " + n + ": cannot size it to " + std::to_string(file_bytes) +
                          " bytes: " + std::strerror(err));
  }
  std::shared_ptr<detail::HostPoolState> s;
  try {
    s = map_pool(fd, file_bytes, n);
  } catch (...) {
    ::shm_unlink(n.c_str());
    throw;
  }
  s->slots = o.slots;
  s->slot_bytes = slot_bytes;
  auto* h = static_cast<detail::FileHeader*>(s->base);
  h->slots = o.slots;
  h->slot_bytes = slot_bytes;
  h->magic.store(detail::kMagic, std::memory_order_release);
  return SharedHostPool(std::move(s));
}

SharedHostPool SharedHostPool::open(const std::string& name) {
  const std::string n = detail::shm_name(name);
  const int fd = ::shm_open(n.c_str(), O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) throw InvalidArgument("shared host pool " + n + ": cannot open it: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(detail::kPage)) {
    ::close(fd);
    throw InvalidArgument("shared host pool " + n + ": not a pool (" + std::to_string(st.st_size) + " bytes)");
  }
  auto s = map_pool(fd, static_cast<std::size_t>(st.st_size), n);
  const auto* h = static_cast<const detail::FileHeader*>(s->base);
  if (h->magic.load(std::memory_order_acquire) != detail::kMagic) {
    throw InvalidArgument("shared host pool " + n + ": not a pool, or not yet created (no header)");
  }
  const std::size_t need = h->slots == 0 || h->slots > detail::kMaxSlots || h->slot_bytes == 0 ||
                                   h->slot_bytes > detail::kMaxSlotBytes
                               ? 0
                               : detail::kPage + detail::headers_bytes(h->slots) + h->slots * h->slot_bytes;
  if (need == 0 || need > s->file_bytes) {
    throw InvalidArgument("shared host pool " + n + ": header says " + std::to_string(h->slots) + " slots of " +
                          std::to_string(h->slot_bytes) + " bytes, the file has " + std::to_string(s->file_bytes));
  }
  s->slots = h->slots;
  s->slot_bytes = h->slot_bytes;
  return SharedHostPool(std::move(s));
}

void SharedHostPool::remove(const std::string& name) { ::shm_unlink(detail::shm_name(name).c_str()); }

std::size_t SharedHostPool::slots() const noexcept { return state_ ? state_->slots : 0; }
std::size_t SharedHostPool::slot_bytes() const noexcept { return state_ ? state_->slot_bytes : 0; }

HostBuffer SharedHostPool::register_with(Engine& engine) {
  try {
    return engine.register_host(state_->data(0), state_->slots * state_->slot_bytes);
  } catch (const InvalidArgument&) {
    return HostBuffer();  // a device that cannot map it (in another process): copies are staged
  }
}

SharedHostPool::Offload SharedHostPool::offload(Stream& stream, std::uint64_t key, const DeviceBuffer& src,
                                                std::uint64_t src_offset, std::uint64_t bytes) {
  if (bytes == 0 || bytes > state_->slot_bytes) {
    throw InvalidArgument("SharedHostPool::offload: " + std::to_string(bytes) + " bytes, a slot holds 1.." +
                          std::to_string(state_->slot_bytes));
  }
  const std::size_t i = slot_of(key);
  detail::SlotHeader& h = state_->slot(i);
  std::uint64_t held = 0;
  for (std::uint64_t s = h.state.load(std::memory_order_acquire);;) {
    std::uint32_t seq = detail::seq_of(s);
    if ((seq & 1) != 0) {
      if (detail::alive(detail::pid_of(s))) return Offload{};  // a live writer holds it
      seq += 2;  // its writer died mid-fill: taken over, still odd
    } else {
      seq += 1;
    }
    held = detail::make_state(static_cast<std::uint32_t>(::getpid()), seq);  // not cached: a fork has its own
    if (h.state.compare_exchange_weak(s, held, std::memory_order_acq_rel, std::memory_order_acquire)) break;
  }
  Offload out;
  out.offer = Offer::kStarted;
  auto pool = state_;
  try {
    const Op copy = stream.copy_d2h(state_->data(i), src, src_offset, bytes);
    // Published by a host step after the copy, so that the op handed back completes after the
    // publication; its completion callback gives the slot back empty when the step did not run
    // (the copy failed on a propagating stream, a reset cancelled it).
    out.op = stream.host_callback(
        [pool, i, held, key, bytes, copy] { pool->finish(i, held, key, copy.status().ok() ? bytes : 0); },
        [pool, i, held](const Status& s) {
          if (!s.ok()) pool->finish(i, held, 0, 0);
        });
  } catch (...) {
    state_->finish(i, held, 0, 0);
    throw;
  }
  return out;
}

std::optional<std::size_t> SharedHostPool::read(std::uint64_t key, void* dst, std::size_t capacity) const {
  const std::size_t i = slot_of(key);
  std::uint64_t bytes = 0;
  const std::optional<std::uint64_t> before = state_->published(i, key, bytes);
  if (!before || bytes > capacity) return std::nullopt;
  std::memcpy(dst, state_->data(i), bytes);
  // Nothing the copy read may be ordered after the second look at the state word.
  std::atomic_thread_fence(std::memory_order_acquire);
  if (state_->slot(i).state.load(std::memory_order_relaxed) != *before) return std::nullopt;
  return static_cast<std::size_t>(bytes);
}

std::optional<SharedHostPool::Fetch> SharedHostPool::fetch(Stream& stream, std::uint64_t key, const DeviceBuffer& dst,
                                                           std::uint64_t dst_offset) {
  const std::size_t i = slot_of(key);
  std::uint64_t bytes = 0;
  const std::optional<std::uint64_t> before = state_->published(i, key, bytes);
  if (!before) return std::nullopt;
  Fetch f;
  f.op = stream.copy_h2d(dst, dst_offset, state_->data(i), bytes);
  f.bytes = static_cast<std::size_t>(bytes);
  f.pool_ = state_;
  f.slot_ = i;
  f.state_ = *before;
  return f;
}

bool SharedHostPool::Fetch::valid() const {
  if (!pool_ || !op.done() || !op.status().ok()) return false;
  std::atomic_thread_fence(std::memory_order_acquire);
  return pool_->slot(slot_).state.load(std::memory_order_relaxed) == state_;
}

std::size_t SharedHostPool::published() const {
  std::size_t n = 0;
  for (std::size_t i = 0; i < state_->slots; ++i) {
    const std::uint64_t s = state_->slot(i).state.load(std::memory_order_acquire);
    n += (detail::seq_of(s) & 1) == 0 && state_->slot(i).bytes.load(std::memory_order_relaxed) != 0;
  }
  return n;
}

}  // namespace spyre_dma
