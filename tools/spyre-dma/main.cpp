// spyre-dma: the project's command-line tool. Subcommands:
//   allreduce       a ring all-reduce over remote memory, one process per rank (allreduce_command.hpp)
//   cards           list the cards on this machine (cards_command.hpp)
//   demo            sweep transfer sizes on a device backend and print the throughput table
//   regress         run a regression suite over a range of seeds (regress_command.hpp)
//   regress-merge   merge the JSON results of regression shards
//   trace           trace show, replay and capture (trace_command.hpp)
//   serve           expose a backend's device over vfio-user (serve_command.hpp)
//   rdma-bench      remote memory between two processes over UCX (rdma_bench_command.hpp)
//   validate        sweep a backend, compare with the model, calibrate and check (validate_command.hpp)
//
// Exit status: 0 success; 1 a run-time failure (a transfer failed, stalled or delivered wrong
// data, or standard output could not be written); 2 a usage error (unknown option, bad option
// value, an output that cannot be written).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>

#include "allreduce_command.hpp"
#include "cards_command.hpp"
#include "demo_command.hpp"
#include "rdma_bench_command.hpp"
#include "regress_command.hpp"
#include "serve_command.hpp"
#include "trace_command.hpp"
#include "cli_checks.hpp"
#include "trace_analysis_command.hpp"
#include "validate_command.hpp"

int main(int argc, char** argv) {
  CLI::App app{"spyre-dma: DMA engine tool for the Spyre-class accelerator", "spyre-dma"};
  app.set_version_flag("--version", std::string("spyre-dma ") + SPYRE_DMA_VERSION);
  app.require_subcommand(1);

  spyre_dma_cli::CardsOptions cards_options;
  CLI::App* cards = spyre_dma_cli::add_cards_command(app, cards_options);
  spyre_dma_cli::DemoOptions demo_options;
  CLI::App* demo = spyre_dma_cli::add_demo_command(app, demo_options);
  spyre_dma_cli::RegressOptions regress_options;
  CLI::App* regress = spyre_dma_cli::add_regress_command(app, regress_options);
  spyre_dma_cli::MergeOptions merge_options;
  CLI::App* merge = spyre_dma_cli::add_merge_command(app, merge_options);
  spyre_dma_cli::TraceOptions trace_options;
  spyre_dma_cli::add_trace_command(app, trace_options);
  spyre_dma_cli::add_trace_analysis_commands(*app.get_subcommand("trace"));
  spyre_dma_cli::ServeOptions serve_options;
  CLI::App* serve = spyre_dma_cli::add_serve_command(app, serve_options);
  spyre_dma_cli::AllreduceOptions allreduce_options;
  CLI::App* allreduce = spyre_dma_cli::add_allreduce_command(app, allreduce_options);
  spyre_dma_cli::RdmaBenchOptions rdma_bench_options;
  CLI::App* rdma_bench = spyre_dma_cli::add_rdma_bench_command(app, rdma_bench_options);
  spyre_dma_cli::ValidateOptions validate_options;
  CLI::App* validate = spyre_dma_cli::add_validate_command(app, validate_options);
  spyre_dma_cli::refuse_negative_unsigned(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    (void)app.exit(e);  // prints the message (it names the option and the value)
    return 2;
  }

  int status = 2;
  try {
    if (cards->parsed()) status = spyre_dma_cli::run_cards(cards_options);
    else if (demo->parsed()) status = spyre_dma_cli::run_demo(demo_options);
    else if (regress->parsed()) status = spyre_dma_cli::run_regress(regress_options);
    else if (merge->parsed()) status = spyre_dma_cli::run_merge(merge_options);
    else if (serve->parsed()) status = spyre_dma_cli::run_serve(serve_options);
    else if (rdma_bench->parsed()) status = spyre_dma_cli::run_rdma_bench(rdma_bench_options);
    else if (allreduce->parsed()) status = spyre_dma_cli::run_allreduce(allreduce_options);
    else if (validate->parsed()) status = spyre_dma_cli::run_validate(validate_options);
    else if (spyre_dma_cli::trace_verb_parsed(trace_options)) status = spyre_dma_cli::run_trace(trace_options);
  } catch (const std::exception& e) {
    fmt::print(stderr, "spyre-dma: error: {}\n", e.what());
    status = 1;
  }
  // Results printed to a full disk or a closed pipe are results lost: not a success.
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    fmt::print(stderr, "spyre-dma: error: writing to standard output failed: {}\n", std::strerror(errno));
    if (status == 0) status = 1;
  }
  return status;
}
