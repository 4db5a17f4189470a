// `spyre-dma trace import | compare | calibrate`: the analysis verbs of the `trace` command.
//   import     a Kineto (PyTorch profiler), bandwidthTest, nvbandwidth, rocm-bandwidth-test or
//              hipBusBandwidth capture -> a trace file
//   compare    replay a captured trace on the model, compare simulated with captured durations
//   calibrate  fit the model's parameters to a captured trace, write a configuration file
// Exit status: 0 success; 1 a run-time failure; 2 a usage error or bad input (the message names
// the file, line and field).
#pragma once

#include <CLI/CLI.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace spyre_dma_cli {

struct TraceAnalysisOptions {
  // import
  std::string from;
  std::string input;
  std::string out;
  std::string device;
  std::string link;
  std::string buffer_size;  // nvbandwidth: its --bufferSize (a size; "" the version's default)
  // compare and calibrate
  std::string captured;
  std::string backend = "sim";
  std::string preset;
  std::string config;
  std::string fidelity;
  std::string json;
  std::string plot;
  std::string staging_buffer;  // the replay's staging piece (a size; "" the engine's default)
  // compare: consecutive devices of a multi-device trace's server per PCIe switch (0: a root port
  // each); -1: the trace header's extra.devices_per_switch, else the configuration's
  int devices_per_switch = -1;
  std::string timing = "device";  // compare: which time, "device" or "host" (docs/engine.md, "Timing")
  int top = 5;                     // compare: the worst ops listed after the table (0: none)
  // calibrate
  std::vector<std::string> more_ranks;  // further ranks' traces of the node: fitted together
  std::vector<std::size_t> fit_ranks;    // with more_ranks: the ranks whose copies are fitted
  std::string fit_sizes;
  std::string fit_half;
  std::vector<std::string> params;
  std::size_t max_replays = 60;
  std::size_t fit_copies = 2;
  std::size_t node = 0;  // the trace is one rank of a node of this many devices (0: alone)
};

// Adds the three verbs to `trace`, with options of their own that live as long as the program.
// Each runs from its parse callback and ends the process with its exit status, so the tool's
// main needs no dispatch for them.
void add_trace_analysis_commands(CLI::App& trace);

int run_trace_import(const TraceAnalysisOptions& options);
int run_trace_compare(const TraceAnalysisOptions& options);
int run_trace_calibrate(const TraceAnalysisOptions& options);

}  // namespace spyre_dma_cli
