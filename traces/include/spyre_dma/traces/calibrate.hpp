// Calibrating the model against a captured trace: the model parameters a capture can determine
// are fitted to its captured durations by replaying the trace on the model (replay_on_sim) for
// each candidate, and the result is a configuration file the model's loader reads (--config).
// docs/traces.md ("Calibrate") gives the method and the measured results.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "spyre_dma/model/sim_config.hpp"
#include "spyre_dma/traces/compare.hpp"
#include "spyre_dma/traces/replay.hpp"
#include "spyre_dma/traces/trace.hpp"

namespace spyre_dma::traces {

// Which copies a fit uses: a size range, or alternate halves of the distinct sizes (sorted
// ascending, the smallest is index 0: "even" takes sizes 0, 2, 4, ...). Text forms:
//   "all", "below:4MiB", "atleast:1MB", "range:64KiB:4MiB" (lower bound included, upper excluded),
//   "even", "odd".
// Units: KiB, MiB, GiB and K, M, G are binary; kB, KB, MB, GB decimal (bandwidthTest's sizes are).
struct OpSelection {
  std::string text = "all";
  std::uint64_t lo = 0;            // bytes >= lo
  std::uint64_t hi = UINT64_MAX;   // bytes < hi
  int half = -1;                   // -1 none, 0 even, 1 odd
};
// Throws std::invalid_argument naming the text.
OpSelection parse_selection(const std::string& text);
std::uint64_t parse_bytes(const std::string& text);

// Per op of `trace`: whether it is a copy or fill that `selection` takes.
std::vector<bool> select_ops(const Trace& trace, const OpSelection& selection);

// `mask` (one entry per op of `trace`) narrowed to the first `per_size` copies of each size
// (direction, host memory, bytes) it selects, in trace order; 0: `mask` as is. Copies the
// capture's caller called together (each called before it saw one of the others done, by their
// captured host times) count as one, so that a transfer split over streams is kept whole or left
// out whole; without host times each copy counts alone.
std::vector<bool> first_copies_per_size(const Trace& trace, std::vector<bool> mask, std::size_t per_size);

// A trace with the copies and fills `keep` does not select removed (other ops kept, dependencies
// on removed ops dropped, unused allocations removed).
Trace sub_trace(const Trace& trace, const std::vector<bool>& keep);

struct FitParameter {
  std::string key;       // dotted configuration key, "device.dma_engine_gbps"
  double initial = 0;
  double value = 0;
  double lo = 0, hi = 0;  // search range: inside the physical bounds, where the key has some
  std::string why;       // what in the capture determines it
  // The fit copies whose error this parameter's steps minimise: those of bytes in
  // [min_bytes, max_bytes), pageable ones only when `pageable`. A parameter is judged by the
  // copies it governs (the large copies' bandwidth by the large copies), so that where the
  // model's shape differs from the device's at one end of the sizes the other end is not bent
  // to compensate.
  std::uint64_t min_bytes = 0;
  std::uint64_t max_bytes = UINT64_MAX;
  bool pageable = false;
  // The paths it governs, as direction_name() names them or their first word ("h2d" takes
  // "h2d registered" and "h2d pageable"); empty: every path. The device's DMA engine is judged
  // by host copies, its memory by device copies and fills, so that a profile's HBM-speed
  // device copies do not pull the host copies' bandwidth up (or the other way round).
  std::vector<std::string> paths;
  // What its physics allows (docs/traces.md, "Calibrate"); `bounds` says why, and is empty for a
  // key without known bounds (its search range stands in).
  double physical_lo = 0, physical_hi = 0;
  std::string bounds;
  // How well the fit copies determine it: the standard error of ln(value), from the fit
  // linearised around its result (infinity: the copies cannot tell it from the others).
  double se_log = 0;
};

// A predicted (or fitted) copy's time with the interval the calibration's uncertainty gives it:
// the parameters' covariance carried through the copy's sensitivities, and the fit copies' own
// scatter about the model.
struct PredictionInterval {
  std::size_t rank = 0;  // which trace (calibrate_together), 0 for one
  std::uint64_t id = 0;  // the op
  bool fit = false;      // a fit copy; else held out
  std::uint64_t bytes = 0;
  std::string direction;
  double captured_ns = 0, simulated_ns = 0, lo_ns = 0, hi_ns = 0;
  bool inside() const noexcept { return captured_ns >= lo_ns && captured_ns <= hi_ns; }
};
inline constexpr double kPredictionLevel = 0.90;  // of every PredictionInterval

struct CalibrateOptions {
  spyre_dma::model::SimConfig base;  // the starting point (a preset or a configuration file)
  OpSelection fit;                   // copies the fit uses; the rest are the holdout
  std::vector<std::string> parameters;  // keys to fit; empty: chosen from the trace
  spyre_dma::model::Fidelity fidelity = spyre_dma::model::Fidelity::kBurst;
  std::size_t max_replays = 60;      // the fit stops when it has used these (a converged fit stops sooner)
  // The fit replays at most this many copies of each size (direction, host memory, bytes), the
  // first ones in trace order; 0: all. Every copy after the first of a run of back-to-back
  // copies adds the same time to its stream, so two carry what ten do (bandwidthTest's loops)
  // at a fraction of the replay time. The held-out copies are all compared.
  std::size_t fit_copies_per_size = 2;
  // The replay's staging piece when it is not fitted (ReplayOptions::staging_buffer_bytes; 0:
  // the engine's default).
  std::size_t staging_buffer_bytes = 0;
  // calibrate_together(): the ranks (indices into its traces) whose copies the fit uses; empty:
  // every rank. The other ranks replay whole alongside every candidate (their traffic is the
  // node's) and all their copies are held out: fit on one rank, predict another.
  std::vector<std::size_t> fit_ranks;
  // calibrate(): the trace is one rank of a node of this many devices (0 or 1: it runs alone). It
  // runs on device 0 of a server of them, arranged as `base`'s topology, and the same profile on
  // every other device stands for the other ranks' traffic (data-parallel ranks copy what it
  // copies, when it does), so that what the node's shared switches and host memory take from it
  // is not put on its own parameters. Only rank 0's copies are compared.
  std::size_t node_devices = 0;
};

// The fit parameter of the replay's staging piece (ReplayOptions::staging_buffer_bytes), not a
// model configuration key: it is the driver's behaviour, how many bytes it stages before the
// device may start.
inline constexpr const char* kStagingPieceKey = "engine.staging_buffer_bytes";

struct CalibrationResult {
  spyre_dma::model::SimConfig config;  // base with the fitted values
  std::size_t staging_buffer_bytes = 0;  // the replay's staging piece (fitted or given; 0: default)
  std::vector<FitParameter> parameters;
  std::size_t replays = 0;
  // On the fit copies: sqrt(mean(ln(simulated / captured)^2)), simulated as compare() has it:
  // the time each copy adds to its stream.
  double rms_log_error = 0;
  double initial_rms_log_error = 0;
  Comparison fit;             // the fitted configuration on the fit copies
  Comparison holdout;         // ... on the other copies (no ops when the fit used all)
  std::string fit_selection;
  // The parameters the fit copies could not determine (a step moves them too little), left at the
  // base's values.
  std::vector<std::string> unidentified;
  // Every compared copy (not bounds) with its kPredictionLevel interval; the share of held-out and
  // of fit copies whose captured time lies inside (0 when there are none).
  std::vector<PredictionInterval> intervals;
  double holdout_coverage = 0, fit_coverage = 0;
  std::vector<std::string> notes;

