// `spyre-dma trace`: the trace tools. This file adds the parent subcommand and the verbs
//   trace show FILE        what a trace holds: ops by kind, bytes, streams, time span
//   trace replay FILE      replays it on a backend and reports per-op device durations
//   trace capture --out F  records a transfer workload run through the engine as a trace
// Other verbs (import, compare, calibrate) attach themselves to the parent add_trace_command()
// returns.
#pragma once

#include <string>
#include <vector>

#include "backend.hpp"

namespace CLI {
class App;
}

namespace spyre_dma_cli {

struct TraceOptions {
  std::string file;  // show / replay: the trace
  std::vector<std::string> more_files;  // replay: the traces of devices 1, 2, ... (one per device)
  // replay
  BackendOptions backend;  // replay and capture: --backend and its settings
  bool honour_start_times = false;
  bool no_verify = false;
  std::string json, perfetto;
  double timeout_s = 60;
  // capture
  std::string out;
  std::string sizes = "4KiB..1MiB";
  int repeat = 3;
  int streams = 1;
  std::vector<std::string> directions{"h2d", "d2h"};
  std::vector<std::string> memory{"registered", "pageable"};

  CLI::App* show = nullptr;
  CLI::App* replay = nullptr;
  CLI::App* capture = nullptr;
};

// Adds `trace` and its verbs show, replay and capture; returns the parent.
CLI::App* add_trace_command(CLI::App& app, TraceOptions& options);

// True when one of this file's verbs was given; run_trace then runs it and returns the exit status
// (0 ok, 1 a run-time failure such as a data mismatch or a failed op, 2 a usage error such as a
// trace file that does not read, whose TraceError is printed).
bool trace_verb_parsed(const TraceOptions& options);
int run_trace(const TraceOptions& options);

}  // namespace spyre_dma_cli
