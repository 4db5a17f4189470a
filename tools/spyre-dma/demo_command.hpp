// `spyre-dma demo`: opens an engine on a backend, runs the transfer size sweep (sweep.hpp),
// prints the table and optionally writes the results as JSON.
#pragma once

#include <string>
#include <vector>

#include "backend.hpp"

namespace CLI {
class App;
}

namespace spyre_dma_cli {

struct DemoOptions {
  std::string sizes = "4KiB..64MiB";  // parsed with parse_size_list()
  int repeat = 5;
  int streams = 1;
  std::string json;  // empty: no JSON file
  BackendOptions backend;  // --backend and its settings
  bool dump_config = false;  // print the resolved backend configuration and exit
  std::string plot;          // PNG of bandwidth and latency against size (needs the JSON)
  std::vector<std::string> directions{"h2d", "d2h"};
  std::vector<std::string> memory{"registered", "pageable"};
  double timeout_s = 10;
  std::string timing;  // "device", "host"; empty: device time where the device has a clock, else wall
};

// Adds the `demo` subcommand to `app`; its options are stored into `options`.
CLI::App* add_demo_command(CLI::App& app, DemoOptions& options);

// Runs the demo; returns the process exit status (0 ok, 1 a failed or wrong transfer,
// 2 an option value found unusable only at run time, e.g. an unwritable --json file).
int run_demo(const DemoOptions& options);

}  // namespace spyre_dma_cli
