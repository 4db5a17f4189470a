#include "rdma_bench_command.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include "cli_checks.hpp"
#include "peer_files.hpp"
#include "rdma_bench_table.hpp"
#include "size_spec.hpp"
#include "spyre_dma/traces/output_file.hpp"

#if SPYRE_DMA_HAVE_RDMA
#include "spyre_dma/rdma/ucx_node.hpp"
#endif

namespace spyre_dma_cli {

CLI::App* add_rdma_bench_command(CLI::App& app, RdmaBenchOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "rdma-bench", "remote memory between two processes over UCX: one serves a range, the other puts and gets "
                    "(bandwidth and latency per size, as perftest's ib_write_bw and ib_read_lat)");
  auto* serve = cmd->add_option("--serve", o.serve, "serve: expose a range and write its handle to FILE");
  auto* connect = cmd->add_option("--connect", o.connect, "client: read the handle from FILE and run the table");
  serve->excludes(connect);
  cmd->add_option_function<std::string>(
         "--bytes", [&o](const std::string& v) { o.bytes = parse_size(v); }, "serve: the range's size (default 64MiB)")
      ->check(size_value());
  cmd->add_option("--sizes", o.sizes, "client: transfer sizes (default 4KiB..4MiB)")->check(size_list());
  cmd->add_option("--iterations", o.iterations, "client: transfers per size for bandwidth (default 200)")
      ->check(CLI::Range(1u, 1000000u));
  cmd->add_option("--window", o.window, "client: transfers in flight for bandwidth (default 16)")
      ->check(CLI::Range(1u, 1024u));
  cmd->add_option("--op", o.ops, "client: put, get or put,get (default)");
  cmd->add_flag("--verify", o.verify,
                "client: fill the whole range with a seeded pattern by puts, read it back by gets, and have the "
                "server check its memory and guard bytes");
  cmd->add_option("--json", o.json, "client: write the table as JSON to FILE");
  cmd->add_option("--timeout", o.timeout_s, "seconds to wait for the peer and for each transfer (default 120)")
      ->check(timeout_seconds());
  cmd->add_option("--backend", o.backend,
                  "ucx (default): two processes over UCX; sim: two nodes of a simulated cluster in this process, "
                  "times simulated")
      ->check(CLI::IsMember({"ucx", "sim"}));
  cmd->add_option("--preset", o.preset, "sim: model preset (default ndr400-pair)");
  cmd->add_option("--config", o.config, "sim: JSON model configuration file");
  cmd->add_option("--trace", o.trace,
                  "sim: write the cluster's Perfetto trace (NIC completions; every packet with trace_tlps) to FILE");
  return cmd;
}

namespace {

int usage(const std::string& what) {
  fmt::print(stderr, "spyre-dma: error: rdma-bench: {}\n", what);
  return 2;
}

// --op: put, get or both; false on a word that is neither.
bool parse_ops(const std::string& ops, bool do_op[2]) {
  for (std::string_view rest = ops; !rest.empty();) {
    const std::size_t comma = rest.find(',');
    const std::string_view w = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    if (w == "put") do_op[0] = true;
    else if (w == "get") do_op[1] = true;
    else return false;
  }
  return do_op[0] || do_op[1];
}

}  // namespace

