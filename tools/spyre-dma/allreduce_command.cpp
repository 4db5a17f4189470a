#include "allreduce_command.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <thread>
#include <vector>

#include "cli_checks.hpp"
#include "peer_files.hpp"
#include "size_spec.hpp"
#include "spyre_dma/traces/output_file.hpp"

#if SPYRE_DMA_HAVE_RDMA
#include "spyre_dma/rdma/ucx_node.hpp"
#endif

namespace spyre_dma_cli {

CLI::App* add_allreduce_command(CLI::App& app, AllreduceOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "allreduce", "a ring all-reduce (float32 sum) over remote memory, one process per rank; reports as nccl-tests");
  cmd->add_option("--exchange", o.exchange, "ucx: a folder every rank reads and writes (a new one per run)");
  cmd->add_option("--ranks", o.ranks, "the number of ranks (default: SLURM_NTASKS)")->check(CLI::Range(2, 1024));
  cmd->add_option("--rank", o.rank, "this process's rank (default: SLURM_PROCID)")->check(CLI::Range(0, 1023));
  cmd->add_option("--sizes", o.sizes, "bytes per rank (default 64KiB..16MiB)");
  cmd->add_option("--iterations", o.iterations, "timed iterations per size, after a checked one (default 20)")
      ->check(CLI::Range(1u, 100000u));
  cmd->add_option("--timeout", o.timeout_s, "seconds to wait for the other ranks at any step (default 120)")
      ->check(timeout_seconds());
  cmd->add_option("--backend", o.backend,
                  "ucx (default): one process per rank over UCX; sim: every rank a node of a simulated cluster in "
                  "this process, times simulated")
      ->check(CLI::IsMember({"ucx", "sim"}));
  cmd->add_option("--preset", o.preset, "sim: model preset (default ndr400-pair)");
  cmd->add_option("--config", o.config, "sim: JSON model configuration file");
  cmd->add_option("--trace", o.trace,
                  "sim: write the cluster's Perfetto trace (NIC completions; every packet with trace_tlps) to FILE");
  return cmd;
}

namespace {

int from_env(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return -1;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return *end == '\0' && n >= 0 && n < 1 << 20 ? static_cast<int>(n) : -2;
}

int usage(const std::string& what) {
  fmt::print(stderr, "spyre-dma: error: allreduce: {}\n", what);
  return 2;
}

}  // namespace

#if SPYRE_DMA_HAVE_RDMA
namespace {

using spyre_dma::Status;
using spyre_dma::rdma::RemoteHandle;
using spyre_dma::rdma::UcxNode;
using Clock = std::chrono::steady_clock;

struct Failure {
  std::string what;
};

class Ring {
 public:
  Ring(const AllreduceOptions& o, int ranks, int rank, std::uint64_t largest)
      : o_(o), n_(ranks), rank_(rank), largest_(largest), timeout_(to_timeout(o.timeout_s)),
        memory_(2 * largest + 2 * static_cast<std::uint64_t>(ranks) * 8, 0) {
    // One exposed range: the buffer, the scratch the predecessor reduces into, the flags.
    const std::string tag = job_tag();
    mine_ = node_.expose(memory_.data(), memory_.size());
    path_ = [this, tag](int r, const char* kind) { return fmt::format("{}/{}rank-{}.{}", o_.exchange, tag, r, kind); };
    spyre_dma::traces::write_file_atomically(path_(rank_, "handle"), mine_.to_text() + "\n");
    const int next = (rank_ + 1) % n_;
    wait_file(path_(next, "handle"));
    next_ = read_handle_file(path_(next, "handle"));
  }

  float* data() { return reinterpret_cast<float*>(memory_.data()); }
  float* scratch() { return reinterpret_cast<float*>(memory_.data() + largest_); }
  std::uint64_t* flags() { return reinterpret_cast<std::uint64_t*>(memory_.data() + 2 * largest_); }

