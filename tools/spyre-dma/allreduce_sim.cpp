// allreduce on the model (--backend sim): every rank a node of one simulated cluster in this
// process, the ring of allreduce_command.cpp driven by the NICs' events in simulated time, so the
// same seed and sizes give the same bits and the same times (docs/rdma.md, "The simulated network").
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include "allreduce_command.hpp"
#include "outputs.hpp"
#include "sim_cluster_config.hpp"
#include "size_spec.hpp"
#include "spyre_dma/model/page_buffer.hpp"
#include "spyre_dma/model/sim_cluster.hpp"

namespace spyre_dma_cli {
namespace {

using spyre_dma::Status;
using spyre_dma::model::PageBuffer;
using spyre_dma::model::SimCluster;
using spyre_dma::rdma::RemoteHandle;

// The ring of N nodes. Rank r's step s (0 <= s < 2(N-1)) puts one chunk into its successor: during
// the reduce-scatter (s < N-1) chunk r-s into the successor's scratch, which the successor adds
// to its own; during the all-gather chunk r+1-(s-N+1) into the successor's buffer. A rank takes
// its next step when its predecessor's data for this one is in its memory (the put's `landed`
// event, what a rank polling its memory would see): the sends of one rank leave in order on one
// connection, so step s's data never arrives before step s-1's.
class SimRing {
 public:
  SimRing(SimCluster& cluster, std::uint64_t largest) : c_(cluster), n_(static_cast<int>(cluster.nodes())) {
    for (int r = 0; r < n_; ++r) {
      ranks_.push_back(std::make_unique<Rank>(largest));
      Rank& k = *ranks_.back();
      k.data_handle = c_.nic(r)->expose(k.data.data(), largest);
      k.scratch_handle = c_.nic(r)->expose(k.scratch.data(), largest);
    }
  }

  float* data(int r) { return reinterpret_cast<float*>(ranks_[r]->data.data()); }
  float* scratch(int r) { return reinterpret_cast<float*>(ranks_[r]->scratch.data()); }

  // One all-reduce of `count` floats (count >= ranks); returns its simulated time in ps.
  std::uint64_t run(std::uint64_t count) {
    count_ = count;
    finished_ = 0;
    pending_ = 0;
    error_ = Status{};
    const std::uint64_t t0 = c_.now_ps();
    for (int r = 0; r < n_; ++r) post(r, 0);
    const bool done = c_.run_until([this] { return finished_ == n_ && pending_ == 0; });
    if (!error_.ok()) throw error_;
    if (!done) throw Status(spyre_dma::ErrorCode::kWaitTimeout, "the simulation ran out of work mid all-reduce");
    return c_.now_ps() - t0;
  }

 private:
  struct Rank {
    explicit Rank(std::uint64_t bytes) : data(bytes), scratch(bytes) {}
    PageBuffer data, scratch;  // float32
    RemoteHandle data_handle, scratch_handle;
  };
  std::uint64_t begin(int chunk) const {
    return count_ * static_cast<std::uint64_t>(chunk) / static_cast<std::uint64_t>(n_);
  }
  int mod(int v) const { return ((v % n_) + n_) % n_; }

  void post(int r, int s) {
    const bool scatter = s < n_ - 1;
    const int send = scatter ? mod(r - s) : mod(r + 1 - (s - (n_ - 1)));
    const int next = mod(r + 1);
    const Rank& to = *ranks_[next];
    const std::uint64_t first = begin(send), bytes = (begin(send + 1) - first) * 4;
    ++pending_;
    c_.nic(r)->start_put(scatter ? to.scratch_handle : to.data_handle, first * 4, data(r) + first, bytes,
                         [this](Status st) {
                           if (!st.ok() && error_.ok()) error_ = std::move(st);
                           --pending_;
                         },
                         [this, next, s] { arrived(next, s); });
  }

  // Rank q has its predecessor's data of step s.
  void arrived(int q, int s) {
    if (s < n_ - 1) {
      const int recv = mod(q - s - 1);
      float* d = data(q);
      const float* add = scratch(q);
      for (std::uint64_t i = begin(recv); i < begin(recv + 1); ++i) d[i] += add[i];
    }
    if (s + 1 < 2 * (n_ - 1)) post(q, s + 1);
    else ++finished_;
  }

