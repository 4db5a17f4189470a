// Deterministic timing primitives for the PCIe link model; see timing.hpp.
#include "pcie/timing.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <string>

namespace spyre_dma::model::pcie {
namespace {

constexpr Ps kPsMax = std::numeric_limits<Ps>::max();

// The misuse reports, out of line: kept apart from the hot paths that only test for them.
[[noreturn]] __attribute__((cold, noinline)) void throw_over_capacity(const char* kind, std::uint32_t n,
                                                                       std::uint32_t cap) {
  throw std::invalid_argument("pcie: " + std::to_string(n) + " " + kind + " credits exceed the capacity " +
                              std::to_string(cap));
}

[[noreturn]] __attribute__((cold, noinline)) void throw_bad_release(std::uint64_t id, const char* why) {
  throw std::logic_error("pcie: credit grant " + std::to_string(id) + why);
}

[[noreturn]] __attribute__((cold, noinline)) void throw_release_before_grant(Ps at_ps, Ps grant_ps) {
  throw std::logic_error("pcie: credits released at " + std::to_string(at_ps) + " ps, before their grant at " +
                         std::to_string(grant_ps) + " ps");
}

[[noreturn]] __attribute__((cold, noinline)) void throw_short_for_ever(std::size_t open) {
  throw std::logic_error("pcie: credits can only come from grants not yet released (" + std::to_string(open) +
                         " open): release them first");
}

Ps checked_end(Ps start, Ps duration) {
  if (duration > kPsMax - start) throw std::overflow_error("pcie: time overflows 64 bits of ps");
  return start + duration;
}

}  // namespace

Ps ns_to_ps(double ns) {
  if (!std::isfinite(ns) || ns < 0.0) {
    throw std::invalid_argument("pcie: time " + std::to_string(ns) +
                                " ns is not a finite value >= 0");
  }
  const double ps = std::round(ns * 1000.0);
  if (ps >= 18446744073709551616.0) throw std::overflow_error("pcie: time overflows 64 bits of ps");
  return static_cast<Ps>(ps);
}

// ---------------------------------------------------------------------------------------------
// WireClock
// ---------------------------------------------------------------------------------------------

WireClock::WireClock(PsPerByte rate) : rate_(rate) {
  if (rate_.num == 0 || rate_.den == 0) throw std::invalid_argument("pcie: WireClock rate is 0");
}

Ps WireClock::duration_ps(std::uint64_t bytes) {
  if (bytes > std::numeric_limits<std::uint64_t>::max() - bytes_) {
    throw std::overflow_error("pcie: WireClock byte count overflows");
  }
  const Ps total = rate_.ceil_ps(bytes_ + bytes);
  const Ps d = total - ps_;
  bytes_ += bytes;
  ps_ = total;
  return d;
}

// ---------------------------------------------------------------------------------------------
// Serializer
// ---------------------------------------------------------------------------------------------

Serializer::Serializer(std::size_t max_intervals) : max_intervals_(max_intervals) {
  if (max_intervals_ == 0) throw std::invalid_argument("pcie: Serializer needs max_intervals >= 1");
}

Ps Serializer::find(Ps earliest_ps, Ps duration_ps, std::size_t* index) const {
  Ps t = std::max(earliest_ps, floor_);
  if (busy_.empty() || busy_.back().end <= t) {  // after every booking: the common case, no search
    checked_end(t, duration_ps);
    *index = busy_.size();
    return t;
  }
  // First booking that ends after t; every earlier one is over by t.
  auto it = std::partition_point(busy_.begin(), busy_.end(),
                                 [t](const Interval& iv) { return iv.end <= t; });
  for (; it != busy_.end(); ++it) {
    checked_end(t, duration_ps);
    if (it->start >= t && it->start - t >= duration_ps) break;  // fits in the gap before *it
    t = std::max(t, it->end);
  }
  checked_end(t, duration_ps);
  *index = static_cast<std::size_t>(it - busy_.begin());
  return t;
}

Ps Serializer::peek(Ps earliest_ps, Ps duration_ps) const {
  std::size_t index = 0;
  return find(earliest_ps, duration_ps, &index);
}

std::size_t Serializer::book(std::size_t i, Ps start, Ps end) {
  if (i == busy_.size()) {  // after every booking: the common case
    if (!busy_.empty() && busy_.back().end == start) {
      busy_.back().end = end;
      return i - 1;
    }
    busy_.push_back(Interval{start, end});
    return i;
  }
  const bool join_prev = i > 0 && busy_[i - 1].end == start;
  const bool join_next = i < busy_.size() && busy_[i].start == end;
  if (join_prev && join_next) {
    busy_[i - 1].end = busy_[i].end;
    busy_.erase(busy_.begin() + static_cast<std::ptrdiff_t>(i));
    return i - 1;
  }
  if (join_prev) {
    busy_[i - 1].end = end;
    return i - 1;
  }
  if (join_next) {
    busy_[i].start = start;
  } else {
    busy_.insert(busy_.begin() + static_cast<std::ptrdiff_t>(i), Interval{start, end});
  }
  return i;
}

void Serializer::keep_history() {
  while (busy_.size() > max_intervals_) {  // give up the oldest gap
    floor_ = busy_.front().end;
    busy_.pop_front();
  }
}

Ps Serializer::reserve(Ps earliest_ps, Ps duration_ps) {
  std::size_t i = 0;
  const Ps start = find(earliest_ps, duration_ps, &i);
  ++reservations_;
  if (duration_ps == 0) return start;
  book(i, start, start + duration_ps);
  busy_total_ += duration_ps;
  keep_history();
  return start;
}

Ps Serializer::reserve_spread(Ps earliest_ps, Ps duration_ps) {
  Ps t = std::max(earliest_ps, floor_);
  ++reservations_;
  if (duration_ps == 0) return t;
  checked_end(t, duration_ps);
  busy_total_ += duration_ps;
  if (busy_.empty() || busy_.back().end <= t) {  // after every booking: the common case, no search
    book(busy_.size(), t, t + duration_ps);
    keep_history();
    return t + duration_ps;
  }
  // First booking that ends after t: every gap from t on, in order, takes what it can hold.
  auto i = static_cast<std::size_t>(std::partition_point(busy_.begin(), busy_.end(),
                                                         [t](const Interval& iv) { return iv.end <= t; }) -
                                    busy_.begin());
  for (Ps left = duration_ps;;) {
    if (i < busy_.size() && busy_[i].start <= t) {  // inside a booking: on to its end
      t = busy_[i++].end;
      continue;
    }
    const Ps gap_end = i < busy_.size() ? busy_[i].start : checked_end(t, left);
    const Ps take = std::min(left, gap_end - t);
    i = book(i, t, t + take);  // now the booking that covers [t, t + take)
    left -= take;
    if (left == 0) {
      keep_history();
      return t + take;
    }
    t = busy_[i++].end;
  }
}

void Serializer::prune(Ps before_ps) {
  if (before_ps <= floor_) return;
  floor_ = before_ps;
  while (!busy_.empty() && busy_.front().end <= floor_) busy_.pop_front();
  if (!busy_.empty() && busy_.front().start < floor_) busy_.front().start = floor_;
}

Ps Serializer::busy_until_ps() const { return busy_.empty() ? floor_ : busy_.back().end; }

// ---------------------------------------------------------------------------------------------
// CreditPool
// ---------------------------------------------------------------------------------------------

CreditPool::CreditPool(std::uint32_t header_capacity, std::uint32_t data_capacity,
                       std::size_t max_events)
    : header_cap_(header_capacity), data_cap_(data_capacity), max_events_(max_events) {
  if (max_events_ < 2) throw std::invalid_argument("pcie: CreditPool needs max_events >= 2");
}

std::optional<Ps> CreditPool::find(Ps earliest_ps, std::uint32_t h, std::uint32_t d) const {
  const Ps start = std::max(earliest_ps, floor_);
  const std::int64_t header_limit =
      header_cap_ != 0 ? static_cast<std::int64_t>(header_cap_) - h : UsageTimeline::kNoLimit;
  const std::int64_t data_limit = data_cap_ != 0 ? static_cast<std::int64_t>(data_cap_) - d : UsageTimeline::kNoLimit;
  // nullopt: short of credits for ever, an unreleased grant holds them.
  return changes_.earliest_within(start, base_, header_limit, data_limit);
}

std::optional<CreditGrant> CreditPool::try_acquire(Ps earliest_ps, std::uint32_t header,
                                                   std::uint32_t data) {
  check_request(header, data);
  const std::optional<Ps> at = find(earliest_ps, tracked_header(header), tracked_data(data));
  if (!at) return std::nullopt;
  return grant(*at, header, data);
}

CreditGrant CreditPool::acquire(Ps earliest_ps, std::uint32_t header, std::uint32_t data) {
  check_request(header, data);
  const std::optional<Ps> at = find(earliest_ps, tracked_header(header), tracked_data(data));
  if (!at) throw_short_for_ever(open_count_);
  return grant(*at, header, data);
}

void CreditPool::check_request(std::uint32_t header, std::uint32_t data) const {
  if (header_cap_ != 0 && header > header_cap_) throw_over_capacity("header", header, header_cap_);
  if (data_cap_ != 0 && data > data_cap_) throw_over_capacity("data", data, data_cap_);
}

CreditGrant CreditPool::grant(Ps at, std::uint32_t header, std::uint32_t data) {
  const std::uint32_t th = tracked_header(header), td = tracked_data(data);
  std::uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    if (open_.size() >= std::numeric_limits<std::uint32_t>::max()) {
      throw std::length_error("pcie: too many credit grants outstanding");
    }
    slot = static_cast<std::uint32_t>(open_.size());
    open_.emplace_back();
  }
  Open& open = open_[slot];
  ++open.generation;  // from 1: no id is 0
  open.at_ps = at;
  open.header = th;
  open.data = td;
  open.live = true;
  ++open_count_;
  if (th != 0 || td != 0) add_event(at, th, td);
  return CreditGrant{at, header, data, (std::uint64_t{open.generation} << 32) | slot};
}

