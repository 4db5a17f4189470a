// Which CBs a barrier waits for: every CB handed over by an earlier doorbell on any pipeline.
// Each doorbell (CB_PI write) gets a global sequence number; a barrier CB at index i of pipeline
// p waits, on every other pipeline q, for the CBs up to the last producer index q's doorbells
// before i's own doorbell had handed over (and, on p, for the CBs before it).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>

#include "spyre_dma/hw/contract.hpp"

namespace spyre_dma::cuda::detail {

// a has reached b on a free-running 32-bit index.
inline bool index_reached(std::uint32_t a, std::uint32_t b) noexcept {
  return static_cast<std::int32_t>(a - b) >= 0;
}

class DoorbellLog {
 public:
  using Targets = std::array<std::optional<std::uint32_t>, hw::kNumPipelines>;

  // A doorbell on `p` to `new_pi`; `retired` is p's RB_PI (older records are dropped).
  void ring(unsigned p, std::uint32_t old_pi, std::uint32_t new_pi, std::uint32_t retired) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& recs = records_[p];
    while (!recs.empty() && index_reached(retired, recs.front().pi_end)) recs.pop_front();
    ++seq_;
    if (new_pi != old_pi) recs.push_back(Record{new_pi, seq_});
  }

  // For the CB at `index` of `p`: the RB_PI each other pipeline must reach first.
  Targets barrier_targets(unsigned p, std::uint32_t index) const {
    std::lock_guard<std::mutex> lock(mu_);
    std::uint64_t seq = seq_ + 1;
    for (const Record& r : records_[p]) {
      if (!index_reached(index, r.pi_end)) {  // pi_end > index: this doorbell handed the CB over
        seq = r.seq;
        break;
      }
    }
    Targets t;
    for (unsigned q = 0; q < hw::kNumPipelines; ++q) {
      if (q == p) continue;
      for (auto it = records_[q].rbegin(); it != records_[q].rend(); ++it) {
        if (it->seq < seq) {
          t[q] = it->pi_end;
          break;
        }
      }
    }
    return t;
  }

  void clear() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& r : records_) r.clear();
  }

 private:
  struct Record {
    std::uint32_t pi_end;
    std::uint64_t seq;
  };
  mutable std::mutex mu_;
  std::array<std::deque<Record>, hw::kNumPipelines> records_;
  std::uint64_t seq_ = 0;
};

}  // namespace spyre_dma::cuda::detail
