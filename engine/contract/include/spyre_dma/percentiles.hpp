// The distribution of a latency sample as the tools of the field report it (perftest's
// ib_*_lat, ucx_perftest, TransferBench): nearest-rank percentiles, so every figure is a
// latency that was measured, never an interpolation between two.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace spyre_dma {

struct Percentiles {
  std::size_t count = 0;
  double min = 0, p50 = 0, p90 = 0, p99 = 0, p999 = 0, max = 0;  // all 0 for no samples
};

// The smallest sample with at least a fraction q of the samples at or below it, q in (0, 1].
// `sorted` in ascending order and not empty.
inline double nearest_rank(const std::vector<double>& sorted, double q) {
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::min(sorted.size(), std::max<std::size_t>(rank, 1)) - 1];
}

inline Percentiles percentiles(std::vector<double> samples) {
  Percentiles p;
  p.count = samples.size();
  if (samples.empty()) return p;
  std::sort(samples.begin(), samples.end());
  p.min = samples.front();
  p.max = samples.back();
  p.p50 = nearest_rank(samples, 0.50);
  p.p90 = nearest_rank(samples, 0.90);
  p.p99 = nearest_rank(samples, 0.99);
  p.p999 = nearest_rank(samples, 0.999);
  return p;
}

}  // namespace spyre_dma