void CreditPool::release(const CreditGrant& grant, Ps at_ps) {
  const std::uint64_t slot = grant.id & 0xffffffffu;
  if (slot >= open_.size() || !open_[slot].live || open_[slot].generation != grant.id >> 32) {
    throw_bad_release(grant.id, " was never acquired or is already released");
  }
  Open& open = open_[slot];
  if (grant.at_ps != open.at_ps) throw_bad_release(grant.id, " does not match");
  if (at_ps < open.at_ps) throw_release_before_grant(at_ps, open.at_ps);
  open.live = false;
  free_slots_.push_back(static_cast<std::uint32_t>(slot));
  --open_count_;
  if (open.header == 0 && open.data == 0) return;
  if (at_ps <= floor_) {  // the past is folded: it is back by the floor
    base_.header -= open.header;
    base_.data -= open.data;
    total_.header -= open.header;
    total_.data -= open.data;
  } else {
    add_event(at_ps, -static_cast<std::int64_t>(open.header),
              -static_cast<std::int64_t>(open.data));
  }
  if (base_.header < 0 || base_.data < 0 || total_.header < 0 || total_.data < 0) {
    throw std::logic_error("pcie: credit usage went negative (internal error)");
  }
}

void CreditPool::add_event(Ps t, std::int64_t header, std::int64_t data) {
  changes_.add(t, header, data);
  total_.header += header;
  total_.data += data;
  while (changes_.size() > max_events_) fold_before(*changes_.first_time());
}

