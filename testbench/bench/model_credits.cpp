// The posted-credit bookkeeping of the PCIe link model (model/src/pcie/timing.hpp, CreditPool)
// in the pattern of a D2H at TLP fidelity: a grant every 8 ns, each released a round trip later,
// the history pruned 2 us behind the newest grant as the link prunes it. The argument is the
// number of grants in flight (the round trip over 8 ns); the cost of a grant and its release must
// not grow with it. The baseline in the same run is the smallest number in flight.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>

#include "pcie/timing.hpp"

namespace {

using spyre_dma::model::pcie::CreditGrant;
using spyre_dma::model::pcie::CreditPool;
using spyre_dma::model::pcie::Ps;

void BM_CreditPoolGrantAndRelease(benchmark::State& state) {
  const auto in_flight = static_cast<Ps>(state.range(0));
  constexpr Ps kSpacingPs = 8'000;
  const Ps round_trip = in_flight * kSpacingPs;
  // Room for every grant in flight, 1 header and 32 data credits each (a 512-byte MWr): the
  // pool has credits to spare, as a link running at its wire's pace does.
  const auto header = static_cast<std::uint32_t>(2 * in_flight + 16);
  CreditPool pool(header, 32 * header, 4 * static_cast<std::size_t>(in_flight) + 4096);
  Ps t = 0, sent = 0;
  std::uint64_t n = 0;
  for (auto _ : state) {
    // One request in 7 is paced by something else (the device reading its memory) and starts late.
    const Ps ready = t + (n % 7 == 0 ? 3 * kSpacingPs / 8 : 0);
    const CreditGrant g = pool.acquire(std::max(ready, sent), 1, 32);
    sent = g.at_ps + kSpacingPs;
    pool.release(g, sent + round_trip + kSpacingPs / 3);  // off the grants' grid, as credit returns are
    benchmark::DoNotOptimize(g.at_ps);
    t += kSpacingPs;
    if ((++n & 63) == 0 && sent > 2'000'000) pool.prune(sent - 2'000'000);
  }
  state.counters["events"] = static_cast<double>(pool.event_count());
}

BENCHMARK(BM_CreditPoolGrantAndRelease)->Arg(16)->Arg(64)->Arg(256)->Arg(1024);

}  // namespace