  // A configuration file: the base preset's name and every key whose value differs from it
  // (the staging piece is a replay option, not part of it: compare --staging-buffer).
  nlohmann::json preset_json() const;
  // preset_json() as a configuration file, atomically, in strict JSON, with an "about" object
  // saying where it came from (`source`, the trace's header.source), its fit and error, and the
  // staging piece to replay it with; the model's loader reads it back (--config).
  void write_config_file(const std::string& path, const std::string& source) const;
  nlohmann::json to_json() const;
  std::string summary() const;
};

// The parameters calibrate() fits when none are named: those the fit copies determine.
std::vector<FitParameter> default_parameters(const Trace& fit_trace, const spyre_dma::model::SimConfig& base);

// The base configuration a trace's header suggests: the preset whose link matches header.link
// ("PCIe Gen3 x16" -> gen3x16), else the default preset with that generation and width, else the
// default preset. `note` says which.
spyre_dma::model::SimConfig base_for_header(const Header& header, std::string* note);

// The model configuration a tool runs a trace on: the configuration file `config_path` if given,
// else the preset `preset` if given, else the base the trace's header suggests (base_for_header(),
// which `note` then explains; the default preset when `header` is null), with `fidelity` applied
// ("tlp" or "burst"; "" keeps the configuration's). Throws std::invalid_argument naming the option
// ("preset and config: give one", "fidelity \"x\": expected tlp or burst"), ConfigError for an
// unknown preset or a bad file.
spyre_dma::model::SimConfig model_config_for(const std::string& preset, const std::string& config_path,
                                             const Header* header, const std::string& fidelity, std::string* note);

// Fits, then replays the whole trace once with the result for the fit and holdout comparisons
// (on a node of options.node_devices, with the other ranks' traffic). Throws TraceError when the
// selection leaves no copy with a captured duration above resolution, std::invalid_argument for
// an unknown parameter key or fit_ranks given (that is calibrate_together's), ConfigError for a
// node the model cannot build.
CalibrationResult calibrate(const Trace& trace, const CalibrateOptions& options);

// Fits one configuration to several ranks' profiles of one node, replayed together: trace i on
// device i of the server options.base describes (replay_together), so that copies slowed by the
// node's other traffic (a shared switch uplink, host memory) are judged with that traffic
// present rather than bending the device's parameters. The server has one device per trace, in
// the arrangement options.base's topology gives (as trace replay's): on dgx-a100-gen4 two traces
// sit behind one switch. The default parameters are those any rank's fit copies determine; the
// fit, holdout and error cover every rank's copies, rank after rank (options.fit_ranks: only
// those ranks' copies are fitted; the others replay alongside and are held out). Throws as
// calibrate() does, std::invalid_argument for no trace, a null one or a fit rank out of range,
// and ConfigError for a server the model cannot build.
CalibrationResult calibrate_together(const std::vector<const Trace*>& ranks, const CalibrateOptions& options);

}  // namespace spyre_dma::traces
