// Ring rules (see rings.hpp).
#include "spyre_dma/device_core/rings.hpp"

#include <cstring>

namespace spyre_dma::device_core {

std::optional<Reg> fetch_fault(const RingState& s, std::uint32_t depth) noexcept {
  if (!valid_ring_size(s.cb_size, depth)) return Reg::kCbRingSize;
  if (!hw::ring_base_aligned(s.cb_base)) return Reg::kCbRingBase;
  if (std::optional<Reg> rb = rb_ring_fault(s.rb_base, s.rb_size, depth)) return rb;
  if (s.cb_pi - s.cb_ci > s.cb_size) return Reg::kCbPi;  // overrun: the producer wrote too far
  return std::nullopt;
}

std::optional<Reg> rb_ring_fault(std::uint64_t rb_base, std::uint64_t rb_size, std::uint32_t depth) noexcept {
  if (!valid_ring_size(rb_size, depth)) return Reg::kRbRingSize;
  if (!hw::ring_base_aligned(rb_base)) return Reg::kRbRingBase;
  return std::nullopt;
}

hw::RbBytes rb_at_index(hw::ResponseBlock rb, std::uint32_t index, std::uint64_t size) noexcept {
  rb.phase = hw::expected_phase(index, static_cast<std::uint32_t>(size));
  return hw::encode(rb);
}

void publish_rb(std::uint8_t* slot, const hw::RbBytes& rb) noexcept {
  std::memcpy(slot + 8, rb.data() + 8, hw::kRbBytes - 8);
  std::uint64_t word0 = 0;
  std::memcpy(&word0, rb.data(), sizeof word0);  // host byte order of the little-endian bytes
  __atomic_store_n(reinterpret_cast<std::uint64_t*>(slot), word0, __ATOMIC_RELEASE);
}

}  // namespace spyre_dma::device_core
