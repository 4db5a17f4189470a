#include "hw_queue.hpp"
#include "spyre_dma/shareable_memory.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

namespace spyre_dma::detail {
namespace {
// Zero-filled, and shareable with a device in another process (vfio-user).
std::uint8_t* alloc_ring(std::size_t bytes) { return static_cast<std::uint8_t*>(allocate_shareable(bytes)); }
}  // namespace

HwQueue::HwQueue(Device& device, hw::Pipeline pipe, std::uint32_t slots)
    : device_(device), pipe_(pipe), slots_(slots) {
  cb_ring_ = alloc_ring(std::size_t(slots) * hw::kCbBytes);
  rb_ring_ = alloc_ring(std::size_t(slots) * hw::kRbBytes);
  try {
    cb_iova_ = device_.map(cb_ring_, std::size_t(slots) * hw::kCbBytes, DmaAccess::kDeviceReads);
    rb_iova_ = device_.map(rb_ring_, std::size_t(slots) * hw::kRbBytes, DmaAccess::kBoth);
  } catch (...) {
    if (cb_iova_) device_.unmap(cb_iova_);
    free_shareable(cb_ring_);
    free_shareable(rb_ring_);
    throw;
  }
}

HwQueue::~HwQueue() {
  try {
    device_.write32(hw::reg::pipe(pipe_, hw::reg::kQueueControl), 0);
    device_.unmap(cb_iova_);
    device_.unmap(rb_iova_);
  } catch (...) {
  }
  free_shareable(cb_ring_);
  free_shareable(rb_ring_);
}

void HwQueue::program() {
  using namespace hw::reg;
  std::memset(rb_ring_, 0, std::size_t(slots_) * hw::kRbBytes);
  pi_ = published_pi_ = rb_ci_ = published_rb_ci_ = 0;
  outstanding_ = reserved_ = 0;
  device_.write32(pipe(pipe_, kQueueControl), 0);
  device_.write64(pipe(pipe_, kCbRingBase_64), cb_iova_);
  device_.write32(pipe(pipe_, kCbRingSize), slots_);
  device_.write64(pipe(pipe_, kRbRingBase_64), rb_iova_);
  device_.write32(pipe(pipe_, kRbRingSize), slots_);
  device_.write32(pipe(pipe_, kCbPi), 0);
  device_.write32(pipe(pipe_, kRbCi), 0);
  device_.write32(pipe(pipe_, kIrqVector), static_cast<std::uint32_t>(pipe_));
  device_.write32(pipe(pipe_, kIrqEnable), 1);
  device_.write32(pipe(pipe_, kQueueControl), hw::kQueueEnable);
}

void HwQueue::advance(bool from_reservation) noexcept {
  ++pi_;
  if (from_reservation) --reserved_;
  ++outstanding_;
  // A slot a few CBs ahead is fetched for writing now. A ring larger than the cache is cold where
  // the producer writes, and the locked instructions of a submission (the engine lock, the handles'
  // counts) wait for pending stores: without this every CB's cache misses would be paid in turn.
  // One slot ahead is not far enough: a single-CB submission takes about 100 ns, less than a miss
  // to memory here, so the fetch of the very next slot has not landed when that CB is written
  // (`cb_submission`, 4 ahead against 1: 14% less per CB of a 64-CB op; per single-CB op 4-5% in
  // one set of alternated runs, within the noise in another; 8 ahead no better than 4). On a ring
  // of 4 slots or fewer this fetches the slot in use: harmless.
  const std::uint8_t* next = slot(pi_ + kPrefetchSlots);
  __builtin_prefetch(next, 1);
  __builtin_prefetch(next + 64, 1);
}

bool HwQueue::doorbell() {
  if (published_pi_ == pi_) return false;
  // The release fence orders the ring writes before the doorbell for a device that reads host
  // memory from another thread; a real device gets the same from the MMIO write's ordering.
  std::atomic_thread_fence(std::memory_order_release);
  device_.write32(hw::reg::pipe(pipe_, hw::reg::kCbPi), pi_);
  published_pi_ = pi_;
  return true;
}

namespace {
// The phase bit of the RB in `slot`. The device writes word 0 (tag, status, phase) last, as one
// release store; load it whole, with acquire, so the rest of the RB (read after this) is ordered
// after it. (A load of only the phase byte would be a mixed-size atomic pair, which
// ThreadSanitizer cannot see synchronise.)
bool rb_phase(const std::uint8_t* slot) noexcept {
  std::uint64_t word0 = __atomic_load_n(reinterpret_cast<const std::uint64_t*>(slot), __ATOMIC_ACQUIRE);
  std::uint8_t le[8];
  std::memcpy(le, &word0, sizeof word0);  // host byte order back to the little-endian bytes
  return (le[4] & 1u) != 0;
}
}  // namespace

const std::uint8_t* HwQueue::peek_rb() const noexcept {
  const std::uint8_t* slot = rb_ring_ + std::size_t(rb_ci_ & (slots_ - 1)) * hw::kRbBytes;
  return rb_phase(slot) == hw::expected_phase(rb_ci_, slots_) ? slot : nullptr;
}

HwQueue::RbWatch HwQueue::rb_watch() const noexcept {
  return {rb_ring_ + std::size_t(rb_ci_ & (slots_ - 1)) * hw::kRbBytes, hw::expected_phase(rb_ci_, slots_)};
}

bool HwQueue::RbWatch::landed() const noexcept { return rb_phase(slot) == phase; }

void HwQueue::cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::atomic_signal_fence(std::memory_order_seq_cst);
#endif
}

void HwQueue::pop_rb(bool retired) noexcept {
  ++rb_ci_;
  if (retired && outstanding_ > 0) --outstanding_;
}

void HwQueue::publish_rb_ci() {
  if (published_rb_ci_ == rb_ci_) return;
  device_.write32(hw::reg::pipe(pipe_, hw::reg::kRbCi), rb_ci_);
  published_rb_ci_ = rb_ci_;
}

void HwQueue::drop_outstanding() noexcept { outstanding_ = 0; }

}  // namespace spyre_dma::detail
