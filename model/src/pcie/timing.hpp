// Deterministic timing primitives for the SystemC model of the PCIe link. Times are picoseconds
// since the start of the simulation (Ps, unsigned 64-bit: about 213 days). Nothing here reads a
// clock or depends on call timing; the same calls in the same order give the same answers.
//
// The primitives accept requests out of time order: temporally decoupled initiators (TLM-2.0 LT
// with a quantum) ask for times ahead of, and behind, each other. Each keeps a bounded history and
// a floor: history before the floor is dropped (prune()), and nothing is granted before it.
//
// Misuse (double release, releasing what was never acquired, a release before its grant, a request
// that can never be met) throws std::logic_error; bad arguments throw std::invalid_argument, time
// overflow std::overflow_error. The objects are never left inconsistent by a throw.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <vector>

#include "pcie/link_math.hpp"
#include "pcie/ps.hpp"
#include "pcie/ring.hpp"
#include "pcie/usage_timeline.hpp"

namespace spyre_dma::model::pcie {

// ns (as LinkConfig and HostConfig hold them) to whole ps, rounded to nearest. Throws
// std::invalid_argument for a negative or non-finite value, std::overflow_error if too large.
Ps ns_to_ps(double ns);

// Serialization time of TLPs on one direction of a link, exact over a whole run: the k-th call
// returns ceil(B_k x rate) - ceil(B_{k-1} x rate) where B_k is the bytes of the first k calls, so
// durations never drift from the exact rate however many TLPs are charged (each one is within 1 ps
// of its exact share). Use tlp_ps_per_byte(p) to charge DLLP/SKP overhead as pcie-bench does.
class WireClock {
 public:
  explicit WireClock(PsPerByte rate);
  Ps duration_ps(std::uint64_t bytes);
  std::uint64_t total_bytes() const { return bytes_; }
  Ps total_ps() const { return ps_; }
  const PsPerByte& rate() const { return rate_; }

 private:
  PsPerByte rate_;
  std::uint64_t bytes_ = 0;
  Ps ps_ = 0;
};

// One direction of a link: a resource busy for the reserved intervals. reserve() returns the
// earliest start >= max(earliest, floor) at which `duration` fits in a free gap, and books
// [start, start + duration). A request that arrives late in call order but early in time fills the
// earliest gap that fits (first fit in time); it never moves earlier bookings.
//
// History is bounded: with more than max_intervals disjoint busy intervals, the oldest one is
// dropped and the floor rises to its end (the oldest gap is given up). prune(t) drops everything
// before t explicitly. Back-to-back bookings merge into one interval, so a saturated link keeps a
// short list. A zero duration books nothing and returns the first instant not inside a booking.
class Serializer {
 public:
  static constexpr std::size_t kDefaultMaxIntervals = 1024;
  explicit Serializer(std::size_t max_intervals = kDefaultMaxIntervals);  // >= 1

  Ps reserve(Ps earliest_ps, Ps duration_ps);
  // Books `duration_ps` of time from max(earliest, floor) on in as many free gaps as it takes,
  // earliest first, and returns when the last piece ends: a resource that serves several requests
  // interleaved in small units (host memory, in cache lines) rather than one whole request at a
  // time. No gap is left too short to use.
  Ps reserve_spread(Ps earliest_ps, Ps duration_ps);
  // Where reserve() would place it, without booking.
  Ps peek(Ps earliest_ps, Ps duration_ps) const;
  // Nothing may start before before_ps from now on; history before it is dropped. A value below
  // the current floor does nothing.
  void prune(Ps before_ps);

  Ps floor_ps() const { return floor_; }
  Ps busy_until_ps() const;  // end of the last booking, or the floor
  std::size_t interval_count() const { return busy_.size(); }
  Ps busy_ps() const { return busy_total_; }  // sum of all booked durations, pruned included
  std::uint64_t reservations() const { return reservations_; }

 private:
  struct Interval {
    Ps start;
    Ps end;
  };
  Ps find(Ps earliest_ps, Ps duration_ps, std::size_t* index) const;
  // Books [start, end) in front of busy_[i] (the gap it lies in), joining the bookings it
  // touches; returns the index of the booking that now covers it.
  std::size_t book(std::size_t i, Ps start, Ps end);
  void keep_history();  // drops the oldest bookings beyond max_intervals_, raising the floor