#if SPYRE_DMA_HAVE_RDMA
namespace {

using spyre_dma::ErrorCode;
using spyre_dma::Status;
using spyre_dma::rdma::RemoteHandle;
using spyre_dma::rdma::Transfer;
using spyre_dma::rdma::UcxNode;
using Clock = std::chrono::steady_clock;

constexpr std::uint64_t kGuard = 4096;
constexpr std::uint8_t kGuardByte = 0xa5;
constexpr std::uint64_t kPatternSeed = 0x5eed0f5eed;

// The verify pattern: byte i of the range, from the seed (SplitMix64 of its 8-byte word).
std::uint8_t pattern(std::uint64_t i) {
  std::uint64_t z = kPatternSeed + (i / 8) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<std::uint8_t>(z >> (8 * (i % 8)));
}

int serve(const RdmaBenchOptions& o) {
  UcxNode node(UcxNode::Progress::kThread);
  std::vector<std::uint8_t> memory(o.bytes + 2 * kGuard, kGuardByte);
  std::uint8_t* range = memory.data() + kGuard;
  const RemoteHandle handle = node.expose(range, o.bytes);
  const std::string done = o.serve + ".done";
  std::filesystem::remove(done);
  spyre_dma::traces::write_file_atomically(o.serve, handle.to_text() + "\n");
  fmt::print("serving {} bytes; handle in {}; waiting for {}\n", o.bytes, o.serve, done);
  std::fflush(stdout);
  const bool finished = wait_for_file(done, to_timeout(o.timeout_s));
  std::filesystem::remove(o.serve);
  if (!finished) {
    fmt::print(stderr, "spyre-dma: error: rdma-bench: no client finished within {} s ({} never appeared)\n",
               o.timeout_s, done);
    return 1;
  }
  const std::string word = read_small_file(done);
  std::filesystem::remove(done);
  int status = 0;
  const bool guards = std::all_of(memory.begin(), memory.begin() + kGuard, [](auto b) { return b == kGuardByte; }) &&
                      std::all_of(memory.end() - kGuard, memory.end(), [](auto b) { return b == kGuardByte; });
  if (!guards) {
    fmt::print("guard bytes: CHANGED (a write left the exposed range)\n");
    status = 1;
  } else {
    fmt::print("guard bytes: intact\n");
  }
  if (word.rfind("verify", 0) == 0) {
    std::uint64_t wrong = 0, first = 0;
    for (std::uint64_t i = 0; i < o.bytes; ++i) {
      if (range[i] != pattern(i) && wrong++ == 0) first = i;
    }
    if (wrong) {
      fmt::print("memory: {} bytes differ from the client's pattern, the first at offset {}\n", wrong, first);
      status = 1;
    } else {
      fmt::print("memory: verified, all {} bytes hold the client's pattern\n", o.bytes);
    }
  } else if (word.rfind("abort", 0) == 0) {
    fmt::print("the client gave up: {}", word);
    status = 1;
  }
  return status;
}

struct Row {
  std::uint64_t bytes;
  unsigned iterations;
  double gbps[2] = {0, 0};     // put, get
  spyre_dma::Percentiles lat_us[2];
};

int client(const RdmaBenchOptions& o) {
  if (!wait_for_file(o.connect, to_timeout(o.timeout_s))) {
    fmt::print(stderr, "spyre-dma: error: rdma-bench: no handle in {} within {} s\n", o.connect, o.timeout_s);
    return 1;
  }
  const RemoteHandle remote = read_handle_file(o.connect);
  bool do_op[2] = {false, false};
  if (!parse_ops(o.ops, do_op)) return usage(fmt::format("--op '{}': expected put, get or put,get", o.ops));
  std::vector<std::uint64_t> sizes = parse_size_list(o.sizes);
  for (std::uint64_t s : sizes) {
    if (s > remote.size) {
      return usage(fmt::format("--sizes: {} is larger than the served range of {} bytes (the server's --bytes)", s,
                               remote.size));
    }
  }
  const auto timeout = to_timeout(o.timeout_s);
  UcxNode node(UcxNode::Progress::kCaller);
  const std::string done = o.connect + ".done";
  auto finish = [&](const std::string& word) { spyre_dma::traces::write_file_atomically(done, word + "\n"); };
  auto fail = [&](const Status& s) {
    fmt::print(stderr, "spyre-dma: error: rdma-bench: {}\n", s.to_string());
    finish("abort " + s.to_string());
    return 1;
  };

  const std::uint64_t largest = std::max<std::uint64_t>(*std::max_element(sizes.begin(), sizes.end()), 4 << 20);
  std::vector<std::uint8_t> local(std::min<std::uint64_t>(largest, remote.size) * o.window);
  std::vector<Row> rows;
  for (std::uint64_t size : sizes) {
    Row r;
    r.bytes = size;
    r.iterations = o.iterations;
    // Transfers go to successive places in the range, wrapping, so a window never overlaps itself.
    const std::uint64_t slots = std::max<std::uint64_t>(1, remote.size / size);
    for (int op = 0; op < 2; ++op) {
      if (!do_op[op]) continue;
      auto start_one = [&](unsigned k) {
        std::uint8_t* buf = local.data() + (k % o.window) * size;
        const std::uint64_t at = (k % slots) * size;
        // Puts complete locally and one flush ends the run, as perftest's put_bw measures.
        return op == 0 ? node.put(remote, at, buf, size, UcxNode::Completion::kLocal) : node.get(buf, remote, at, size);
      };
      std::vector<Transfer> window(o.window);
      const auto t0 = Clock::now();
      for (unsigned k = 0; k < o.iterations; ++k) {
        Transfer& slot = window[k % o.window];
        if (slot.valid()) {
          if (Status s = slot.wait(timeout); !s.ok()) return fail(s);
        }
        slot = start_one(k);
      }
      for (Transfer& t : window) {
        if (t.valid()) {
          if (Status s = t.wait(timeout); !s.ok()) return fail(s);
        }
      }
      if (op == 0) {
        if (Status s = node.flush(remote).wait(timeout); !s.ok()) return fail(s);
      }
      const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
      r.gbps[op] = static_cast<double>(size) * o.iterations / secs / 1e9;
      // Every op one at a time, for the distribution (ib_*_lat reports its percentiles too).
      std::vector<double> us;
      for (unsigned k = 0; k < o.iterations; ++k) {
        const auto l0 = Clock::now();
        // One transfer complete end to end: a put until its data is in the peer's memory.
        const Transfer t = op == 0 ? node.put(remote, (k % slots) * size, local.data(), size) : start_one(k);
        if (Status s = t.wait(timeout); !s.ok()) return fail(s);
        us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - l0).count());
      }
      r.lat_us[op] = spyre_dma::percentiles(std::move(us));
    }
    rows.push_back(r);
  }
  print_rdma_table_header("GB/s");
  nlohmann::json out = nlohmann::json::array();
  for (const Row& r : rows) {
    print_rdma_table_row(r.bytes, r.iterations, do_op, r.gbps, r.lat_us, 3);
    nlohmann::json j = {{"bytes", r.bytes}, {"iterations", r.iterations}};
    if (do_op[0]) j["put"] = rdma_json_cell("gbps", r.gbps[0], r.lat_us[0]);
    if (do_op[1]) j["get"] = rdma_json_cell("gbps", r.gbps[1], r.lat_us[1]);
    out.push_back(j);
  }
  if (!o.json.empty()) spyre_dma::traces::write_file_atomically(o.json, out.dump(2) + "\n");
  if (o.verify) {
    // After the table (whose puts leave the range as they please): the whole range, in pieces: out by puts, back by gets into a second buffer, compared.
    const std::uint64_t piece = std::min<std::uint64_t>(4 << 20, remote.size);
    std::vector<std::uint8_t> back(piece);
    for (std::uint64_t off = 0; off < remote.size; off += piece) {
      const std::uint64_t n = std::min(piece, remote.size - off);
      for (std::uint64_t i = 0; i < n; ++i) local[i] = pattern(off + i);
      if (Status s = node.put(remote, off, local.data(), n, timeout); !s.ok()) return fail(s);
    }
    for (std::uint64_t off = 0; off < remote.size; off += piece) {
      const std::uint64_t n = std::min(piece, remote.size - off);
      if (Status s = node.get(back.data(), remote, off, n, timeout); !s.ok()) return fail(s);
      for (std::uint64_t i = 0; i < n; ++i) {
        if (back[i] != pattern(off + i)) {
          return fail(Status(ErrorCode::kRemoteAccess, fmt::format("get read back the wrong byte at offset {}", off + i)));
        }
      }
    }
    fmt::print("verified: {} bytes put and read back\n", remote.size);
  }

  finish(o.verify ? "verify" : "done");
  return 0;
}

