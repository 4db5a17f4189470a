// rdma-bench on the model (--backend sim): two nodes of a simulated cluster in this process, the
// same table as over UCX, in simulated time (docs/rdma.md, "The simulated network").
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include "outputs.hpp"
#include "rdma_bench_command.hpp"
#include "rdma_bench_table.hpp"
#include "sim_cluster_config.hpp"
#include "size_spec.hpp"
#include "spyre_dma/model/page_buffer.hpp"
#include "spyre_dma/model/sim_cluster.hpp"
#include "spyre_dma/traces/output_file.hpp"

namespace spyre_dma_cli {
namespace {

using spyre_dma::Status;
using spyre_dma::model::PageBuffer;
using spyre_dma::model::SimCluster;
using spyre_dma::model::SimNic;
using spyre_dma::rdma::RemoteHandle;

constexpr std::uint64_t kGuard = 4096;
constexpr std::uint8_t kGuardByte = 0xa5;

struct Failed {
  Status status;
};

// Runs until `left` reaches 0; the first failure of the transfers it counts is thrown.
struct Batch {
  std::atomic<std::uint64_t> left{0};
  Status first_error;
  std::function<void(Status)> one() {
    return [this](Status s) {
      if (!s.ok() && first_error.ok()) first_error = std::move(s);
      --left;
    };
  }
  void run(SimCluster& c) {
    if (!c.run_until([this] { return left.load() == 0; })) {
      throw Failed{Status(spyre_dma::ErrorCode::kWaitTimeout, "the simulation ran out of work with transfers pending")};
    }
    if (!first_error.ok()) throw Failed{first_error};
  }
};

double seconds(std::uint64_t ps) { return static_cast<double>(ps) * 1e-12; }

}  // namespace

int run_rdma_bench_sim(const RdmaBenchOptions& o, bool do_put, bool do_get) {
  if (!check_outputs("rdma-bench", {{"--trace", o.trace}, {"--json", o.json}}, {o.config})) return 2;
  const auto config = sim_cluster_config("rdma-bench", o.preset, o.config, 2);
  if (!config) return 2;
  const std::vector<std::uint64_t> sizes = parse_size_list(o.sizes);
  for (std::uint64_t s : sizes) {
    if (s > o.bytes) {
      fmt::print(stderr, "spyre-dma: error: rdma-bench: --sizes: {} is larger than the served range of {} bytes (--bytes)\n",
                 s, o.bytes);
      return 2;
    }
  }
  SimCluster c(*config, o.trace);
  // Node 1 serves the range (with guard bytes); node 0 puts and gets; both have a small range for
  // the ping-pong of the latency column.
  PageBuffer served(o.bytes + 2 * kGuard, kGuardByte);
  std::uint8_t* range = served.data() + kGuard;
  const RemoteHandle remote = c.nic(1)->expose(range, o.bytes);
  const std::uint64_t largest = *std::max_element(sizes.begin(), sizes.end());
  PageBuffer pong(largest);
  const RemoteHandle back = c.nic(0)->expose(pong.data(), pong.size());
  PageBuffer local(largest * o.window);
  for (std::size_t i = 0; i < local.size(); ++i) local[i] = static_cast<std::uint8_t>(i * 131 + (i >> 12));
  SimNic& n0 = *c.nic(0);
  SimNic& n1 = *c.nic(1);
  const spyre_dma::model::SimConfig& cfg = c.config();
  fmt::print("# simulated: two nodes, {} {} Gb/s, MTU {}, {}; times are simulated\n", cfg.network.protocol,
             cfg.network.gbps, cfg.network.mtu, cfg.network.fabric == "switch" ? "through a switch" : "back to back");
  print_rdma_table_header("Gb/s");
  nlohmann::json out = nlohmann::json::array();
  try {
    for (std::uint64_t size : sizes) {
      const std::uint64_t slots = std::max<std::uint64_t>(1, o.bytes / size);
      double gbps[2] = {0, 0};
      spyre_dma::Percentiles lat[2];
      for (int op = 0; op < 2; ++op) {
        if (op == 0 ? !do_put : !do_get) continue;
        // Bandwidth: a window of transfers in flight (perftest's tx depth), each completion
        // posting the next, from the simulation's thread.
        Batch b;
        b.left = o.iterations;
        std::atomic<unsigned> next{0};
        std::function<void(Status)> done_one = b.one();
        std::function<void()> post = [&] {
          const unsigned k = next++;
          if (k >= o.iterations) return;
          std::uint8_t* buf = local.data() + (k % o.window) * size;
          auto done = [&](Status s) {
            done_one(std::move(s));
            post();
          };
          if (op == 0) n0.start_put(remote, (k % slots) * size, buf, size, done);
          else n0.start_get(buf, remote, (k % slots) * size, size, done);
        };
        const std::uint64_t t0 = c.now_ps();
        for (unsigned w = 0; w < std::min(o.window, o.iterations); ++w) post();
        b.run(c);
        gbps[op] = static_cast<double>(size) * o.iterations * 8 / seconds(c.now_ps() - t0) / 1e9;
        // Latency: perftest's, one round at a time for the distribution. A put: half the round
        // trip of a ping-pong, each side writing back once the other's data is in its memory
        // (ib_write_lat). A get: posted until its data is here (ib_read_lat).
        const unsigned rounds = std::min(o.iterations, 1000u);
        std::vector<double> us;
        for (unsigned k = 0; k < rounds; ++k) {
          const std::uint64_t l0 = c.now_ps();
          std::uint64_t end = 0;  // put: when the pong's data is in node 0's memory
          Batch one;
          // Lives through one.run(): the pong is posted from the ping's callback, inside it.
          const std::function<void(Status)> count = one.one();
          if (op == 0) {
            one.left = 2;
            // Callbacks run on this thread with the simulation stopped at their instant.
            n0.start_put(remote, 0, local.data(), size, count, [&] {
              n1.start_put(back, 0, range, size, count, [&] { end = c.now_ps(); });
            });
          } else {
            one.left = 1;
            n0.start_get(local.data(), remote, (k % slots) * size, size, count);
          }
          one.run(c);
          if (op != 0) end = c.now_ps();
          us.push_back(seconds(end - l0) * 1e6 / (op == 0 ? 2.0 : 1.0));
        }
        lat[op] = spyre_dma::percentiles(std::move(us));
      }
      const bool on[2] = {do_put, do_get};
      print_rdma_table_row(size, o.iterations, on, gbps, lat, 2);
      nlohmann::json j = {{"bytes", size}, {"iterations", o.iterations}, {"simulated", true}};
      if (do_put) j["put"] = rdma_json_cell("gbits_per_s", gbps[0], lat[0]);
      if (do_get) j["get"] = rdma_json_cell("gbits_per_s", gbps[1], lat[1]);
      out.push_back(j);
    }
    if (o.verify) {
      // The whole range out by puts and back by gets, compared; then the served side's memory
      // and guard bytes, checked directly.
      PageBuffer pattern(o.bytes), readback(o.bytes);
      for (std::uint64_t i = 0; i < o.bytes; ++i) pattern[i] = static_cast<std::uint8_t>((i * 2654435761u) >> 13);
      Batch b;
      b.left = 1;
      n0.start_put(remote, 0, pattern.data(), o.bytes, b.one());
      b.run(c);
      b.left = 1;
      n0.start_get(readback.data(), remote, 0, o.bytes, b.one());
      b.run(c);
      const bool guards = std::all_of(served.begin(), served.begin() + kGuard, [](auto v) { return v == kGuardByte; }) &&
                          std::all_of(served.end() - kGuard, served.end(), [](auto v) { return v == kGuardByte; });
      if (!std::equal(pattern.begin(), pattern.end(), readback.begin()) ||
          !std::equal(pattern.begin(), pattern.end(), range) || !guards) {
        fmt::print(stderr, "spyre-dma: error: rdma-bench: verify: {}\n",
                   guards ? "the range does not hold what was put" : "a guard byte changed");
        return 1;
      }
      fmt::print("verified: {} bytes put and read back; guard bytes intact\n", o.bytes);
    }
  } catch (const Failed& f) {
    fmt::print(stderr, "spyre-dma: error: rdma-bench: {}\n", f.status.to_string());
    return 1;
  }
  if (!o.json.empty()) spyre_dma::traces::write_file_atomically(o.json, out.dump(2) + "\n");
  return 0;
}

}  // namespace spyre_dma_cli