  Ring<Interval> busy_;  // sorted, disjoint, not touching, all end > floor_
  std::size_t max_intervals_;
  Ps floor_ = 0;
  Ps busy_total_ = 0;
  std::uint64_t reservations_ = 0;
};

// Flow-control credits of one receiver buffer (one of P/NP/Cpl): header credits (one per TLP) and
// data credits (16 B units, data_credits()). A capacity of 0 is infinite (PCIe's "infinite
// credits"); that kind is then not tracked.
//
// acquire() returns the earliest time t >= max(earliest, floor) from which the credits stay
// available forever after, given every booking so far: a grant holds its credits from its time
// until its release, and its release time is not known at acquire, so a grant cannot slot into a
// gap before a later booking. The caller then calls release(grant, at) with the time the credits
// come back (TLP arrival plus the credit update latency); at >= grant time. A request larger than
// the capacity throws std::invalid_argument; one that can only be met by credits not yet released
// throws std::logic_error from acquire() (try_acquire() returns nullopt): release first.
struct CreditGrant {
  Ps at_ps = 0;
  std::uint32_t header = 0;
  std::uint32_t data = 0;
  std::uint64_t id = 0;  // identifies the grant to release(); never 0
};

class CreditPool {
 public:
  static constexpr std::size_t kDefaultMaxEvents = 4096;
  CreditPool(std::uint32_t header_capacity, std::uint32_t data_capacity,
             std::size_t max_events = kDefaultMaxEvents);  // max_events >= 2

  CreditGrant acquire(Ps earliest_ps, std::uint32_t header, std::uint32_t data);
  std::optional<CreditGrant> try_acquire(Ps earliest_ps, std::uint32_t header, std::uint32_t data);
  void release(const CreditGrant& grant, Ps at_ps);
  void prune(Ps before_ps);  // as Serializer::prune

  std::uint32_t header_capacity() const { return header_cap_; }
  std::uint32_t data_capacity() const { return data_cap_; }
  // Credits in use at time t, as booked so far (unreleased grants count from their time on).
  // Only tracked kinds (capacity > 0); t >= floor.
  std::uint64_t header_in_use_at(Ps t) const;
  std::uint64_t data_in_use_at(Ps t) const;
  std::size_t unreleased_grants() const { return open_count_; }
  std::size_t event_count() const { return changes_.size(); }
  Ps floor_ps() const { return floor_; }

 private:
  // A grant's slot; the grant's id is (generation << 32) | slot, so a slot can be reused
  // (no allocation per grant) while a stale or forged id is still recognised.
  struct Open {
    Ps at_ps = 0;
    std::uint32_t header = 0;  // tracked amounts (0 for an infinite kind)
    std::uint32_t data = 0;
    std::uint32_t generation = 0;
    bool live = false;
  };
  std::optional<Ps> find(Ps earliest_ps, std::uint32_t header, std::uint32_t data) const;
  void check_request(std::uint32_t header, std::uint32_t data) const;  // throws for more than the capacity
  CreditGrant grant(Ps at, std::uint32_t header, std::uint32_t data);  // books a grant found at `at`
  // The amounts that are tracked: 0 for an infinite kind.
  std::uint32_t tracked_header(std::uint32_t header) const { return header_cap_ != 0 ? header : 0; }
  std::uint32_t tracked_data(std::uint32_t data) const { return data_cap_ != 0 ? data : 0; }
  void add_event(Ps t, std::int64_t header, std::int64_t data);
  void fold_before(Ps t);

  std::uint32_t header_cap_;
  std::uint32_t data_cap_;
  std::size_t max_events_;
  UsageTimeline changes_;  // usage changes, all at times > floor_
  Usage base_;             // usage at floor_ (history folded in)
  Usage total_;            // base_ + all changes: usage after the last one
  std::vector<Open> open_;
  std::vector<std::uint32_t> free_slots_;
  std::size_t open_count_ = 0;
  Ps floor_ = 0;
};

// Tags of outstanding non-posted requests: N tags, each free from some time. acquire() gives a tag
// that is not outstanding, at the earliest time one is free: among tags free by `earliest` the one
// freed last (best fit, so tags freed earlier stay for requests that arrive late in call order but
// early in time), else the one freed first; ties go to the lowest tag. The tag is outstanding until
// release(tag, at), at >= its grant time, after which it is free from `at`. Tags are unique while
// outstanding; acquire() with all N outstanding throws std::logic_error (try_acquire(): nullopt).
struct TagGrant {
  std::uint32_t tag = 0;
  Ps at_ps = 0;
};

class TagPool {
 public:
  explicit TagPool(std::uint32_t tags);  // >= 1

  TagGrant acquire(Ps earliest_ps);
  std::optional<TagGrant> try_acquire(Ps earliest_ps);
  void release(std::uint32_t tag, Ps at_ps);

  std::uint32_t capacity() const { return static_cast<std::uint32_t>(granted_at_.size()); }
  std::uint32_t outstanding() const { return outstanding_; }
  bool is_outstanding(std::uint32_t tag) const;
  // When a free tag becomes usable (throws for an outstanding or unknown tag).
  Ps free_at_ps(std::uint32_t tag) const;

 private:
  std::set<std::pair<Ps, std::uint32_t>> free_;  // (free from, tag)
  std::vector<Ps> free_at_;
  std::vector<Ps> granted_at_;
  std::vector<bool> busy_;
  std::uint32_t outstanding_ = 0;
};

}  // namespace spyre_dma::model::pcie
