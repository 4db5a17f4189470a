// Doorbell sequence numbers for barriers (see doorbell_order.hpp).
#include "doorbell_order.hpp"

namespace spyre_dma::refdev::detail {

void DoorbellOrder::ring(hw::Pipeline p, std::uint32_t new_pi, std::atomic<std::uint32_t>& cb_pi,
                         std::uint32_t retired) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& recs = records_[static_cast<unsigned>(p)];
  while (!recs.empty() && index_reached(retired, recs.front().pi_end)) recs.pop_front();
  const std::uint64_t seq = ++seq_;
  if (new_pi != cb_pi.load(std::memory_order_relaxed)) {
    // Unretired CBs: those in the ring plus the one the worker holds, so records <= depth + 1.
    if (recs.size() <= std::size_t{depth_[static_cast<unsigned>(p)]} + 1) {
      recs.push_back(Record{new_pi, seq});
    } else {
      recs.back().pi_end = new_pi;  // overrun: more doorbells in flight than the ring can hold
    }
  }
  cb_pi.store(new_pi, std::memory_order_seq_cst);
}

DoorbellOrder::Targets DoorbellOrder::barrier_targets(hw::Pipeline p, std::uint32_t index) const {
  std::lock_guard<std::mutex> lock(mutex_);
  // The CB's own sequence number; without a record (cannot happen for a fetched CB) it waits for
  // everything rung so far.
  std::uint64_t seq = seq_ + 1;
  for (const Record& r : records_[static_cast<unsigned>(p)]) {
    if (!index_reached(index, r.pi_end)) {  // pi_end > index: this doorbell handed the CB over
      seq = r.seq;
      break;
    }
  }
  Targets targets;
  for (unsigned q = 0; q < hw::kNumPipelines; ++q) {
    if (q == static_cast<unsigned>(p)) continue;
    const auto& recs = records_[q];
    for (auto it = recs.rbegin(); it != recs.rend(); ++it) {
      if (it->seq < seq) {
        targets[q] = it->pi_end;
        break;
      }
    }
  }
  return targets;
}

void DoorbellOrder::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& r : records_) r.clear();
}

}  // namespace spyre_dma::refdev::detail
