// A resource that reads and writes share in turn: a root port's path into the host's fabric (the
// completion data of the device's reads out, the data of its posted writes in), or host memory
// (the devices' reads and the CPU's, their posted writes). An arbiter that serves two classes in
// turn gives each an equal number of bytes while both have work, so each class gets a share of the
// resource's time that follows what a byte of it costs (on memory a write costs more than a
// read); a class that asks for less than that leaves the rest to the other, and a class alone has
// it all.
//
// Each class books its own calendar (a Serializer, pieces interleaved with reserve_spread) at the
// rate its share leaves it. What the other class asks for is what it booked in the last
// kDemandWindowPs of the kernel's time: the model books traffic ahead of the kernel, each class by
// its own margin (reads as far as their tags reach, writes as their credits allow), so the times
// the bookings are for cannot be compared between classes, but the moments they are made can.
#pragma once

#include <cstdint>

#include "pcie/ps.hpp"
#include "pcie/ring.hpp"
#include "pcie/timing.hpp"

namespace spyre_dma::model::pcie {

class FairShare {
 public:
  enum Class : unsigned { kRead = 0, kWrite = 1 };
  // The time per byte of each class when it has the resource alone.
  FairShare(PsPerByte read, PsPerByte write, std::size_t max_intervals = Serializer::kDefaultMaxIntervals);

  struct Pass {
    Ps start;  // the first of its time
    Ps end;    // the last of its time is over
  };
  // `bytes` of class `c` from `earliest` on, in whatever time its calendar has free; `now` is the
  // kernel's time when it is booked (bookings come ahead of it, never behind).
  Pass book(Class c, Ps earliest, std::uint64_t bytes, Ps now);
  // The time `bytes` of class `c` take with the resource alone.
  Ps alone_ps(Class c, std::uint64_t bytes) const { return lanes_[c].rate.ceil_ps(bytes); }
  void prune(Ps before_ps);
  Ps busy_ps() const { return lanes_[kRead].calendar.busy_ps() + lanes_[kWrite].calendar.busy_ps(); }

  static constexpr Ps kDemandWindowPs = 2'000'000;

 private:
  struct Booked {
    Ps at;
    std::uint64_t bytes;
  };
  struct Lane {
    Serializer calendar;
    PsPerByte rate;
    double share = 0.5;  // of the resource's time, while both classes have work
    Ring<Booked> recent;  // its bookings of the last window, by when they were made
    std::uint64_t recent_bytes = 0;
    Ps latest = 0;  // when it last booked
  };
  // The share of the resource's time class `o` takes: what it asked for lately (by the kernel's
  // time `now`), at most its share.
  double taken_by(unsigned o, Ps now) const;
  Lane lanes_[2];
};

}  // namespace spyre_dma::model::pcie
