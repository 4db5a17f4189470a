// The barrier rule in simulated time (the rule itself is the device core's DoorbellOrder): a CB
// with BARRIER starts once every CB handed over by an earlier doorbell has retired, and no
// earlier than those retirements' simulated times, since the pipelines run ahead of one another.
#include <algorithm>

#include "device/controller.hpp"
#include "base/rates.hpp"

namespace spyre_dma::model {

using namespace sc_core;

Ps Controller::retire_time(const PipelineState& q, std::uint32_t bound) const {
  // The CB at index bound - 1 retired at retire_ps[...]; retirement is in index order.
  if (q.retire_ps.empty()) return q.last_retire_ps;
  const std::uint32_t first = q.retired - static_cast<std::uint32_t>(q.retire_ps.size());
  const std::int64_t k = static_cast<std::int32_t>(bound - 1 - first);
  if (k < 0) return 0;
  if (k >= static_cast<std::int64_t>(q.retire_ps.size())) return q.last_retire_ps;
  return q.retire_ps[static_cast<std::size_t>(k)];
}

Ps Controller::wait_barrier(PipelineState& p, std::uint32_t at_index, Ps start) {
  const device_core::DoorbellOrder::Targets targets = doorbells_.barrier_targets(p.id, at_index);
  const std::uint64_t epoch = epoch_;
  const std::uint64_t aborts = abort_seq_;
  Ps ready = std::max(start, p.last_retire_ps);  // earlier CBs of this pipeline, all doorbells
  bool waited = false;
  for (PipelineState& q : pipes_) {
    const std::optional<std::uint32_t>& bound = targets[static_cast<unsigned>(q.id)];
    if (&q == &p || !bound) continue;
    while (!device_core::index_reached(q.retired, *bound)) {
      if (epoch != epoch_ || aborts != abort_seq_) return ready;
      waited = true;
      sync_to(p.local_ps);
      wait(retired_ | p.kick);
    }
    ready = std::max(ready, retire_time(q, *bound));
  }
  PipelineCounters& c = counters_.pipe[static_cast<std::size_t>(p.id)];
  if (waited || ready > start) {
    ++c.barrier_waits;
    c.barrier_wait_ps += ready - start;
  }
  return ready;
}

}  // namespace spyre_dma::model
