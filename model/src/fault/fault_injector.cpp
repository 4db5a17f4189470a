#include "spyre_dma/model/fault_injector.hpp"

#include <cmath>
#include <limits>

namespace spyre_dma::model {

FaultInjector::FaultInjector(const FaultConfig& c, std::uint64_t seed)
    : rng_(seed ^ 0x5fa17c0de1ec7edull) {  // its own stream: the link's LCRC draws stay as they were
  const std::optional<FaultKind> kind = fault_kind_from(c.at_cb_fault);
  if (c.at_cb != 0 && kind) {
    at_cb_ = c.at_cb;
    at_kind_ = *kind;
  }
  poisoned_.p = c.poisoned_rate;
  request_.p = c.unsupported_request_rate + c.completer_abort_rate + c.dropped_completion_rate;
  if (request_.p > 0) {
    ur_ = c.unsupported_request_rate / request_.p;
    ca_ = c.completer_abort_rate / request_.p;
  }
  iommu_.p = c.iommu_fault_rate;
  malformed_.p = c.malformed_cb_rate;
  reset_.p = c.device_reset_rate;
  // Armed in a fixed order, so the first draws do not depend on which kinds are on.
  for (Countdown* d : {&poisoned_, &request_, &iommu_, &malformed_, &reset_}) arm(*d);
  enabled_ = at_cb_ != 0 || poisoned_.p > 0 || request_.p > 0 || iommu_.p > 0 || malformed_.p > 0 || reset_.p > 0;
}

double FaultInjector::uniform() {
  // (0, 1]: log() below stays finite.
  return (static_cast<double>(rng_() >> 11) + 1.0) * (1.0 / 9007199254740992.0);
}

void FaultInjector::arm(Countdown& c) {
  if (c.p <= 0) {
    c.left = std::numeric_limits<std::uint64_t>::max();
    return;
  }
  if (c.p >= 1) {
    c.left = 0;
    return;
  }
  // Failures before the next success of a Bernoulli(p) sequence: floor(log(u) / log(1 - p)).
  const double k = std::floor(std::log(uniform()) / std::log1p(-c.p));
  c.left = k >= 1.8e19 ? std::numeric_limits<std::uint64_t>::max() : static_cast<std::uint64_t>(k);
}

bool FaultInjector::tick(Countdown& c) {
  if (c.p <= 0) return false;
  if (c.left > 0) {
    --c.left;
    return false;
  }
  arm(c);
  return true;
}

void FaultInjector::cb_started() {
  ++started_;
  if (at_cb_ != 0 && started_ == at_cb_) armed_ = true;
}

bool FaultInjector::device_reset() {
  bool hit = tick(reset_);
  if (armed_ && at_kind_ == FaultKind::kDeviceReset) armed_ = false, hit = true;
  if (hit) count(FaultKind::kDeviceReset);
  return hit;
}

bool FaultInjector::malformed_at_start() {
  if (!armed_ || at_kind_ != FaultKind::kMalformedCb) return false;
  armed_ = false;
  count(FaultKind::kMalformedCb);
  return true;
}

bool FaultInjector::malformed_fetched() {
  if (!tick(malformed_)) return false;
  count(FaultKind::kMalformedCb);
  return true;
}

bool FaultInjector::iommu(bool may_take_armed) {
  bool hit = tick(iommu_);
  if (may_take_armed && armed_ && at_kind_ == FaultKind::kIommu) armed_ = false, hit = true;
  if (hit) count(FaultKind::kIommu);
  return hit;
}

bool FaultInjector::armed_tlp(FaultKind k, bool read) {
  if (!armed_ || at_kind_ != k) return false;
  const bool any_direction = k == FaultKind::kPoisoned || k == FaultKind::kLcrc;
  if (!read && !any_direction) return false;
  armed_ = false;
  return true;
}

std::optional<FaultKind> FaultInjector::read_request() {
  if (!tick(request_)) return std::nullopt;
  const double u = uniform();
  const FaultKind k = u <= ur_ ? FaultKind::kUnsupportedRequest
                      : u <= ur_ + ca_ ? FaultKind::kCompleterAbort
                                       : FaultKind::kDroppedCompletion;
  count(k);
  return k;
}

FaultInjector::ReadFaults FaultInjector::read_faults(std::uint64_t completions, bool may_take_armed) {
  ReadFaults r;
  if (may_take_armed) {
    if (armed_tlp(FaultKind::kLcrc, true)) r.replay = true;
    for (FaultKind k : {FaultKind::kUnsupportedRequest, FaultKind::kCompleterAbort, FaultKind::kDroppedCompletion}) {
      if (armed_tlp(k, true)) count(k), r.lost = k;
    }
    if (armed_tlp(FaultKind::kPoisoned, true)) count(FaultKind::kPoisoned), r.poisoned_cpl = 0;
  }
  if (!r.lost && !r.poisoned_cpl) r.lost = read_request();
  if (!r.lost) {
    const std::uint64_t skip = r.poisoned_cpl ? 1 : 0;
    const Hits h = completions > skip ? poisoned(completions - skip) : Hits{};
    if (h.count && !r.poisoned_cpl) r.poisoned_cpl = h.first;
  }
  return r;
}

FaultInjector::Hits FaultInjector::poisoned(std::uint64_t n, std::vector<std::uint64_t>* indices) {
  Hits h{0, n};
  if (poisoned_.p <= 0) return h;
  std::uint64_t at = 0;  // TLPs of the run already passed
  while (n - at > poisoned_.left) {
    at += poisoned_.left;  // this TLP is hit
    if (h.count == 0) h.first = at;
    if (indices) indices->push_back(at);
    ++h.count;
    ++at;
    arm(poisoned_);
    if (at >= n) break;
  }
  if (at < n) poisoned_.left -= n - at;
  count(FaultKind::kPoisoned, h.count);
  return h;
}

}  // namespace spyre_dma::model
