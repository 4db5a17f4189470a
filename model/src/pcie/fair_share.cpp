#include "pcie/fair_share.hpp"

#include <algorithm>
#include <cmath>

namespace spyre_dma::model::pcie {

FairShare::FairShare(PsPerByte read, PsPerByte write, std::size_t max_intervals) {
  lanes_[kRead].calendar = Serializer(max_intervals);
  lanes_[kWrite].calendar = Serializer(max_intervals);
  lanes_[kRead].rate = read;
  lanes_[kWrite].rate = write;
  // Equal bytes in turn: x bytes of each take x (r + w) of time, so reads have r / (r + w) of it.
  const double r = read.value(), w = write.value();
  lanes_[kRead].share = r / (r + w);
  lanes_[kWrite].share = w / (r + w);
}

double FairShare::taken_by(unsigned o, Ps now) const {
  const Lane& l = lanes_[o];
  if (l.recent.empty() || l.latest + kDemandWindowPs < now) return 0;  // idle lately
  // The time its bytes of the last window take at its own rate, over the window.
  const Ps span = std::max(kDemandWindowPs, now - l.recent.front().at);
  const double asked = static_cast<double>(l.rate.ceil_ps(l.recent_bytes)) / static_cast<double>(span);
  return std::min(l.share, asked);
}

FairShare::Pass FairShare::book(Class c, Ps earliest, std::uint64_t bytes, Ps now) {
  const double left = 1.0 - taken_by(1 - c, now);
  Lane& l = lanes_[c];
  const Ps alone = l.rate.ceil_ps(bytes);
  const Ps d = left >= 1.0 ? alone : static_cast<Ps>(std::ceil(static_cast<double>(alone) / left));
  const Ps end = l.calendar.reserve_spread(earliest, d);
  // What it asked for lately: its bookings of the last window, by when they were made (the
  // kernel's time: both classes book ahead of it, each by its own margin).
  l.recent.push_back(Booked{now, bytes});
  l.recent_bytes += bytes;
  l.latest = std::max(l.latest, now);
  while (l.recent.front().at + kDemandWindowPs < l.latest) {
    l.recent_bytes -= l.recent.front().bytes;
    l.recent.pop_front();
  }
  return Pass{end - d, end};
}

void FairShare::prune(Ps before_ps) {
  lanes_[kRead].calendar.prune(before_ps);
  lanes_[kWrite].calendar.prune(before_ps);
}

}  // namespace spyre_dma::model::pcie
