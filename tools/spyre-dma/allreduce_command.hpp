// spyre-dma allreduce: a ring all-reduce (sum of float32) over remote memory, one process per
// rank, reporting as nccl-tests does (size, time, algorithm and bus bandwidth). The ranks find each
// other through a folder every rank can read (a shared file system, or one machine's /tmp): each
// writes its handle there and reads its neighbours'. Under Slurm, the rank and the number of ranks
// come from SLURM_PROCID and SLURM_NTASKS:
//
//   srun -n 4 spyre-dma allreduce --exchange /shared/job-42 --sizes 1MiB..64MiB
//   spyre-dma allreduce --ranks 3 --rank 0 --exchange /tmp/ar &   (and ranks 1, 2)
//   spyre-dma allreduce --backend sim --ranks 4 --sizes 1MiB..64MiB   (every rank in this process)
//
// The algorithm: the buffer in N chunks; N-1 steps of reduce-scatter (each rank puts a chunk into
// its successor's scratch, then a flag; the successor adds it to its own), then N-1 steps of
// all-gather (each rank puts a reduced chunk into its successor's buffer, then a flag). A put
// completes once its data is in the peer's memory, so a flag never overtakes its data. The first
// iteration of each size is checked: every element must be the exact sum of the ranks' inputs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace spyre_dma_cli {

struct AllreduceOptions {
  std::string backend = "ucx";  // "ucx": one process per rank; "sim": every rank a node of a simulated cluster here
  std::string preset = "ndr400-pair";  // sim: the model preset (network.nodes becomes --ranks)
  std::string config;           // sim: a JSON model configuration instead
  std::string trace;            // sim: the cluster's Perfetto trace
  std::string exchange;
  int ranks = -1;  // -1: SLURM_NTASKS
  int rank = -1;   // -1: SLURM_PROCID
  std::string sizes = "64KiB..16MiB";
  unsigned iterations = 20;
  double timeout_s = 120;
};

CLI::App* add_allreduce_command(CLI::App& app, AllreduceOptions& options);
// 0 done and every check passed, 1 a transfer failed, timed out or summed wrong, 2 usage.
int run_allreduce(const AllreduceOptions& options);
// --backend sim (allreduce_sim.cpp), `ranks` nodes, the sizes parsed and checked.
int run_allreduce_sim(const AllreduceOptions& options, int ranks, const std::vector<std::uint64_t>& sizes);

}  // namespace spyre_dma_cli
