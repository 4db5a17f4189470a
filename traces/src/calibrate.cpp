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
#include "spyre_dma/traces/concurrent.hpp"
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

std::uint64_t parse_bytes(const std::string& text) {
  static const std::regex re(R"(^\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*$)");
  std::smatch m;
  if (!std::regex_match(text, m, re)) throw std::invalid_argument(fmt::format("\"{}\" is not a size", text));
  const double v = std::stod(m[1].str());
  const std::string unit = m[2].str();
  static const std::map<std::string, double> kUnits = {
      {"", 1},           {"B", 1},           {"K", 1024.0},     {"KiB", 1024.0},    {"M", 1048576.0},
      {"MiB", 1048576.0}, {"G", 1073741824.0}, {"GiB", 1073741824.0}, {"kB", 1e3},  {"KB", 1e3},
      {"MB", 1e6},       {"GB", 1e9}};
  auto it = kUnits.find(unit);
  if (it == kUnits.end())
    throw std::invalid_argument(fmt::format("\"{}\": unknown unit \"{}\" (KiB, MiB, GiB binary; kB, MB, GB decimal)", text, unit));
  return static_cast<std::uint64_t>(std::llround(v * it->second));
}

OpSelection parse_selection(const std::string& raw) {
  const std::string text = trim(raw);
  OpSelection s;
  s.text = text;
  if (text == "all" || text.empty()) return s;
  if (text == "even" || text == "odd") {
    s.half = text == "even" ? 0 : 1;
    return s;
  }
  auto parse_bytes = [&](const std::string& size) {  // a size that is not one: name the selection too
    try {
      return traces::parse_bytes(size);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(fmt::format("\"{}\": {}", text, e.what()));
    }
  };
  const auto colon = text.find(':');
  const std::string kind = text.substr(0, colon);
  const std::string rest = colon == std::string::npos ? "" : text.substr(colon + 1);
  if (kind == "below" && !rest.empty()) {
    s.hi = parse_bytes(rest);
  } else if (kind == "atleast" && !rest.empty()) {
    s.lo = parse_bytes(rest);
  } else if (kind == "range" && rest.find(':') != std::string::npos) {
    s.lo = parse_bytes(rest.substr(0, rest.find(':')));
    s.hi = parse_bytes(rest.substr(rest.find(':') + 1));
    if (s.hi <= s.lo) throw std::invalid_argument(fmt::format("\"{}\": the range is empty", text));
  } else {
    throw std::invalid_argument(fmt::format(
        "\"{}\" is not a selection (all, below:SIZE, atleast:SIZE, range:LO:HI, even, odd)", text));
  }
  return s;
}

std::vector<bool> select_ops(const Trace& trace, const OpSelection& sel) {
  std::vector<std::uint64_t> sizes;
  for (const Op& op : trace.ops)
    if (is_copy(op)) sizes.push_back(op.bytes);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  std::vector<bool> out(trace.ops.size(), false);
  for (std::size_t i = 0; i < trace.ops.size(); ++i) {
    const Op& op = trace.ops[i];
    if (!is_copy(op)) continue;
    if (sel.half >= 0) {
      const auto rank = std::lower_bound(sizes.begin(), sizes.end(), op.bytes) - sizes.begin();
      out[i] = static_cast<int>(rank % 2) == sel.half;
    } else {
      out[i] = op.bytes >= sel.lo && op.bytes < sel.hi;
    }
  }
  return out;
}

