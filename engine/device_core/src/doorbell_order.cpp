// Doorbell sequence numbers for barriers (see doorbell_order.hpp).
#include "spyre_dma/device_core/doorbell_order.hpp"

namespace spyre_dma::device_core {

DoorbellOrder::DoorbellOrder(const std::array<std::uint32_t, hw::kNumPipelines>& depth) : depth_(depth) {
  records_.reserve(hw::kNumPipelines);
  for (unsigned p = 0; p < hw::kNumPipelines; ++p) records_.emplace_back(bound(static_cast<hw::Pipeline>(p)));
}

void DoorbellOrder::note(hw::Pipeline p, std::uint32_t old_pi, std::uint32_t new_pi, std::uint32_t retired) {
  auto& recs = records_[static_cast<unsigned>(p)];
  // Retired records are a prefix (retirement is in index order); keep the newest kKeptRetired.
  while (recs.size() > kKeptRetired && index_reached(retired, recs[kKeptRetired].pi_end)) recs.pop_front();
  const std::uint64_t seq = ++seq_;
  if (new_pi == old_pi) return;
  if (recs.size() < bound(p)) {
    recs.push_back(Record{new_pi, seq});
  } else {
    recs.back().pi_end = new_pi;  // overrun: more doorbells in flight than the ring can hold
  }
}

DoorbellOrder::Targets DoorbellOrder::barrier_targets(hw::Pipeline p, std::uint32_t index) const {
  std::lock_guard<std::mutex> lock(mutex_);
  // The CB's own sequence number: that of the first record past its index (records are in index
  // order). Without one (a CB cannot be fetched before its doorbell) it waits for everything.
  const auto& own = records_[static_cast<unsigned>(p)];
  const std::size_t handed = own.partition_point([&](const Record& r) { return index_reached(index, r.pi_end); });
  const std::uint64_t seq = handed != own.size() ? own[handed].seq : seq_ + 1;
  Targets targets;
  for (unsigned q = 0; q < hw::kNumPipelines; ++q) {
    if (q == static_cast<unsigned>(p)) continue;
    const auto& recs = records_[q];
    const std::size_t later = recs.partition_point([&](const Record& r) { return r.seq < seq; });
    if (later != 0) targets[q] = recs[later - 1].pi_end;
  }
  return targets;
}

void DoorbellOrder::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& r : records_) r.clear();
}

}  // namespace spyre_dma::device_core