void CreditPool::fold_before(Ps t) {
  const Usage folded = changes_.take_through(t);
  base_.header += folded.header;
  base_.data += folded.data;
  floor_ = std::max(floor_, t);
}

void CreditPool::prune(Ps before_ps) {
  if (before_ps <= floor_) return;
  fold_before(before_ps);
}

std::uint64_t CreditPool::header_in_use_at(Ps t) const {
  if (t < floor_) throw std::invalid_argument("pcie: credit history before the floor is pruned");
  return static_cast<std::uint64_t>(base_.header + changes_.sum_through(t).header);
}

std::uint64_t CreditPool::data_in_use_at(Ps t) const {
  if (t < floor_) throw std::invalid_argument("pcie: credit history before the floor is pruned");
  return static_cast<std::uint64_t>(base_.data + changes_.sum_through(t).data);
}

// ---------------------------------------------------------------------------------------------
// TagPool
// ---------------------------------------------------------------------------------------------

TagPool::TagPool(std::uint32_t tags) : free_at_(tags, 0), granted_at_(tags, 0), busy_(tags, false) {
  if (tags == 0) throw std::invalid_argument("pcie: TagPool needs at least one tag");
  for (std::uint32_t tag = 0; tag < tags; ++tag) free_.emplace(0, tag);
}

std::optional<TagGrant> TagPool::try_acquire(Ps earliest_ps) {
  if (free_.empty()) return std::nullopt;
  auto it = free_.upper_bound({earliest_ps, std::numeric_limits<std::uint32_t>::max()});
  if (it != free_.begin()) {
    // Free by `earliest`: the one freed last, lowest tag among equals.
    it = free_.lower_bound({std::prev(it)->first, 0});
  }  // else none is free by then: the one freed first (begin()), lowest tag among equals
  const TagGrant grant{it->second, std::max(earliest_ps, it->first)};
  free_.erase(it);
  busy_[grant.tag] = true;
  granted_at_[grant.tag] = grant.at_ps;
  ++outstanding_;
  return grant;
}

TagGrant TagPool::acquire(Ps earliest_ps) {
  std::optional<TagGrant> grant = try_acquire(earliest_ps);
  if (!grant) {
    throw std::logic_error("pcie: all " + std::to_string(capacity()) +
                           " tags are outstanding: release one first");
  }
  return *grant;
}

void TagPool::release(std::uint32_t tag, Ps at_ps) {
  if (tag >= capacity()) {
    throw std::invalid_argument("pcie: tag " + std::to_string(tag) + " out of range");
  }
  if (!busy_[tag]) {
    throw std::logic_error("pcie: tag " + std::to_string(tag) + " is not outstanding");
  }
  if (at_ps < granted_at_[tag]) {
    throw std::logic_error("pcie: tag " + std::to_string(tag) + " released at " +
                           std::to_string(at_ps) + " ps, before its grant at " +
                           std::to_string(granted_at_[tag]) + " ps");
  }
  busy_[tag] = false;
  free_at_[tag] = at_ps;
  free_.emplace(at_ps, tag);
  --outstanding_;
}

bool TagPool::is_outstanding(std::uint32_t tag) const {
  if (tag >= capacity()) {
    throw std::invalid_argument("pcie: tag " + std::to_string(tag) + " out of range");
  }
  return busy_[tag];
}

Ps TagPool::free_at_ps(std::uint32_t tag) const {
  if (is_outstanding(tag)) {
    throw std::logic_error("pcie: tag " + std::to_string(tag) + " is outstanding");
  }
  return free_at_[tag];
}

}  // namespace spyre_dma::model::pcie