Trace sub_trace(const Trace& trace, const std::vector<bool>& keep) {
  Trace out;
  out.header = trace.header;
  std::unordered_set<std::uint64_t> kept_ids, allocs;
  for (std::size_t i = 0; i < trace.ops.size(); ++i) {
    const Op& op = trace.ops[i];
    if (is_copy(op) && !keep[i]) continue;
    Op o = op;
    o.deps.erase(std::remove_if(o.deps.begin(), o.deps.end(), [&](std::uint64_t d) { return !kept_ids.count(d); }),
                 o.deps.end());
    kept_ids.insert(o.id);
    if (o.src_alloc) allocs.insert(o.src_alloc);
    if (o.dst_alloc) allocs.insert(o.dst_alloc);
    out.ops.push_back(std::move(o));
  }
  for (const Allocation& a : trace.allocations)
    if (allocs.count(a.id)) out.allocations.push_back(a);
  // A concurrent trace's groups name op ids: cut down to the ops kept, so that compare reads them.
  const std::vector<ConcurrentGroup> groups = concurrent_groups(trace);
  if (!groups.empty()) {
    std::vector<std::uint64_t> ids;
    for (const Op& o : out.ops) ids.push_back(o.id);
    nlohmann::json kept = nlohmann::json::array();
    for (const ConcurrentGroup& g : narrow_groups(groups, ids)) kept.push_back(g.to_json());
    out.header.extra["groups"] = std::move(kept);
  }
  return out;
}

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
    out.push_back({"device.dma_engine_gbps", direct_gbps, direct_gbps, direct_gbps / 2, direct_gbps * 2,
                   "the bandwidth of the largest registered host copies; judged by registered H2D and D2H copies "
                   ">= 256 KiB",
                   kBandwidthBytes, UINT64_MAX, false, {"h2d registered", "d2h registered"}});
  }
  if (memory_gbps > 0 && cfg.contains(pointer("device.dram_gbps"))) {
    out.push_back({"device.dram_gbps", memory_gbps, memory_gbps, memory_gbps / 2, memory_gbps * 2,
                   "the bytes device memory moved in the largest device copies and fills (a copy reads and "
                   "writes); judged by D2D copies and fills >= 1 MiB",
                   1u << 20, UINT64_MAX, false, {"d2d", "fill"}});
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
      out.push_back({"host_cost.staging_gbps", gbps, gbps, gbps / 4, gbps * 4,
                     "the slope of device time against size of the pageable copies >= 1 MiB", 1u << 20,
                     UINT64_MAX, true, {"h2d", "d2h"}});
      out.push_back({kStagingPieceKey, piece, piece, 65536.0, 16.0 * 1048576,
                     "the intercept of that line: the device starts after the first piece", 1u << 20, UINT64_MAX,
                     true, {"h2d", "d2h"}});
    } else {
      out.push_back({"host_cost.staging_gbps", staged_gbps, staged_gbps, staged_gbps / 4, staged_gbps * 4,
                     "the bandwidth of the largest pageable copies >= 1 MiB", 1u << 20, UINT64_MAX, true,
                     {"h2d", "d2h"}});
    }
  }
  if (small) {
    const double v = std::max(1.0, base.device.cb_overhead_ns);
    out.push_back({"device.cb_overhead_ns", v, v, 1, 50000,
                   "the duration of small copies (fixed cost per CB); judged by copies < 256 KiB", 0, 256u << 10, false,
                   {}});
  }
  if (small_h2d) {
    const double v = std::max(1.0, base.link.latency_ns);
    out.push_back({"link.latency_ns", v, v, 1, 20000,
                   "the duration of small reads (round trip); judged by H2D copies < 64 KiB", 0, 64u << 10, false,
                   {"h2d"}});
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

CalibrationResult calibrate_ranks(const std::vector<const Trace*>& ranks, const CalibrateOptions& options) {
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
    std::vector<bool> replay_mask = fit_masks.back();
    if (options.fit_copies_per_size > 0) {
      std::map<std::tuple<OpKind, HostMemory, std::uint64_t>, std::size_t> seen;
      for (std::size_t i = 0; i < trace->ops.size(); ++i) {
        if (!replay_mask[i]) continue;
        const Op& op = trace->ops[i];
        if (++seen[{op.kind, op.host, op.bytes}] > options.fit_copies_per_size) replay_mask[i] = false;
      }
    }
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
                                             : FitParameter{key, v, v, 65536.0, 16.0 * 1048576, "named on the command line", 0,
                                                                          UINT64_MAX, false, {}});
        continue;
      }
      if (!cfg.contains(pointer(key)) || !cfg[pointer(key)].is_number())
        throw std::invalid_argument(fmt::format("\"{}\" is not a numeric configuration key", key));
      auto d = std::find_if(defaults.begin(), defaults.end(), [&](const FitParameter& p) { return p.key == key; });
      if (d != defaults.end()) {
        params.push_back(*d);
      } else {
        const double v = std::max(1e-3, cfg[pointer(key)].get<double>());
        params.push_back({key, v, v, v / 100, v * 100, "named on the command line", 0, UINT64_MAX, false, {}});
      }
    }
  }
  if (params.empty()) result.notes.push_back("the fit copies determine no parameter: the base is kept");

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
  for (std::size_t k = 0; k < ranks.size(); ++k) {
    const Comparison all = compare(*ranks[k], r[k]);
    std::unordered_set<std::uint64_t> fit_ids;
    for (std::size_t i = 0; i < ranks[k]->ops.size(); ++i)
      if (fit_masks[k][i]) fit_ids.insert(ranks[k]->ops[i].id);
    for (Comparison* c : {&result.fit, &result.holdout}) {
      c->source += (k ? " + " : "") + all.source;
      c->resolution_ns = std::max(c->resolution_ns, all.resolution_ns);
    }
    for (const auto& o : all.ops) (fit_ids.count(o.id) ? result.fit : result.holdout).ops.push_back(o);
  }
  result.fit.groups = group_stats(result.fit.ops);
  result.holdout.groups = group_stats(result.holdout.ops);
  return result;
}

}  // namespace

CalibrationResult calibrate(const Trace& trace, const CalibrateOptions& options) {
  if (!options.fit_ranks.empty()) {
    throw std::invalid_argument("calibrate: fit_ranks chooses among several ranks' traces (calibrate_together); "
                                "one trace is all fitted");
  }
  return calibrate_ranks({&trace}, options);
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
  // The loader accepts comments: the file says where it came from.
  write_file_atomically(path, [&](std::ostream& out) {
    out << fmt::format("// spyre-dma trace calibrate {} (fit: {}); rms log error {:.4f}\n", source, fit_selection,
                       rms_log_error);
    if (staging_buffer_bytes)
      out << fmt::format("// replay with --staging-buffer {} (the fitted staging piece, a replay option)\n",
                         staging_buffer_bytes);
    out << preset_json().dump(2) << "\n";
  });
}

json CalibrationResult::to_json() const {
  json params = json::array();
  for (const auto& p : parameters)
    params.push_back({{"key", p.key}, {"initial", p.initial}, {"value", p.value}, {"lo", p.lo}, {"hi", p.hi}, {"why", p.why}});
  return {{"fit_selection", fit_selection},
          {"parameters", params},
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
  for (const auto& p : parameters)
    out += fmt::format("  {:<28} {:>12.4g} (from {:.4g}; {})\n", p.key, p.value, p.initial, p.why);
  out += "fit copies:\n" + fit.table();
  if (!holdout.ops.empty()) out += "held-out copies (predicted):\n" + holdout.table();
  for (const auto& n : notes) out += "note: " + n + "\n";
  return out;
}

}  // namespace spyre_dma::traces
