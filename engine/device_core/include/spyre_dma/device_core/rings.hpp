// The ring rules a device applies (docs/programming-model.md, sections 11 and 13.4): when a
// pipeline's rings can be used, where its slots are, and how an RB is made visible.
//
// A ring the device cannot use is a queue fault, found when the device is about to use it: before
// a fetch (consuming nothing) or before an RB write (holding the RB until the fault is cleared). The
// register at fault is reported so that a backend can show it (refdev's queue_fault_register).
#pragma once

#include <cstdint>
#include <optional>

#include "spyre_dma/device_core/register_file.hpp"
#include "spyre_dma/hw/contract.hpp"

namespace spyre_dma::device_core {

// A ring size the device accepts: a power of two no larger than the pipeline's depth.
inline bool valid_ring_size(std::uint64_t size, std::uint32_t depth) noexcept {
  return hw::is_power_of_two(size) && size <= depth;
}

// What a pipeline's ring registers hold.
struct RingState {
  std::uint64_t cb_base = 0;
  std::uint64_t cb_size = 0;
  std::uint32_t cb_pi = 0;
  std::uint32_t cb_ci = 0;
  std::uint64_t rb_base = 0;
  std::uint64_t rb_size = 0;
};

template <class Word>
RingState ring_state(const RegisterFile<Word>& regs, hw::Pipeline p) noexcept {
  RingState s;
  s.cb_base = regs.get(Reg::kCbRingBase, p);
  s.cb_size = regs.get(Reg::kCbRingSize, p);
  s.cb_pi = static_cast<std::uint32_t>(regs.get(Reg::kCbPi, p));
  s.cb_ci = static_cast<std::uint32_t>(regs.get(Reg::kCbCi, p));
  s.rb_base = regs.get(Reg::kRbRingBase, p);
  s.rb_size = regs.get(Reg::kRbRingSize, p);
  return s;
}

// How far a pipeline may fetch: CB_PI, or nullopt while the device (CONTROL) or the queue
// (QUEUE_CONTROL) is disabled or the queue holds a fault (ERROR_STATUS). CB_PI is read before the
// enables, and a fetch goes no further than that reading: a queue disabled before a doorbell then
// never fetches that doorbell's CBs, even on a device whose pipelines run on threads of their own.
// (Read the other way round, the enables can be seen before the disable and CB_PI after the
// doorbell that followed it.) A backend adds its own conditions (reset, fatal, test controls).
template <class Word>
std::optional<std::uint32_t> fetch_limit(const RegisterFile<Word>& regs, hw::Pipeline p) noexcept {
  const auto cb_pi = static_cast<std::uint32_t>(regs.get(Reg::kCbPi, p));
  if ((regs.get(Reg::kControl) & hw::kControlEnable) == 0) return std::nullopt;
  if ((regs.get(Reg::kQueueControl, p) & hw::kQueueEnable) == 0) return std::nullopt;
  if (regs.get(Reg::kErrorStatus, p) != 0) return std::nullopt;
  return cb_pi;
}

// Before a fetch: the first register that makes the rings unusable, in this order: CB ring size
// (not a power of two, or above the depth), CB ring base (not 4 KiB aligned), the same two of the
// RB ring, then CB_PI (an overrun: more CBs than the ring holds). nullopt: fetch.
std::optional<Reg> fetch_fault(const RingState& s, std::uint32_t depth) noexcept;
// Before an RB write (the ring may have been moved since the CB was fetched).
std::optional<Reg> rb_ring_fault(std::uint64_t rb_base, std::uint64_t rb_size, std::uint32_t depth) noexcept;

// The IOVA of a slot. `size` is a valid ring size.
inline std::uint64_t cb_slot_iova(std::uint64_t base, std::uint32_t index, std::uint64_t size) noexcept {
  return base + (index & (size - 1)) * hw::kCbBytes;
}
inline std::uint64_t rb_slot_iova(std::uint64_t base, std::uint32_t index, std::uint64_t size) noexcept {
  return base + (index & (size - 1)) * hw::kRbBytes;
}
// Room for one more RB: the device never writes a slot while RB_PI - RB_CI == size.
inline bool rb_room(std::uint32_t rb_pi, std::uint32_t rb_ci, std::uint64_t size) noexcept {
  return !hw::ring_full(rb_pi, rb_ci, static_cast<std::uint32_t>(size));
}

// The RB written at ring index `index` of a ring of `size` slots: its phase set, encoded.
hw::RbBytes rb_at_index(hw::ResponseBlock rb, std::uint32_t index, std::uint64_t size) noexcept;

// Writes an RB into host memory so that a reader polling word 0 (tag, status, phase) with acquire
// semantics sees the whole block: words 1..7 first, then word 0 with a release store. `slot` is
// 8-byte aligned (ring bases are 4 KiB aligned and an IOVA keeps its host page offset).
void publish_rb(std::uint8_t* slot, const hw::RbBytes& rb) noexcept;

// The queue fault of a pipeline, as ERROR_STATUS holds it.
inline constexpr std::uint64_t kQueueFaultStatus = static_cast<std::uint64_t>(hw::ErrorKind::kQueueFault);

}  // namespace spyre_dma::device_core