int run_ucx(const RdmaBenchOptions& o) {
  if (o.serve.empty() == o.connect.empty()) {
    fmt::print(stderr, "spyre-dma: error: rdma-bench: give --serve FILE (one side) or --connect FILE (the other)\n");
    return 2;
  }
  if (!o.serve.empty() && o.bytes == 0) {
    fmt::print(stderr, "spyre-dma: error: rdma-bench: --bytes must be above 0\n");
    return 2;
  }
  return o.serve.empty() ? client(o) : serve(o);
}

}  // namespace
#else
namespace {
int run_ucx(const RdmaBenchOptions&) {
  fmt::print(stderr, "spyre-dma: error: rdma-bench: this build has no UCX (libucx-dev, configured with "
                     "-DSPYRE_DMA_RDMA=ON); --backend sim runs on the model\n");
  return 2;
}
}  // namespace
#endif

int run_rdma_bench(const RdmaBenchOptions& o) {
  if (o.backend != "sim") {
    if (!o.trace.empty()) return usage("--trace: only --backend sim has a trace (of the simulated cluster)");
    return run_ucx(o);
  }
  bool do_op[2] = {false, false};
  if (!parse_ops(o.ops, do_op)) return usage(fmt::format("--op '{}': expected put, get or put,get", o.ops));
  if (!o.serve.empty() || !o.connect.empty()) return usage("--backend sim runs both nodes here: no --serve or --connect");
  if (o.bytes == 0) return usage("--bytes must be above 0");
  return run_rdma_bench_sim(o, do_op[0], do_op[1]);
}

}  // namespace spyre_dma_cli