  SimCluster& c_;
  int n_;
  std::vector<std::unique_ptr<Rank>> ranks_;
  std::uint64_t count_ = 0;
  int finished_ = 0;
  int pending_ = 0;
  Status error_;
};

// FNV-1a, over the results and the simulated times: equal digests, equal runs.
void mix(std::uint64_t& h, const void* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) h = (h ^ static_cast<const std::uint8_t*>(p)[i]) * 1099511628211ull;
}

}  // namespace

int run_allreduce_sim(const AllreduceOptions& o, int ranks, const std::vector<std::uint64_t>& sizes) {
  for (std::uint64_t s : sizes) {
    if (s / 4 < static_cast<std::uint64_t>(ranks)) {
      fmt::print(stderr, "spyre-dma: error: allreduce: --sizes: {} bytes is fewer floats than ranks ({})\n", s, ranks);
      return 2;
    }
  }
  if (!check_outputs("allreduce", {{"--trace", o.trace}}, {o.config})) return 2;
  const auto config = sim_cluster_config("allreduce", o.preset, o.config, static_cast<unsigned>(ranks));
  if (!config) return 2;
  SimCluster cluster(*config, o.trace);
  const spyre_dma::model::SimConfig& cfg = cluster.config();
  SimRing ring(cluster, *std::max_element(sizes.begin(), sizes.end()));
  fmt::print("# ring all-reduce, float32 sum, {} ranks on a simulated cluster ({} {} Gb/s, {}), {} iterations per "
             "size (after one checked); times are simulated\n",
             ranks, cfg.network.protocol, cfg.network.gbps, cfg.network.fabric, o.iterations);
  fmt::print("{:>12} {:>12} {:>6} {:>11} {:>12} {:>12} {:>8}\n", "size", "count", "type", "time(us)", "algbw(GB/s)",
             "busbw(GB/s)", "#wrong");
  std::uint64_t digest = 14695981039346656037ull, wrong_total = 0;
  try {
    for (std::uint64_t size : sizes) {
      const std::uint64_t count = size / 4;
      for (int r = 0; r < ranks; ++r) {
        float* d = ring.data(r);
        for (std::uint64_t i = 0; i < count; ++i) d[i] = static_cast<float>(r + 1) + static_cast<float>(i % 13);
      }
      std::uint64_t ps = ring.run(count);
      mix(digest, &ps, sizeof ps);
      std::uint64_t wrong = 0;
      for (int r = 0; r < ranks; ++r) {
        const float* d = ring.data(r);
        for (std::uint64_t i = 0; i < count; ++i) {
          const float want =
              static_cast<float>(ranks * (ranks + 1) / 2) + static_cast<float>(ranks) * static_cast<float>(i % 13);
          wrong += d[i] != want;
        }
        mix(digest, d, count * 4);
      }
      wrong_total += wrong;
      std::uint64_t total = 0;
      for (unsigned k = 0; k < o.iterations; ++k) {
        ps = ring.run(count);
        mix(digest, &ps, sizeof ps);
        total += ps;
      }
      const double us = static_cast<double>(total) * 1e-6 / o.iterations;
      const double algbw = static_cast<double>(size) / us / 1e3;
      const double busbw = algbw * 2.0 * (ranks - 1) / ranks;
      fmt::print("{:>12} {:>12} {:>6} {:>11.2f} {:>12.3f} {:>12.3f} {:>8}\n", size, count, "float", us, algbw, busbw,
                 wrong);
    }
  } catch (const Status& s) {
    fmt::print(stderr, "spyre-dma: error: allreduce: {}\n", s.to_string());
    return 1;
  }
  fmt::print("# digest {:016x} (every rank's results and every simulated time)\n", digest);
  if (wrong_total) {
    fmt::print(stderr, "spyre-dma: error: allreduce: {} elements summed wrong\n", wrong_total);
    return 1;
  }
  fmt::print("# all-reduce: every size checked on every rank: ok\n");
  return 0;
}

}  // namespace spyre_dma_cli
