// `spyre-dma validate`: the standard validation of a backend against the model (docs/validation.md).
//   1. a size sweep on the backend (H2D and D2H, registered and pageable, each stream count),
//      timed in the time --timing names (device, the default, or host), median of --repeat
//      runs, recorded as a trace;
//   2. the trace replayed on the model configured for the same link (--model-preset) and
//      compared op by op;
//   3. the model calibrated on one size range (--fit-sizes) and checked: registered copies of
//      --check-sizes, every group of the held-out copies and of the fit copies, each within
//      --tolerance by median |error|, and no fit group made worse by the calibration;
//   4. report.md, report.json, trace.jsonl, compare.json and compare-host.json (the replay in
//      device and in host time), calibrated.json and plot.png in --out.
// Exit status: 0 the check passed; 1 it failed or a transfer failed; 2 a usage error.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "backend.hpp"

namespace spyre_dma_cli {

struct ValidateOptions {
  BackendOptions backend = sim_backend();  // --backend and its settings (sim: --preset, the "device")
  std::string model_preset;  // the model to compare with; default: --preset, else by backend
  std::string sizes = "4KiB..1GiB";
  int repeat = 3;
  std::vector<int> streams{1, 4};
  std::vector<std::string> memory{"registered", "pageable"};
  std::string out;
  std::string fit_sizes = "below:64MiB";
  std::string check_sizes = "atleast:64MiB";
  double tolerance = 0.05;
  // What the sweep reports and the check judges (docs/engine.md, "Timing"): "device" (first CB
  // start to last CB end) or "host" (the call to the completion the engine saw, staging included).
  std::string timing = "device";
  bool no_calibrate = false;
  bool no_plot = false;
  std::string fidelity = "burst";  // of the replays
  double timeout_s = 60;           // per transfer
  // The model replays the first this many copies of each direction, host memory and size (the
  // rest of a point's runs add nothing the first ones do not show; the replay of large sizes is
  // what takes the time). 0: all.
  int replay_copies = 2;

 private:
  static BackendOptions sim_backend() {
    BackendOptions b;
    b.name = "sim";
    return b;
  }
};

CLI::App* add_validate_command(CLI::App& app, ValidateOptions& options);
int run_validate(const ValidateOptions& options);

}  // namespace spyre_dma_cli
