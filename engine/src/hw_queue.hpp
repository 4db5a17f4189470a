// One hardware pipeline as the engine drives it: the CB ring it produces into, the RB ring it
// consumes from, and the indices and capacity that go with them (see docs/programming-model.md).
// Not thread-safe: the engine calls it under its own lock.
#pragma once

#include <cstdint>
#include <optional>

#include "spyre_dma/device.hpp"
#include "spyre_dma/hw/contract.hpp"

namespace spyre_dma::detail {

class HwQueue {
 public:
  HwQueue(Device& device, hw::Pipeline pipe, std::uint32_t slots);
  ~HwQueue();
  HwQueue(const HwQueue&) = delete;
  HwQueue& operator=(const HwQueue&) = delete;

  // Programs ring bases and sizes, zeroes indices and enables the queue (after a device reset).
  void program();

  hw::Pipeline pipeline() const noexcept { return pipe_; }
  std::uint32_t slots() const noexcept { return slots_; }
  // CBs the device holds (written, no RB consumed yet) plus slots promised to staged CBs whose
  // host copy is still running. Never exceeds slots(): a full queue is never overrun.
  std::uint32_t occupied() const noexcept { return outstanding_ + reserved_; }
  bool has_space() const noexcept { return occupied() < slots_; }
  void reserve() noexcept { ++reserved_; }
  void unreserve() noexcept { --reserved_; }

  // Encodes the CB into the next ring slot; returns its ring index. The device sees it at the next
  // doorbell. A reserved slot is consumed when `from_reservation`.
  template <class Cb>  // hw::DmaCb or hw::ControlBlock
  std::uint32_t push(const Cb& cb, bool from_reservation) noexcept {
    const std::uint32_t index = pi_;
    hw::encode(cb, slot(index));
    advance(from_reservation);
    return index;
  }
  // Publishes every pushed CB (the CB_PI write). Returns false when there was nothing new.
  bool doorbell();

  // The next RB if the device has written one (phase bit says so); the slot stays owned by the
  // engine until pop_rb().
  const std::uint8_t* peek_rb() const noexcept;
  // Where the next RB will land and the phase it will carry: a thread may watch it without the
  // engine lock (the slot stays mapped while the engine lives; a stale watch only costs a look).
  struct RbWatch {
    const std::uint8_t* slot = nullptr;
    bool phase = false;
    bool landed() const noexcept;
  };
  RbWatch rb_watch() const noexcept;
  static void cpu_relax() noexcept;
  // Consumes the RB peeked at; `retired` says whether it retired a CB (a stray RB does not).
  void pop_rb(bool retired) noexcept;
  // Returns consumed RB slots to the device (the RB_CI write).
  void publish_rb_ci();
  // Forgets the `n` CBs the device will never answer (a reset).
  void drop_outstanding() noexcept;

  std::uint32_t producer_index() const noexcept { return pi_; }
  // The last CB_PI written (what the device may have fetched up to) and the RBs consumed so far
  // (free-running, as the device counts RB_PI): the bounds of a sane device's CB_CI and RB_PI.
  std::uint32_t published_producer_index() const noexcept { return published_pi_; }
  std::uint32_t rb_consumer_index() const noexcept { return rb_ci_; }

 private:
  std::uint8_t* slot(std::uint32_t index) const noexcept {
    return cb_ring_ + std::size_t(index & (slots_ - 1)) * hw::kCbBytes;
  }
  void advance(bool from_reservation) noexcept;  // after a CB is written at pi_
  static constexpr std::uint32_t kPrefetchSlots = 4;  // how far ahead advance() fetches (see there)

  Device& device_;
  hw::Pipeline pipe_;
  std::uint32_t slots_;
  std::uint8_t* cb_ring_ = nullptr;
  std::uint8_t* rb_ring_ = nullptr;
  std::uint64_t cb_iova_ = 0;
  std::uint64_t rb_iova_ = 0;
  std::uint32_t pi_ = 0;            // next CB index
  std::uint32_t published_pi_ = 0;  // last value written to CB_PI
  std::uint32_t rb_ci_ = 0;         // next RB index
  std::uint32_t published_rb_ci_ = 0;
  std::uint32_t outstanding_ = 0;
  std::uint32_t reserved_ = 0;
};

}  // namespace spyre_dma::detail