  // One all-reduce of `count` floats; `tag` is above every flag value written before.
  void run(std::uint64_t count, std::uint64_t tag) {
    auto begin = [&](int c) { return count * static_cast<std::uint64_t>(c) / static_cast<std::uint64_t>(n_); };
    auto chunk = [&](int c) { return begin(c + 1) - begin(c); };
    const int n = n_;
    for (int s = 0; s < n - 1; ++s) {  // reduce-scatter
      const int send = ((rank_ - s) % n + n) % n, recv = ((rank_ - s - 1) % n + n) % n;
      put_floats(largest_ + begin(send) * 4, data() + begin(send), chunk(send));
      signal(static_cast<std::uint64_t>(s), tag + static_cast<std::uint64_t>(s) + 1);
      await(static_cast<std::uint64_t>(s), tag + static_cast<std::uint64_t>(s) + 1);
      float* d = data() + begin(recv);
      const float* add = scratch() + begin(recv);
      for (std::uint64_t i = 0; i < chunk(recv); ++i) d[i] += add[i];
    }
    for (int s = 0; s < n - 1; ++s) {  // all-gather
      const int send = ((rank_ + 1 - s) % n + n) % n;
      const std::uint64_t slot = static_cast<std::uint64_t>(n - 1 + s);
      put_floats(begin(send) * 4, data() + begin(send), chunk(send));
      signal(slot, tag + slot + 1);
      await(slot, tag + slot + 1);
    }
  }

  // Every rank has finished (each writes its .done and waits for all): none exits while another
  // still puts into it.
  void finish() {
    spyre_dma::traces::write_file_atomically(path_(rank_, "done"), "done\n");
    for (int r = 0; r < n_; ++r) wait_file(path_(r, "done"));
  }

 private:
  static std::string job_tag() {
    const char* job = std::getenv("SLURM_JOB_ID");
    const char* step = std::getenv("SLURM_STEP_ID");
    return job && *job ? fmt::format("job-{}.{}-", job, step && *step ? step : "0") : std::string();
  }
  void wait_file(const std::string& p) {
    if (!wait_for_file(p, timeout_)) throw Failure{fmt::format("no {} within {} s", p, o_.timeout_s)};
  }
  void check(const Status& s) {
    if (!s.ok()) throw Failure{s.to_string()};
  }
  void put_floats(std::uint64_t offset, const float* src, std::uint64_t count) {
    if (count) check(node_.put(next_, offset, src, count * 4, timeout_));
  }
  // Flag `slot` of the successor to `value`, once the data before it is in the successor's memory.
  void signal(std::uint64_t slot, std::uint64_t value) {
    flag_out_ = value;
    check(node_.put(next_, 2 * largest_ + slot * 8, &flag_out_, 8, timeout_));
  }
  // This rank's flag `slot` reaches `value` (the predecessor's put lands in memory the node's
  // progress thread moves).
  void await(std::uint64_t slot, std::uint64_t value) {
    const auto deadline = Clock::now() + timeout_;
    for (unsigned spins = 0; __atomic_load_n(&flags()[slot], __ATOMIC_ACQUIRE) < value; ++spins) {
      if (Clock::now() >= deadline) {
        throw Failure{fmt::format("rank {}: no data from rank {} within {} s", rank_, (rank_ + n_ - 1) % n_,
                                  o_.timeout_s)};
      }
      if (spins > 64) std::this_thread::yield();
    }
  }

