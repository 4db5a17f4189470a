#include "spyre_dma/traces/calibrate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <stdexcept>
#include <tuple>
#include <unordered_set>

#include "spyre_dma/model/backend.hpp"
#include "spyre_dma/model/config_loader.hpp"
#include "fit_bounds.hpp"
#include "fit_uncertainty.hpp"
#include "spyre_dma/traces/output_file.hpp"
#include "spyre_dma/traces/trace_io.hpp"
#include "text_input.hpp"

namespace spyre_dma::traces {
namespace {

// Host copies from this size on tell their path's bandwidth (see default_parameters()).
constexpr std::uint64_t kBandwidthBytes = 256u << 10;

bool host_copy(const Op& op) { return op.kind == OpKind::kH2D || op.kind == OpKind::kD2H; }

using nlohmann::json;
namespace model = spyre_dma::model;

bool is_copy(const Op& op) {
  return op.kind == OpKind::kH2D || op.kind == OpKind::kD2H || op.kind == OpKind::kD2D || op.kind == OpKind::kFill;
}

// A copy the fit can use: a captured duration above the capture's resolution.
bool measurable(const Op& op, double resolution_ns) {
  return is_copy(op) && op.duration_ns && *op.duration_ns > 0 &&
         !(resolution_ns > 0 && *op.duration_ns <= resolution_ns);
}

json::json_pointer pointer(const std::string& key) {
  std::string p = "/" + key;
  std::replace(p.begin(), p.end(), '.', '/');
  return json::json_pointer(p);
}

bool is_staging_piece(const FitParameter& p) { return p.key == kStagingPieceKey; }

// The staging piece is a whole number of 4 KiB pages (the engine needs a multiple of 128 bytes).
double round_piece(double bytes) { return std::max(4096.0, 4096.0 * std::round(bytes / 4096.0)); }

// A parameter the fit copies move by less than this (d ln time / d ln value, root mean square
// over the copies it governs) is one they cannot determine: a 10% step moves them by under 0.2%.
constexpr double kMinSensitivity = 0.02;

constexpr double kZ90 = 1.6448536269514722;  // the two-sided kPredictionLevel quantile of a normal

// A parameter's interval at kPredictionLevel's confidence from its standard error, or nulls.
json interval_json(const FitParameter& p) {
  if (!std::isfinite(p.se_log)) return json::array({nullptr, nullptr});
  const double w = kZ90 * p.se_log;
  return json::array({p.value * std::exp(-w), p.value * std::exp(w)});
}

// Whether the fit copies leave a parameter so loose that its interval spans more than a factor of
// ten: its value then says little, and predictions that lean on it get wide intervals.
bool undetermined(const FitParameter& p) { return !(p.se_log * kZ90 <= std::log(10.0) / 2); }

// The value a step of 10% away from `v` takes, up unless that leaves the search range.
double step_of(const FitParameter& p, double v) {
  double y = std::min(v * 1.1, p.hi);
  if (y <= v) y = std::max(v / 1.1, p.lo);
  if (p.key == kStagingPieceKey) {
    y = round_piece(y);
    if (y == v) y = v + 4096;
  }
  return y;
}

// A parameter to fit: its start, search range, why it is fitted and the copies that judge it.
FitParameter parameter(std::string key, double initial, double lo, double hi, std::string why,
                       std::uint64_t min_bytes = 0, std::uint64_t max_bytes = UINT64_MAX, bool pageable = false,
                       std::vector<std::string> paths = {}) {
  FitParameter p;
  p.key = std::move(key);
  p.initial = p.value = initial;
  p.lo = lo;
  p.hi = hi;
  p.why = std::move(why);
  p.min_bytes = min_bytes;
  p.max_bytes = max_bytes;
  p.pageable = pageable;
  p.paths = std::move(paths);
  return p;
}

// d ln(simulated time) / d ln(value) of compared copy j between `at` and a step away.
double sensitivity(const OpComparison& at, const OpComparison& stepped, double dlog) {
  if (at.simulated_ns <= 0 || stepped.simulated_ns <= 0 || dlog == 0) return 0;
  return std::log(stepped.simulated_ns / at.simulated_ns) / dlog;
}

model::SimConfig with_values(const model::SimConfig& base, const std::vector<FitParameter>& params,
                             const std::vector<double>& values) {
  json j = model::to_json(base);
  for (std::size_t i = 0; i < params.size(); ++i)
    if (!is_staging_piece(params[i])) j[pointer(params[i].key)] = values[i];
  return model::config_from_json(j, "<calibration>");
}

std::size_t piece_of(const std::vector<FitParameter>& params, const std::vector<double>& values,
                     std::size_t fallback) {
  for (std::size_t i = 0; i < params.size(); ++i)
    if (is_staging_piece(params[i])) return static_cast<std::size_t>(values[i]);
  return fallback;
}

// Whether `p`'s steps are judged by the compared copy `o` (FitParameter::min_bytes ... paths).
bool governs(const FitParameter& p, const OpComparison& o) {
  if (o.bytes < p.min_bytes || o.bytes >= p.max_bytes) return false;
  if (p.pageable && o.direction.find("pageable") == std::string::npos) return false;
  if (p.paths.empty()) return true;
  const std::string first = o.direction.substr(0, o.direction.find(' '));
  return std::find(p.paths.begin(), p.paths.end(), o.direction) != p.paths.end() ||
         std::find(p.paths.begin(), p.paths.end(), first) != p.paths.end();
}

// Mean squared ln(simulated / captured) over the copies compare() measures (not bounds), with
// compare()'s simulated figure: the time each copy adds to its stream, which is what a GPU-side
// duration and bandwidthTest's loop time measure.
double mean_sq_log(const Comparison& c, const FitParameter* judged_by = nullptr) {
  double s = 0;
  std::size_t n = 0;
  for (const auto& o : c.ops) {
    if (o.bound) continue;
    if (judged_by && !governs(*judged_by, o)) continue;
    const double d = o.simulated_ns <= 0 ? 1e-3 : o.simulated_ns;
    const double e = std::log(d / o.captured_ns);
    s += e * e;
    ++n;
  }
  return n ? s / static_cast<double>(n) : 0;
}

// Least-squares line duration = a + b * bytes through the measurable pageable copies of at least
// `min_bytes`; false with fewer than two distinct sizes.
bool pageable_line(const Trace& t, std::uint64_t min_bytes, double* a, double* b) {
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  std::set<std::uint64_t> sizes;
  for (const Op& op : t.ops) {
    if (!measurable(op, t.header.resolution_ns) || !host_copy(op) || op.host != HostMemory::kPageable ||
        op.bytes < min_bytes)
      continue;
    const double x = static_cast<double>(op.bytes), y = *op.duration_ns;
    n += 1;
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
    sizes.insert(op.bytes);
  }
  if (sizes.size() < 2) return false;
  *b = (n * sxy - sx * sy) / (n * sxx - sx * sx);
  *a = (sy - *b * sx) / n;
  return *b > 0;
}

// The highest rate of the measurable host copies (registered or pageable) of at least min_bytes.
double max_gbps(const Trace& t, bool pageable, std::uint64_t min_bytes) {
  double best = 0;
  for (const Op& op : t.ops) {
    if (!measurable(op, t.header.resolution_ns) || op.bytes < min_bytes || !host_copy(op)) continue;
    if ((op.host == HostMemory::kPageable) != pageable) continue;
    best = std::max(best, static_cast<double>(op.bytes) / *op.duration_ns);
  }
  return best;
}

// The highest rate at which device memory moved bytes in the measurable device copies and fills of
// at least min_bytes: a copy reads and writes each byte, a fill writes it.
double max_memory_gbps(const Trace& t, std::uint64_t min_bytes) {
  double best = 0;
  for (const Op& op : t.ops) {
    if (!measurable(op, t.header.resolution_ns) || op.bytes < min_bytes) continue;
    if (op.kind != OpKind::kD2D && op.kind != OpKind::kFill) continue;
    const double moved = static_cast<double>(op.bytes) * (op.kind == OpKind::kD2D ? 2 : 1);
    best = std::max(best, moved / *op.duration_ns);
  }
  return best;
}

using detail::trim;

}  // namespace

model::SimConfig base_for_header(const Header& header, std::string* note) {
  static const std::regex re(R"(Gen\s*([1-5])\s*x\s*([0-9]+))", std::regex::icase);
  std::smatch m;
  if (!std::regex_search(header.link, m, re)) {
    if (note) *note = fmt::format("link \"{}\" names no generation and width: base preset {}", header.link,
                                  model::preset_names().front());
    return model::preset(model::preset_names().front());
  }
  const auto gen = static_cast<std::uint32_t>(std::stoul(m[1].str()));
  const auto lanes = static_cast<std::uint32_t>(std::stoul(m[2].str()));
  for (const auto& name : model::preset_names()) {
    const model::SimConfig c = model::preset(name);
    if (c.link.generation == gen && c.link.lanes == lanes) {
      if (note) *note = fmt::format("link \"{}\": base preset {}", header.link, name);
      return c;
    }
  }
  model::SimConfig c = model::preset(model::preset_names().front());
  c.link.generation = gen;
  c.link.lanes = lanes;
  if (note) *note = fmt::format("link \"{}\": base preset {} with generation {} x{}", header.link, c.preset, gen, lanes);
  return c;
}

model::SimConfig model_config_for(const std::string& preset, const std::string& config_path, const Header* header,
                                  const std::string& fidelity, std::string* note) {
  if (!preset.empty() && !config_path.empty())
    throw std::invalid_argument("preset and config: give one (a configuration file names its preset itself)");
  if (!fidelity.empty() && fidelity != "tlp" && fidelity != "burst")
    throw std::invalid_argument(fmt::format("fidelity \"{}\": expected tlp or burst", fidelity));
  model::SimConfig c;
  if (!config_path.empty()) c = model::load_config(config_path);
  else if (!preset.empty()) c = model::preset(preset);
  else if (header) c = base_for_header(*header, note);
  if (!fidelity.empty()) c.fidelity = fidelity == "tlp" ? model::Fidelity::kTlp : model::Fidelity::kBurst;
  return c;
}

std::vector<FitParameter> default_parameters(const Trace& t, const model::SimConfig& base) {
  std::vector<FitParameter> out;
  const json cfg = model::to_json(base);
  bool small = false, small_h2d = false, pageable = false;
  for (const Op& op : t.ops) {
    if (!measurable(op, t.header.resolution_ns)) continue;
    if (op.bytes < (256u << 10)) small = true;
    if (op.bytes < (64u << 10) && op.kind == OpKind::kH2D) small_h2d = true;
    if (op.host == HostMemory::kPageable) pageable = true;
  }
  // Each path's bandwidth from its own copies, and judged by them only: the host copies' by the
  // registered host copies (the DMA engine and the link), device memory's by the device copies
  // and fills (the model's DRAM); pageable copies go through staging, below. Host copies from
  // 256 KiB on: at the few GB/s of a busy node their fixed cost is a few percent of that.
  const double direct_gbps = max_gbps(t, false, kBandwidthBytes);
  const double staged_gbps = max_gbps(t, true, 1u << 20);
  const double memory_gbps = max_memory_gbps(t, 1u << 20);
  if (direct_gbps > 0) {
    out.push_back(parameter("device.dma_engine_gbps", direct_gbps, direct_gbps / 2, direct_gbps * 2,
                   "the bandwidth of the largest registered host copies; judged by registered H2D and D2H copies "
                   ">= 256 KiB",
                   kBandwidthBytes, UINT64_MAX, false, {"h2d registered", "d2h registered"}));
  }
  if (memory_gbps > 0 && cfg.contains(pointer("device.dram_gbps"))) {
    out.push_back(parameter("device.dram_gbps", memory_gbps, memory_gbps / 2, memory_gbps * 2,
                   "the bytes device memory moved in the largest device copies and fills (a copy reads and "
                   "writes); judged by D2D copies and fills >= 1 MiB",
                   1u << 20, UINT64_MAX, false, {"d2d", "fill"}));
  }
  if (pageable && staged_gbps > 0 && cfg.contains(pointer("host_cost.staging_gbps"))) {
    // A driver that stages in pieces starts the device after its first piece: the device time
    // of a copy of S > piece bytes is about (S - piece) / staging + piece / dma, a line in S
    // whose slope is 1 / staging and whose intercept is -piece * (1 / staging - 1 / dma). The
    // line through the pageable copies of 1 MiB and up gives both starting points; the fit then
    // refines them on the replays.
    double a = 0, b = 0;
    // (dma_engine_gbps 0 is no limit beyond the link: the start then leaves out piece / dma.)
    const double inv_dma = base.device.dma_engine_gbps > 0 ? 1 / base.device.dma_engine_gbps : 0.0;
    if (pageable_line(t, 1u << 20, &a, &b) && a < 0 && b > inv_dma) {
      const double gbps = 1 / b;
      const double piece = std::clamp(round_piece(-a / (b - inv_dma)), 65536.0, 16.0 * 1048576);
      out.push_back(parameter("host_cost.staging_gbps", gbps, gbps / 4, gbps * 4,
                              "the slope of device time against size of the pageable copies >= 1 MiB", 1u << 20,
                              UINT64_MAX, true, {"h2d", "d2h"}));
      out.push_back(parameter(kStagingPieceKey, piece, 65536.0, 16.0 * 1048576,
                              "the intercept of that line: the device starts after the first piece", 1u << 20,
                              UINT64_MAX, true, {"h2d", "d2h"}));
    } else {
      out.push_back(parameter("host_cost.staging_gbps", staged_gbps, staged_gbps / 4, staged_gbps * 4,
                              "the bandwidth of the largest pageable copies >= 1 MiB", 1u << 20, UINT64_MAX, true,
                              {"h2d", "d2h"}));
    }
  }
  if (small) {
    const double v = std::max(1.0, base.device.cb_overhead_ns);
    out.push_back(parameter("device.cb_overhead_ns", v, 1, 50000,
                            "the duration of small copies (fixed cost per CB); judged by copies < 256 KiB", 0,
                            256u << 10));
  }
  if (small_h2d) {
    const double v = std::max(1.0, base.link.latency_ns);
    out.push_back(parameter("link.latency_ns", v, 1, 20000,
                            "the duration of small reads (round trip); judged by H2D copies < 64 KiB", 0, 64u << 10,
                            false, {"h2d"}));
  }
  return out;
}

namespace {

// The ranks' traces replayed on `config`: one alone on a SimDevice (replay_on_sim); several at
// once on the server `config` describes, rank i on device i (replay_together).
std::vector<ReplayResult> replay_ranks(const std::vector<const Trace*>& ranks, const model::SimConfig& config,
                                       const ReplayOptions& ro) {
  if (ranks.size() == 1) return {replay_on_sim(*ranks[0], config, ro)};
  return replay_together(ranks, model::open_server(config), ro);
}

// One comparison of the copies of the ranks `judged` (indices, ascending), rank after rank.
Comparison compare_ranks(const std::vector<const Trace*>& ranks, const std::vector<ReplayResult>& results,
                         const std::vector<std::size_t>& judged) {
  Comparison all;
  for (const std::size_t i : judged) {
    Comparison c = compare(*ranks[i], results[i]);
    all.source += (all.source.empty() ? "" : " + ") + c.source;
    all.resolution_ns = std::max(all.resolution_ns, c.resolution_ns);
    all.skipped += c.skipped;
    all.ops.insert(all.ops.end(), c.ops.begin(), c.ops.end());
  }
  all.groups = group_stats(all.ops);
  return all;
}

// The parameters every rank's fit copies determine: the first rank's definition of each key,
// then the keys only later ranks determine.
std::vector<FitParameter> ranks_parameters(const std::vector<Trace>& fit_traces, const model::SimConfig& base) {
  std::vector<FitParameter> params;
  for (const Trace& t : fit_traces) {
    for (FitParameter& p : default_parameters(t, base)) {
      const bool known = std::any_of(params.begin(), params.end(), [&](const FitParameter& q) { return q.key == p.key; });
      if (!known) params.push_back(std::move(p));
    }
  }
  return params;
}

// `compared`: the ranks (from 0) whose copies are compared and held out; the others are load only.
CalibrationResult calibrate_ranks(const std::vector<const Trace*>& ranks, const CalibrateOptions& options,
                                  std::size_t compared = SIZE_MAX) {
  CalibrationResult result;
  result.fit_selection = options.fit.text;
  // Per rank: the copies the fit uses, and the trace of those it replays (the first
  // fit_copies_per_size copies of each size). A rank outside options.fit_ranks has no fit
  // copies: it replays whole, as the node's traffic.
  std::vector<std::vector<bool>> fit_masks;
  std::vector<Trace> fit_traces;
  std::vector<std::size_t> judged;  // the ranks whose copies the fit compares
  std::size_t usable = 0;
  for (std::size_t k = 0; k < ranks.size(); ++k) {
    const Trace* trace = ranks[k];
    const bool fits = options.fit_ranks.empty() ||
                      std::find(options.fit_ranks.begin(), options.fit_ranks.end(), k) != options.fit_ranks.end();
    if (!fits) {
      fit_masks.emplace_back(trace->ops.size(), false);
      fit_traces.push_back(*trace);
      continue;
    }
    judged.push_back(k);
    fit_masks.push_back(select_ops(*trace, options.fit));
    const std::vector<bool> replay_mask = first_copies_per_size(*trace, fit_masks.back(), options.fit_copies_per_size);
    fit_traces.push_back(sub_trace(*trace, replay_mask));
    for (const Op& op : fit_traces.back().ops) usable += measurable(op, trace->header.resolution_ns) ? 1 : 0;
  }
  if (usable == 0)
    throw TraceError(ranks[judged.empty() ? 0 : judged.front()]->header.source, 0, "fit",
                     fmt::format("selection \"{}\" leaves no copy with a captured duration above the resolution",
                                 options.fit.text));
  std::vector<const Trace*> rank_traces;  // what each candidate's replay runs, rank i on device i
  for (const Trace& t : fit_traces) rank_traces.push_back(&t);
  std::vector<Trace> judged_traces;  // what determines the default parameters
  for (const std::size_t k : judged) judged_traces.push_back(fit_traces[k]);

  model::SimConfig base = options.base;
  base.fidelity = options.fidelity;
  std::vector<FitParameter> params;
  if (options.parameters.empty()) {
    params = ranks_parameters(judged_traces, base);
  } else {
    const json cfg = model::to_json(base);
    const auto defaults = ranks_parameters(judged_traces, base);
    for (const auto& key : options.parameters) {
      if (key == kStagingPieceKey) {
        auto d = std::find_if(defaults.begin(), defaults.end(), [&](const FitParameter& p) { return p.key == key; });
        const double v = options.staging_buffer_bytes ? static_cast<double>(options.staging_buffer_bytes) : 4.0 * 1048576;
        params.push_back(d != defaults.end() ? *d
                                             : parameter(key, v, 65536.0, 16.0 * 1048576, "named on the command line"));
        continue;
      }
      if (!cfg.contains(pointer(key)) || !cfg[pointer(key)].is_number())
        throw std::invalid_argument(fmt::format("\"{}\" is not a numeric configuration key", key));
      auto d = std::find_if(defaults.begin(), defaults.end(), [&](const FitParameter& p) { return p.key == key; });
      if (d != defaults.end()) {
        params.push_back(*d);
      } else {
        const double v = std::max(1e-3, cfg[pointer(key)].get<double>());
        params.push_back(parameter(key, v, v / 100, v * 100, "named on the command line"));
      }
    }
  }
  if (params.empty()) result.notes.push_back("the fit copies determine no parameter: the base is kept");
  // Physical bounds: the search range and the start stay inside them.
  for (FitParameter& p : params) {
    if (const std::optional<detail::PhysicalBounds> b = detail::physical_bounds(p.key, base)) {
      p.physical_lo = b->lo;
      p.physical_hi = b->hi;
      p.bounds = b->why;
      p.lo = std::max(p.lo, b->lo);
      p.hi = std::min(p.hi, b->hi);
      if (p.lo > p.hi) p.lo = b->lo, p.hi = b->hi;  // the start the capture suggested lies outside them
    } else {
      p.physical_lo = p.lo;
      p.physical_hi = p.hi;
      result.notes.push_back(
          fmt::format("{}: no physical bounds known; the search keeps to {:.4g}..{:.4g}", p.key, p.lo, p.hi));
    }
    p.initial = std::clamp(p.initial, p.lo, p.hi);
  }

  auto replay_options = [&](const std::vector<double>& x) {
    ReplayOptions ro;
    ro.verify_data = false;  // the fit needs timings only; the final replay below checks the data
    ro.staging_buffer_bytes = piece_of(params, x, options.staging_buffer_bytes);
    return ro;
  };
  // One replay per candidate, its comparison kept: each parameter's step is judged by the error
  // of the copies it governs (FitParameter::min_bytes ...), the report by all fit copies.
  std::map<std::vector<double>, std::optional<Comparison>> cache;
  auto replayed = [&](const std::vector<double>& x) -> const std::optional<Comparison>& {
    if (auto it = cache.find(x); it != cache.end()) return it->second;
    std::optional<Comparison> c;
    try {
      c = compare_ranks(rank_traces, replay_ranks(rank_traces, with_values(base, params, x), replay_options(x)), judged);
    } catch (const model::ConfigError&) {
      // a candidate outside the loader's ranges is simply not a solution
    }
    ++result.replays;
    return cache.emplace(x, std::move(c)).first->second;
  };
  auto objective = [&](const std::vector<double>& x, const FitParameter* judged_by) {
    const auto& c = replayed(x);
    return c ? mean_sq_log(*c, judged_by) : std::numeric_limits<double>::infinity();
  };

  std::vector<double> x;
  for (const auto& p : params) x.push_back(p.initial);
  result.initial_rms_log_error = std::sqrt(objective(x, nullptr));

  // Which parameters the fit copies can determine at all: a step of each from the start. One they
  // hardly move stays at the base's value (a fit would move it at random, and a prediction would
  // inherit that).
  if (replayed(x)) {
    const Comparison start = *replayed(x);
    std::vector<FitParameter> seen;
    std::vector<double> seen_x;
    for (std::size_t i = 0; i < params.size(); ++i) {
      std::vector<double> y = x;
      y[i] = step_of(params[i], x[i]);
      const std::optional<Comparison>& c = replayed(y);
      double ss = 0;
      std::size_t n = 0;
      for (std::size_t j = 0; c && j < start.ops.size(); ++j) {
        if (start.ops[j].bound || !governs(params[i], start.ops[j])) continue;
        const double s = sensitivity(start.ops[j], c->ops[j], std::log(y[i] / x[i]));
        ss += s * s;
        ++n;
      }
      if (n > 0 && std::sqrt(ss / static_cast<double>(n)) >= kMinSensitivity) {
        seen.push_back(params[i]);
        seen_x.push_back(x[i]);
        continue;
      }
      result.unidentified.push_back(params[i].key);
      // What the replays then use: the base's value (not the start the trace suggested).
      std::string kept = "the engine's default";
      if (is_staging_piece(params[i])) {
        if (options.staging_buffer_bytes) kept = fmt::format("{}", options.staging_buffer_bytes);
      } else if (const json b = model::to_json(base); b.contains(pointer(params[i].key))) {
        kept = fmt::format("{:.4g}", b.at(pointer(params[i].key)).get<double>());
      }
      result.notes.push_back(fmt::format("{}: the fit copies cannot determine it (a 10% step moves the copies it "
                                         "governs by under 0.2%); left at the base's {}",
                                         params[i].key, kept));
    }
    if (seen.size() != params.size()) {
      params = std::move(seen);
      x = std::move(seen_x);
      cache.clear();  // its candidates were of the longer list
    }
  }

  // The fixed cost per CB starts from a one-step correction: the median gap between captured and
  // simulated durations of the small copies, which it adds to almost one to one.
  if (auto cb = std::find_if(params.begin(), params.end(), [](const FitParameter& p) { return p.key == "device.cb_overhead_ns"; });
      cb != params.end() && replayed(x)) {
    std::vector<double> gaps;
    for (const auto& o : replayed(x)->ops)
      if (!o.bound && o.bytes < (64u << 10)) gaps.push_back(o.captured_ns - o.simulated_ns);
    if (!gaps.empty()) {
      std::sort(gaps.begin(), gaps.end());
      const std::size_t i = static_cast<std::size_t>(cb - params.begin());
      std::vector<double> y = x;
      y[i] = std::clamp(x[i] + gaps[gaps.size() / 2], cb->lo, cb->hi);
      if (objective(y, &*cb) < objective(x, &*cb)) x = y;
    }
  }

  // Coordinate pattern search in log space: each parameter is tried a step up and a step down;
  // a step that helps is kept (and grows), one that does not halves. Durations are monotone in
  // each parameter, so this converges without gradients, and it is deterministic.
  std::vector<double> step(params.size(), std::log(1.5));
  const double min_step = std::log(1.003);
  while (result.replays + 2 <= options.max_replays) {
    bool active = false;
    for (std::size_t i = 0; i < params.size() && result.replays + 2 <= options.max_replays; ++i) {
      if (step[i] < min_step) continue;
      active = true;
      bool moved = false;
      for (const double dir : {+1.0, -1.0}) {
        std::vector<double> y = x;
        y[i] = std::clamp(x[i] * std::exp(dir * step[i]), params[i].lo, params[i].hi);
        if (is_staging_piece(params[i])) y[i] = round_piece(y[i]);
        if (y[i] == x[i]) continue;
        if (objective(y, &params[i]) < objective(x, &params[i])) {
          x = y;
          moved = true;
          break;
        }
      }
      step[i] = moved ? step[i] * 1.25 : step[i] / 2;
    }
    if (!active) break;
  }
  if (result.replays + 2 > options.max_replays) result.notes.push_back(fmt::format("stopped at the replay budget ({})", options.max_replays));

  for (std::size_t i = 0; i < params.size(); ++i) params[i].value = x[i];
  result.parameters = params;
  result.rms_log_error = std::sqrt(objective(x, nullptr));
  result.config = with_values(base, params, x);
  result.staging_buffer_bytes = piece_of(params, x, options.staging_buffer_bytes);

  // One replay of the whole traces with the result: the fit and the holdout side by side.
  ReplayOptions full = replay_options(x);
  full.verify_data = true;
  const std::vector<ReplayResult> r = replay_ranks(ranks, result.config, full);
  ++result.replays;
  for (std::size_t k = 0; k < r.size(); ++k) {
    if (r[k].data_ok) continue;
    const std::string who = ranks.size() > 1 ? fmt::format(" (rank {})", k) : "";
    result.notes.push_back("replay with the fitted configuration" + who + ": data mismatch: " + r[k].data_error);
  }
  for (Comparison* c : {&result.fit, &result.holdout}) c->source.clear();
  std::vector<Comparison> at_result;  // per rank
  std::vector<std::unordered_set<std::uint64_t>> fit_ids(ranks.size());
  for (std::size_t k = 0; k < ranks.size(); ++k) {
    at_result.push_back(compare(*ranks[k], r[k]));
    const Comparison& all = at_result.back();
    for (std::size_t i = 0; i < ranks[k]->ops.size(); ++i)
      if (fit_masks[k][i]) fit_ids[k].insert(ranks[k]->ops[i].id);
    if (k >= compared) continue;  // load only
    for (Comparison* c : {&result.fit, &result.holdout}) {
      c->source += (k ? " + " : "") + all.source;
      c->resolution_ns = std::max(c->resolution_ns, all.resolution_ns);
    }
    for (const auto& o : all.ops) (fit_ids[k].count(o.id) ? result.fit : result.holdout).ops.push_back(o);
  }
  result.fit.groups = group_stats(result.fit.ops);
  result.holdout.groups = group_stats(result.holdout.ops);

  // How well the parameters are known, and how far each copy's time may be off: the whole traces
  // replayed once per parameter a step from the result give every copy's sensitivities; the fit
  // copies' (with their errors) the parameters' covariance, every copy its interval.
  std::vector<std::vector<Comparison>> stepped;  // [parameter][rank]
  std::vector<double> dlog;
  for (std::size_t i = 0; i < params.size(); ++i) {
    std::vector<double> y = x;
    y[i] = step_of(params[i], x[i]);
    dlog.push_back(std::log(y[i] / x[i]));
    ReplayOptions ro = replay_options(y);
    const std::vector<ReplayResult> ry = replay_ranks(ranks, with_values(base, params, y), ro);
    ++result.replays;
    stepped.emplace_back();
    for (std::size_t k = 0; k < ranks.size(); ++k) stepped.back().push_back(compare(*ranks[k], ry[k]));
  }
  const auto small = [](const OpComparison& o) { return o.bytes < (64u << 10); };
  detail::Scatter scatter;  // of the fit copies' log errors, by kind
  for (std::size_t k = 0; k < ranks.size() && k < compared; ++k) {
    for (const OpComparison& o : at_result[k].ops) {
      if (!o.bound && fit_ids[k].count(o.id))
        scatter.add(o.direction, small(o), std::log(std::max(o.simulated_ns, 1e-3) / o.captured_ns));
    }
  }
  detail::Linearised fit_lin;
  std::vector<std::vector<double>> rows;  // per interval below
  for (std::size_t k = 0; k < ranks.size() && k < compared; ++k) {
    for (std::size_t j = 0; j < at_result[k].ops.size(); ++j) {
      const OpComparison& o = at_result[k].ops[j];
      if (o.bound) continue;
      std::vector<double> s;
      for (std::size_t i = 0; i < params.size(); ++i) s.push_back(sensitivity(o, stepped[i][k].ops[j], dlog[i]));
      const bool fit = fit_ids[k].count(o.id) > 0;
      if (fit) {
        fit_lin.sensitivity.push_back(s);
        fit_lin.variance.push_back(scatter.variance(o.direction, small(o)));
      }
      rows.push_back(std::move(s));
      result.intervals.push_back(PredictionInterval{k, o.id, fit, o.bytes, o.direction, o.captured_ns,
                                                    o.simulated_ns, 0, 0});
    }
  }
  const detail::Uncertainty u = detail::estimate(fit_lin, params.size());
  for (std::size_t i = 0; i < params.size(); ++i) result.parameters[i].se_log = u.se_log(i);
  if (!u.determined() && !params.empty())
    result.notes.push_back("the fit copies cannot tell the parameters apart (their sensitivities are dependent): "
                           "no uncertainty or intervals");
  std::size_t in_fit = 0, fit_n = 0, in_holdout = 0, holdout_n = 0;
  for (std::size_t m = 0; m < result.intervals.size(); ++m) {
    PredictionInterval& iv = result.intervals[m];
    // A kind estimated from few fit copies gets Student's wider multiplier.
    const bool small_copy = iv.bytes < (64u << 10);
    const std::size_t seen = scatter.copies(iv.direction, small_copy);
    const double w = detail::t90(seen > 1 ? seen - 1 : 1) *
                     std::sqrt(u.prediction_variance(rows[m], scatter.variance(iv.direction, small_copy)));
    iv.lo_ns = std::isfinite(w) ? iv.simulated_ns * std::exp(-w) : 0;
    iv.hi_ns = std::isfinite(w) ? iv.simulated_ns * std::exp(w) : std::numeric_limits<double>::infinity();
    (iv.fit ? fit_n : holdout_n) += 1;
    (iv.fit ? in_fit : in_holdout) += iv.inside() ? 1 : 0;
  }
  result.fit_coverage = fit_n ? static_cast<double>(in_fit) / static_cast<double>(fit_n) : 0;
  result.holdout_coverage = holdout_n ? static_cast<double>(in_holdout) / static_cast<double>(holdout_n) : 0;
  for (const FitParameter& p : result.parameters) {
    if (p.value <= p.physical_lo * (1 + 1e-9) || p.value >= p.physical_hi * (1 - 1e-9))
      result.notes.push_back(fmt::format("{} ended on its physical bound ({:.4g}): the copies ask for more than "
                                         "what it stands for allows, so something the model does not have is in them",
                                         p.key, p.value));
  }
  return result;
}

}  // namespace

CalibrationResult calibrate(const Trace& trace, const CalibrateOptions& options) {
  if (!options.fit_ranks.empty()) {
    throw std::invalid_argument("calibrate: fit_ranks chooses among several ranks' traces (calibrate_together); "
                                "one trace is all fitted");
  }
  if (options.node_devices <= 1) return calibrate_ranks({&trace}, options);
  CalibrateOptions o = options;
  o.fit_ranks = {0};
  o.base.topology.devices = static_cast<std::uint32_t>(options.node_devices);
  (void)model::config_from_json(model::to_json(o.base), "<calibration>");  // a node the model can build
  const std::vector<const Trace*> node(options.node_devices, &trace);
  CalibrationResult r = calibrate_ranks(node, o, 1);
  r.notes.push_back(fmt::format("fitted as rank 0 of a node of {} devices, the same profile on the others as "
                                "their traffic",
                                options.node_devices));
  return r;
}

CalibrationResult calibrate_together(const std::vector<const Trace*>& ranks, const CalibrateOptions& options) {
  if (ranks.empty()) throw std::invalid_argument("calibrate_together: no trace");
  for (std::size_t i = 0; i < ranks.size(); ++i)
    if (!ranks[i]) throw std::invalid_argument(fmt::format("calibrate_together: trace {} is null", i));
  for (const std::size_t k : options.fit_ranks) {
    if (k >= ranks.size()) {
      throw std::invalid_argument(
          fmt::format("calibrate_together: fit rank {} is not one of the {} traces (ranks count from 0)", k, ranks.size()));
    }
  }
  CalibrateOptions o = options;
  // One device per trace, the topology's arrangement kept (as trace replay does with several
  // traces): on dgx-a100-gen4, two ranks sit behind one switch.
  o.base.topology.devices = static_cast<std::uint32_t>(ranks.size());
  // Checked here: the fit counts a configuration the loader refuses as no solution, so a server
  // it cannot build would otherwise end as a fit that never moved.
  (void)model::config_from_json(model::to_json(o.base), "<calibration>");
  return calibrate_ranks(ranks, o);
}

json CalibrationResult::preset_json() const {
  const json full = model::to_json(config);
  const json base = model::to_json(model::preset(config.preset));
  // A file that names the base preset and only what differs from it reads as what was fitted
  // and loads to exactly `config`.
  json out = json::object();
  out["preset"] = config.preset;
  const json diff = json::diff(base, full);
  for (const auto& d : diff) {
    if (!d.contains("op") || d["op"] != "replace") continue;
    const json::json_pointer p(d["path"].get<std::string>());
    if (p.to_string() == "/preset") continue;
    out[p] = full[p];
  }
  return out;
}

void CalibrationResult::write_config_file(const std::string& path, const std::string& source) const {
  // Strict JSON (any reader opens it), saying where it came from under "about", which the
  // model's loader passes over.
  json about = {{"made_by", "spyre-dma trace calibrate"},
                {"trace", source},
                {"fit", fit_selection},
                {"rms_log_error", rms_log_error}};
  if (staging_buffer_bytes) {
    about["replay_staging_buffer_bytes"] = staging_buffer_bytes;
    about["note"] = "replay with --staging-buffer replay_staging_buffer_bytes (the fitted staging piece, a replay option)";
  }
  json file = preset_json();
  file["about"] = std::move(about);
  write_file_atomically(path, file.dump(2) + "\n");
}



json CalibrationResult::to_json() const {
  json params = json::array();
  for (const auto& p : parameters) {
    params.push_back({{"key", p.key},
                      {"initial", p.initial},
                      {"value", p.value},
                      {"lo", p.lo},
                      {"hi", p.hi},
                      {"physical_bounds", {p.physical_lo, p.physical_hi}},
                      {"bounds_why", p.bounds},
                      {"se_log", std::isfinite(p.se_log) ? json(p.se_log) : json(nullptr)},
                      {"interval_90", interval_json(p)},
                      {"why", p.why}});
  }
  json iv = json::array();
  for (const auto& i : intervals) {
    iv.push_back({{"rank", i.rank}, {"id", i.id}, {"fit", i.fit}, {"bytes", i.bytes}, {"direction", i.direction},
                  {"captured_ns", i.captured_ns}, {"simulated_ns", i.simulated_ns}, {"lo_ns", i.lo_ns},
                  {"hi_ns", std::isfinite(i.hi_ns) ? json(i.hi_ns) : json(nullptr)}, {"inside", i.inside()}});
  }
  return {{"fit_selection", fit_selection},
          {"parameters", params},
          {"unidentified", unidentified},
          {"prediction_level", kPredictionLevel},
          {"intervals", iv},
          {"fit_coverage", fit_coverage},
          {"holdout_coverage", holdout_coverage},
          {"replays", replays},
          {"staging_buffer_bytes", staging_buffer_bytes},
          {"rms_log_error", rms_log_error},
          {"initial_rms_log_error", initial_rms_log_error},
          {"preset", preset_json()},
          {"config", model::to_json(config)},
          {"fit", fit.to_json()},
          {"holdout", holdout.to_json()},
          {"notes", notes}};
}

std::string CalibrationResult::summary() const {
  std::string out = fmt::format("fit on \"{}\": {} replays, rms log error {:.4f} (from {:.4f})\n", fit_selection,
                                replays, rms_log_error, initial_rms_log_error);
  for (const auto& p : parameters) {
    const json i = interval_json(p);
    const std::string known =
        i[0].is_null() ? "undetermined"
                       : fmt::format("90%: {:.4g}..{:.4g}{}", i[0].get<double>(), i[1].get<double>(),
                                     undetermined(p) ? ", wider than x10: the copies hardly determine it" : "");
    out += fmt::format("  {:<28} {:>12.4g} ({}; bounds {:.4g}..{:.4g}; from {:.4g}; {})\n", p.key, p.value, known,
                       p.physical_lo, p.physical_hi, p.initial, p.why);
  }
  for (const auto& k : unidentified) out += fmt::format("  {:<28} not determined by the fit copies: base value kept\n", k);
  out += "fit copies:\n" + fit.table();
  if (!holdout.ops.empty()) out += "held-out copies (predicted):\n" + holdout.table();
  std::size_t n_fit = 0, n_holdout = 0;
  for (const auto& i : intervals) (i.fit ? n_fit : n_holdout) += 1;
  out += fmt::format("{:.0f}% prediction intervals: {:.0f}% of {} fit copies inside", kPredictionLevel * 100,
                     fit_coverage * 100, n_fit);
  if (n_holdout) out += fmt::format(", {:.0f}% of {} held-out copies", holdout_coverage * 100, n_holdout);
  out += "\n";
  for (const auto& n : notes) out += "note: " + n + "\n";
  return out;
}

}  // namespace spyre_dma::traces
