// spyre-dma rdma-bench: remote memory between two processes (or nodes) over UCX, in the style of
// perftest's ib_write_bw / ib_read_lat, or between two nodes of a simulated cluster (--backend sim,
// one process: the same table in simulated time). Over UCX one side serves a range, the other puts
// into it and gets from it:
//
//   spyre-dma rdma-bench --serve handle.txt [--bytes 64MiB] [--timeout 120s]
//   spyre-dma rdma-bench --connect handle.txt [--sizes 4KiB..4MiB] [--iterations N] [--op put,get]
//                        [--verify] [--json FILE]
//   spyre-dma rdma-bench --backend sim [--preset ndr400-pair | --config FILE] [--sizes ...]
//
// The server exposes a range with guard bytes on each side, writes its handle (one line of text,
// spyre_dma/rdma/remote_handle.hpp) to the file atomically, and serves until the client writes
// FILE.done. With --verify the client first fills the whole range with a seeded pattern by puts
// and reads it back by gets; the server then checks that its memory holds that pattern and that no
// guard byte changed. The table: per size, bandwidth (a window of transfers in flight) and the
// latency of one transfer at a time (median), for put and get.
#pragma once

#include <cstdint>
#include <string>

namespace CLI {
class App;
}

namespace spyre_dma_cli {

struct RdmaBenchOptions {
  std::string backend = "ucx";  // "ucx": two processes; "sim": two nodes of a simulated cluster here
  std::string preset = "ndr400-pair";  // sim: the model preset (network.nodes becomes 2)
  std::string config;           // sim: a JSON model configuration instead
  std::string trace;            // sim: the cluster's Perfetto trace
  std::string serve;            // the handle file to write (server)
  std::string connect;          // the handle file to read (client)
  std::uint64_t bytes = 64ull << 20;
  std::string sizes = "4KiB..4MiB";
  unsigned iterations = 200;
  unsigned window = 16;
  std::string ops = "put,get";
  bool verify = false;
  std::string json;
  double timeout_s = 120;
};

CLI::App* add_rdma_bench_command(CLI::App& app, RdmaBenchOptions& options);
// The exit status: 0 done (and verified), 1 a transfer failed or the memory was wrong, 2 usage.
int run_rdma_bench(const RdmaBenchOptions& options);
// --backend sim (rdma_bench_sim.cpp): the table for the operations asked for, in simulated time.
int run_rdma_bench_sim(const RdmaBenchOptions& options, bool put, bool get);

}  // namespace spyre_dma_cli
