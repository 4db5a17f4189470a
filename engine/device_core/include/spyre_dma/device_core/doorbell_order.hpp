// Doorbell sequence numbers and the barrier rule built on them (docs/programming-model.md,
// section 7).
//
// The contract: the device gives every doorbell (CB_PI write) a global sequence number at the
// instant of the write, and the CBs that doorbell hands over carry it. A CB with BARRIER starts
// only after every CB with a lower sequence number, on every pipeline, has retired.
//
// Per pipeline we keep the doorbells as (pi_end, seq) records in index order. For a barrier CB at
// index i on pipeline P: its sequence number S is that of the first P record with pi_end > i; every
// other pipeline Q must have retired up to the pi_end of its last record with seq < S. Waits only
// ever point at strictly lower sequence numbers, so no cycle (deadlock) can form. How a backend
// waits (threads on RB_PI, SystemC processes on their retire events) is its own.
//
// Records stay bounded. Those of unretired CBs: at most one per CB, so never more than the ring
// depth plus the one CB a pipeline holds; a producer that overruns its ring (a queue fault the
// device reports) has its extra doorbells merged into the newest record instead of growing the
// list. Retired records: the newest kKeptRetired, so that a device whose pipelines run ahead of
// one another in time (the model's) still finds the CBs a late barrier must follow and asks when
// they retired; older ones can no longer be a barrier's target.
//
// Thread safety: every member may be called from any thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "spyre_dma/hw/contract.hpp"

namespace spyre_dma::device_core {

// Free-running 32-bit ring indices: true when `a` has reached `b`.
inline bool index_reached(std::uint32_t a, std::uint32_t b) noexcept {
  return static_cast<std::int32_t>(a - b) >= 0;
}

class DoorbellOrder {
 public:
  using Targets = std::array<std::optional<std::uint32_t>, hw::kNumPipelines>;
  static constexpr std::size_t kKeptRetired = 4096;

  explicit DoorbellOrder(const std::array<std::uint32_t, hw::kNumPipelines>& depth);

  // Records a doorbell moving pipeline p's producer index to new_pi and publishes it by storing
  // `cb_pi` (a register cell: load() and store()) under the same lock, so that numbering and
  // publication are one instant. `retired` is the pipeline's retired count (RB_PI).
  template <class Word>
  void ring(hw::Pipeline p, std::uint32_t new_pi, std::uint32_t retired, Word& cb_pi) {
    std::lock_guard<std::mutex> lock(mutex_);
    note(p, static_cast<std::uint32_t>(cb_pi.load()), new_pi, retired);
    cb_pi.store(new_pi);
  }

  // For the barrier CB at `index` on `p`: per other pipeline, the retired count it must reach
  // before that CB may start (nullopt: nothing to wait for).
  Targets barrier_targets(hw::Pipeline p, std::uint32_t index) const;

  // Forgets every record (device reset; the indices restart from zero).
  void clear();

 private:
  struct Record {
    std::uint32_t pi_end;  // CBs below this index were handed over by this doorbell or earlier
    std::uint64_t seq;
  };
  // One pipeline's records, oldest first, in a ring allocated once at its bound (the doorbell is
  // the submission hot path: no allocation there).
  class Records {
   public:
    explicit Records(std::size_t bound) : slots_(power_of_two_at_least(bound)), mask_(slots_.size() - 1) {}
    std::size_t size() const noexcept { return size_; }
    const Record& operator[](std::size_t i) const noexcept { return slots_[(head_ + i) & mask_]; }
    Record& back() noexcept { return slots_[(head_ + size_ - 1) & mask_]; }
    void push_back(const Record& r) noexcept { slots_[(head_ + size_++) & mask_] = r; }
    void pop_front() noexcept { head_ = (head_ + 1) & mask_, --size_; }
    void clear() noexcept { head_ = size_ = 0; }
    // The first position whose record fails `pred` (records are partitioned by it).
    template <class Pred>
    std::size_t partition_point(Pred pred) const {
      std::size_t lo = 0, hi = size_;
      while (lo < hi) {
        const std::size_t mid = lo + (hi - lo) / 2;
        if (pred((*this)[mid])) lo = mid + 1;
        else hi = mid;
      }
      return lo;
    }

   private:
    static std::size_t power_of_two_at_least(std::size_t n) {
      std::size_t p = 1;
      while (p < n) p <<= 1;
      return p;
    }
    std::vector<Record> slots_;
    std::size_t mask_;
    std::size_t head_ = 0, size_ = 0;
  };
  void note(hw::Pipeline p, std::uint32_t old_pi, std::uint32_t new_pi, std::uint32_t retired);
  std::size_t bound(hw::Pipeline p) const noexcept {  // records kept at most (see the file comment)
    return std::size_t{depth_[static_cast<unsigned>(p)]} + 2 + kKeptRetired;
  }

  const std::array<std::uint32_t, hw::kNumPipelines> depth_;
  mutable std::mutex mutex_;
  std::uint64_t seq_ = 0;
  std::vector<Records> records_;
};

}  // namespace spyre_dma::device_core