  const AllreduceOptions& o_;
  int n_, rank_;
  std::uint64_t largest_;
  std::chrono::nanoseconds timeout_;
  UcxNode node_{UcxNode::Progress::kThread};
  std::vector<std::uint8_t> memory_;
  RemoteHandle mine_, next_;
  std::function<std::string(int, const char*)> path_;
  std::uint64_t flag_out_ = 0;
};

int run_ucx(const AllreduceOptions& o, int ranks, const std::vector<std::uint64_t>& sizes) {
  const int rank = o.rank >= 0 ? o.rank : from_env("SLURM_PROCID");
  if (rank < 0 || rank >= ranks) return usage(fmt::format("--rank {}: expected 0..{} (or SLURM_PROCID)", rank, ranks - 1));
  if (o.exchange.empty()) return usage("give --exchange FOLDER (every rank reads and writes it)");
  std::filesystem::create_directories(o.exchange);
  try {
    Ring ring(o, ranks, rank, *std::max_element(sizes.begin(), sizes.end()));
    if (rank == 0) {
      fmt::print("# ring all-reduce, float32 sum, {} ranks, {} timed iterations per size (after one checked)\n", ranks,
                 o.iterations);
      fmt::print("{:>12} {:>12} {:>6} {:>11} {:>12} {:>12} {:>8}\n", "size", "count", "type", "time(us)", "algbw(GB/s)",
                 "busbw(GB/s)", "#wrong");
    }
    std::uint64_t tag = 0, wrong_total = 0;
    const std::uint64_t per_run = 2 * static_cast<std::uint64_t>(ranks);  // flag values one run uses
    for (std::uint64_t size : sizes) {
      const std::uint64_t count = size / 4;
      float* d = ring.data();
      for (std::uint64_t i = 0; i < count; ++i) d[i] = static_cast<float>(rank + 1) + static_cast<float>(i % 13);
      ring.run(count, tag);
      tag += per_run;
      // Exact: small integers. sum over ranks of (r + 1) + ranks x (i % 13).
      std::uint64_t wrong = 0;
      for (std::uint64_t i = 0; i < count; ++i) {
        const float want = static_cast<float>(ranks * (ranks + 1) / 2) + static_cast<float>(ranks) * static_cast<float>(i % 13);
        wrong += d[i] != want;
      }
      wrong_total += wrong;
      const auto t0 = Clock::now();
      for (unsigned k = 0; k < o.iterations; ++k) {
        ring.run(count, tag);
        tag += per_run;
      }
      const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / o.iterations;
      const double algbw = static_cast<double>(size) / us / 1e3;
      const double busbw = algbw * 2.0 * (ranks - 1) / ranks;
      if (rank == 0 || wrong) {
        fmt::print("{:>12} {:>12} {:>6} {:>11.1f} {:>12.3f} {:>12.3f} {:>8}{}\n", size, count, "float", us, algbw, busbw,
                   wrong, rank == 0 ? "" : fmt::format("  (rank {})", rank));
      }
      std::fflush(stdout);
    }
    ring.finish();
    if (wrong_total) {
      fmt::print(stderr, "spyre-dma: error: allreduce: rank {}: {} elements summed wrong\n", rank, wrong_total);
      return 1;
    }
    if (rank == 0) fmt::print("# all-reduce: every size checked on every rank: ok\n");
    return 0;
  } catch (const Failure& f) {
    fmt::print(stderr, "spyre-dma: error: allreduce: rank {}: {}\n", rank, f.what);
    return 1;
  }
}
}  // namespace
#else
namespace {
int run_ucx(const AllreduceOptions&, int, const std::vector<std::uint64_t>&) {
  fmt::print(stderr, "spyre-dma: error: allreduce: this build has no UCX (libucx-dev, configured with "
                     "-DSPYRE_DMA_RDMA=ON); --backend sim runs on the model\n");
  return 2;
}
}  // namespace
#endif

int run_allreduce(const AllreduceOptions& o) {
  const int ranks = o.ranks >= 0 ? o.ranks : from_env("SLURM_NTASKS");
  if (ranks < 2) return usage("give --ranks N (2 or more), or run under Slurm (SLURM_NTASKS)");
  std::vector<std::uint64_t> sizes = parse_size_list(o.sizes);
  for (std::uint64_t s : sizes) {
    if (s % 4 != 0) return usage(fmt::format("--sizes: {} bytes is not a whole number of float32", s));
  }
  if (o.backend != "sim" && !o.trace.empty()) {
    return usage("--trace: only --backend sim has a trace (of the simulated cluster)");
  }
  if (o.backend == "sim") {
    if (ranks > 64) return usage(fmt::format("--ranks {}: a simulated cluster has at most 64 nodes", ranks));
    return run_allreduce_sim(o, ranks, sizes);
  }
  return run_ucx(o, ranks, sizes);
}

}  // namespace spyre_dma_cli
