// Doorbell sequence numbers and the barrier rule built on them.
//
// The contract: the device gives every doorbell (CB_PI write) a global sequence number at the
// instant of the write, and the CBs that doorbell hands over carry it. A CB with BARRIER starts only
// after every CB with a lower sequence number, on every pipeline, has retired.
//
// Per pipeline we keep the doorbells whose CBs may not all have retired yet, as (pi_end, seq)
// records in index order. For a barrier CB at index i on pipeline P: its sequence number S is that
// of the first P record with pi_end > i; every other pipeline Q must have retired up to the pi_end
// of its last record with seq < S. Waits only ever point at strictly lower sequence numbers, so no
// cycle (deadlock) can form.
//
// Records stay bounded: at most one per unretired CB, so never more than the ring depth plus the
// one CB the worker holds; a producer
// that overruns its ring (a queue fault the worker reports) has its extra doorbells merged into
// the newest record instead of growing the list.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>

#include "spyre_dma/hw/contract.hpp"

namespace spyre_dma::refdev::detail {

class DoorbellOrder {
 public:
  using Targets = std::array<std::optional<std::uint32_t>, hw::kNumPipelines>;

  explicit DoorbellOrder(const std::array<std::uint32_t, hw::kNumPipelines>& depth) : depth_(depth) {}

  // Records a doorbell moving pipeline p's producer index to new_pi and publishes it by storing
  // `cb_pi` under the same lock, so that numbering and publication are one instant. `retired` is
  // the pipeline's retired count, used to drop records that no barrier can need any more.
  void ring(hw::Pipeline p, std::uint32_t new_pi, std::atomic<std::uint32_t>& cb_pi,
            std::uint32_t retired);

  // For the barrier CB at `index` on `p`: per other pipeline, the retired count it must reach
  // before that CB may start (nullopt: nothing to wait for).
  Targets barrier_targets(hw::Pipeline p, std::uint32_t index) const;

  // Forgets every record (device reset; the indices restart from zero).
  void clear();

 private:
  struct Record {
    std::uint32_t pi_end;
    std::uint64_t seq;
  };
  const std::array<std::uint32_t, hw::kNumPipelines> depth_;
  mutable std::mutex mutex_;
  std::uint64_t seq_ = 0;
  std::array<std::deque<Record>, hw::kNumPipelines> records_;
};

// Free-running 32-bit ring indices: true when `a` has reached `b`.
inline bool index_reached(std::uint32_t a, std::uint32_t b) noexcept {
  return static_cast<std::int32_t>(a - b) >= 0;
}

}  // namespace spyre_dma::refdev::detail
