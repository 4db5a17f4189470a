// The statistics tree: gauges' time weighting, histograms over Boost.Histogram, and the registry.
#include "spyre_dma/model/stats.hpp"

#include <algorithm>
#include <boost/histogram.hpp>
#include <charconv>
#include <cmath>

namespace spyre_dma::model {

// ---------------------------------------------------------------------------------------------
// Gauge
// ---------------------------------------------------------------------------------------------
double Gauge::mean(double now_ns) const noexcept {
  const double end = std::max(now_ns, last_ns_);
  const double span = end - start_ns_;
  if (span <= 0.0) return value_;
  return (area_ + value_ * (end - last_ns_)) / span;
}

void Gauge::reset(double now_ns) noexcept {
  start_ns_ = last_ns_ = std::max(now_ns, last_ns_);
  area_ = 0.0;
  min_ = max_ = value_;
}

nlohmann::json Gauge::to_json(double now_ns) const {
  return {{"current", value_},
          {"mean", mean(now_ns)},
          {"min", min_},
          {"max", max_},
          {"span_ns", std::max(0.0, std::max(now_ns, last_ns_) - start_ns_)}};
}

// ---------------------------------------------------------------------------------------------
// LatencyHistogram
// ---------------------------------------------------------------------------------------------
namespace bh = boost::histogram;
using LogAxis = bh::axis::regular<double, bh::axis::transform::log>;
using Histogram = decltype(bh::make_histogram_with(std::vector<std::uint64_t>(), LogAxis()));

struct LatencyHistogram::Bins {
  Histogram h;
};

namespace {

unsigned bin_count(const HistogramAxis& a) {
  return static_cast<unsigned>(
      std::max(1.0, std::round(std::log10(a.hi_ns / a.lo_ns) * a.bins_per_decade)));
}

HistogramAxis checked(HistogramAxis a) {
  if (!(a.lo_ns > 0.0) || !(a.hi_ns > a.lo_ns) || a.bins_per_decade == 0 || !std::isfinite(a.hi_ns))
    throw StatsError("stats: histogram axis needs 0 < lo_ns < hi_ns and bins_per_decade > 0");
  return a;
}

// Bin edges for the JSON: 6 significant digits hide the noise of exp(log(x)) (10.000000000000002).
double edge(double x) {
  char buf[32];
  const auto end = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::general, 6).ptr;
  double out = x;
  std::from_chars(buf, end, out);
  return out;
}

}  // namespace

LatencyHistogram::LatencyHistogram(HistogramAxis axis)
    : axis_(checked(axis)),
      bins_(std::make_unique<Bins>(Bins{bh::make_histogram_with(
          std::vector<std::uint64_t>(), LogAxis(bin_count(axis_), axis_.lo_ns, axis_.hi_ns))})) {}

LatencyHistogram::~LatencyHistogram() = default;

void LatencyHistogram::record(double ns) {
  if (!(ns > 0.0)) ns = 0.0;  // negative, zero and NaN: into the underflow bin as 0
  bins_->h(ns);
  if (count_ == 0) min_ = max_ = ns;
  min_ = std::min(min_, ns);
  max_ = std::max(max_, ns);
  sum_ += ns;
  ++count_;
}

double LatencyHistogram::bin_ratio() const noexcept {
  return std::pow(axis_.hi_ns / axis_.lo_ns, 1.0 / bin_count(axis_));
}

double LatencyHistogram::quantile(double q) const {
  if (count_ == 0) return 0.0;
  if (!(q > 0.0)) return min_;
  if (q >= 1.0) return max_;
  const double target = q * static_cast<double>(count_);
  double below = 0.0;
  for (auto&& bin : bh::indexed(bins_->h, bh::coverage::all)) {
    const auto n = static_cast<double>(*bin);
    if (n == 0.0 || below + n < target) {
      below += n;
      continue;
    }
    // The edges of this bin, narrowed to what was observed (the outer bins are unbounded).
    double lo = std::max(bin.bin().lower(), min_);
    double hi = std::min(bin.bin().upper(), max_);
    if (hi < lo) hi = lo;
    const double f = (target - below) / n;
    const double v = lo > 0.0 ? lo * std::pow(hi / lo, f) : lo + (hi - lo) * f;
    return std::clamp(v, min_, max_);
  }
  return max_;
}

void LatencyHistogram::reset() {
  bins_->h.reset();
  count_ = 0;
  sum_ = min_ = max_ = 0.0;
}

nlohmann::json LatencyHistogram::to_json() const {
  nlohmann::json out;
  out["count"] = count_;
  out["unit"] = "ns";
  const char* const keys[] = {"mean", "min", "p50", "p90", "p99", "max"};
  if (count_ == 0) {
    for (const char* k : keys) out[k] = nullptr;
  } else {
    out["mean"] = mean();
    out["min"] = min_;
    out["p50"] = quantile(0.50);
    out["p90"] = quantile(0.90);
    out["p99"] = quantile(0.99);
    out["max"] = max_;
  }
  auto bins = nlohmann::json::array();
  for (auto&& bin : bh::indexed(bins_->h, bh::coverage::all)) {
    if (*bin == 0) continue;
    const int i = bin.index();
    const nlohmann::json lower =
        i < 0 ? nlohmann::json(0.0) : nlohmann::json(edge(bin.bin().lower()));
    const nlohmann::json upper = i >= static_cast<int>(bins_->h.axis().size())
                                     ? nlohmann::json(nullptr)
                                     : nlohmann::json(edge(bin.bin().upper()));
    bins.push_back({lower, upper, static_cast<std::uint64_t>(*bin)});
  }
  out["bins"] = std::move(bins);
  return out;
}

// ---------------------------------------------------------------------------------------------
// StatsRegistry
// ---------------------------------------------------------------------------------------------
namespace {

template <class T>
constexpr const char* kind_name() {
  if constexpr (std::is_same_v<T, Counter>)
    return "counter";
  else if constexpr (std::is_same_v<T, Gauge>)
    return "gauge";
  else
    return "histogram";
}

const char* kind_of(const std::variant<std::unique_ptr<Counter>, std::unique_ptr<Gauge>,
                                       std::unique_ptr<LatencyHistogram>>& stat) {
  static const char* const names[] = {"counter", "gauge", "histogram"};
  return names[stat.index()];
}

void check_path(std::string_view path) {
  bool ok = !path.empty() && path.front() != '.' && path.back() != '.' &&
            path.find("..") == std::string_view::npos;
  for (char ch : path) {
    const auto u = static_cast<unsigned char>(ch);
    if (u <= ' ' || ch == '/' || ch == '~' || ch == '"' || u == 0x7f) ok = false;
  }
  if (!ok) throw StatsError("stats: invalid path \"" + std::string(path) + "\"");
}

}  // namespace

StatsRegistry::StatsRegistry() = default;
StatsRegistry::~StatsRegistry() = default;

template <class T, class Make>
T& StatsRegistry::get_or_add(std::string_view path, Make make) {
  if (auto it = stats_.find(path); it != stats_.end()) {
    if (auto* p = std::get_if<std::unique_ptr<T>>(&it->second)) return **p;
    throw StatsError("stats: " + std::string(path) + " is a " + kind_of(it->second) + ", not a " +
                     kind_name<T>());
  }
  check_path(path);
  // A leaf cannot also be a group: no registered path may be a prefix of this one, nor the
  // other way round.
  for (auto dot = path.find('.'); dot != std::string_view::npos; dot = path.find('.', dot + 1))
    if (stats_.count(path.substr(0, dot)) != 0)
      throw StatsError("stats: " + std::string(path) + ": " + std::string(path.substr(0, dot)) +
                       " is already a statistic, not a group");
  const std::string group = std::string(path) + ".";
  if (auto it = stats_.lower_bound(group);
      it != stats_.end() && it->first.compare(0, group.size(), group) == 0)
    throw StatsError("stats: " + std::string(path) + " is already a group (holds " + it->first +
                     ")");
  std::unique_ptr<T> fresh = make();
  T& ref = *fresh;
  stats_.emplace(std::string(path), std::move(fresh));
  return ref;
}

template <class T>
const T* StatsRegistry::find(std::string_view path) const {
  auto it = stats_.find(path);
  if (it == stats_.end()) return nullptr;
  auto* p = std::get_if<std::unique_ptr<T>>(&it->second);
  return p ? p->get() : nullptr;
}

Counter& StatsRegistry::counter(std::string_view path) {
  return get_or_add<Counter>(path, [] { return std::make_unique<Counter>(); });
}
Gauge& StatsRegistry::gauge(std::string_view path) {
  return get_or_add<Gauge>(path, [] { return std::make_unique<Gauge>(); });
}
LatencyHistogram& StatsRegistry::histogram(std::string_view path, HistogramAxis axis) {
  return get_or_add<LatencyHistogram>(path,
                                      [axis] { return std::make_unique<LatencyHistogram>(axis); });
}
StatsScope StatsRegistry::scope(std::string_view prefix) {
  return StatsScope(*this, std::string(prefix));
}

const Counter* StatsRegistry::find_counter(std::string_view path) const {
  return find<Counter>(path);
}
const Gauge* StatsRegistry::find_gauge(std::string_view path) const { return find<Gauge>(path); }
const LatencyHistogram* StatsRegistry::find_histogram(std::string_view path) const {
  return find<LatencyHistogram>(path);
}

std::vector<std::string> StatsRegistry::paths() const {
  std::vector<std::string> out;
  out.reserve(stats_.size());
  for (const auto& entry : stats_) out.push_back(entry.first);
  return out;
}

nlohmann::json StatsRegistry::to_json(double now_ns) const {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [path, stat] : stats_) {
    nlohmann::json* node = &out;
    std::size_t begin = 0;
    for (auto dot = path.find('.'); dot != std::string::npos; dot = path.find('.', begin)) {
      node = &(*node)[path.substr(begin, dot - begin)];
      begin = dot + 1;
    }
    nlohmann::json& leaf = (*node)[path.substr(begin)];
    std::visit(
        [&](const auto& p) {
          using T = std::decay_t<decltype(*p)>;
          if constexpr (std::is_same_v<T, Counter>)
            leaf = p->value();
          else if constexpr (std::is_same_v<T, Gauge>)
            leaf = p->to_json(now_ns);
          else
            leaf = p->to_json();
        },
        stat);
  }
  return out;
}

void StatsRegistry::reset(double now_ns) {
  for (auto& [path, stat] : stats_) {
    std::visit(
        [&](auto& p) {
          using T = std::decay_t<decltype(*p)>;
          if constexpr (std::is_same_v<T, Gauge>)
            p->reset(now_ns);
          else
            p->reset();
        },
        stat);
  }
}

// ---------------------------------------------------------------------------------------------
// StatsScope
// ---------------------------------------------------------------------------------------------
StatsScope::StatsScope(StatsRegistry& registry, std::string prefix)
    : registry_(&registry), prefix_(std::move(prefix)) {}

std::string StatsScope::path(std::string_view name) const {
  return prefix_.empty() ? std::string(name) : prefix_ + "." + std::string(name);
}
Counter& StatsScope::counter(std::string_view name) const { return registry_->counter(path(name)); }
Gauge& StatsScope::gauge(std::string_view name) const { return registry_->gauge(path(name)); }
LatencyHistogram& StatsScope::histogram(std::string_view name, HistogramAxis axis) const {
  return registry_->histogram(path(name), axis);
}
StatsScope StatsScope::scope(std::string_view name) const {
  return StatsScope(*registry_, path(name));
}

}  // namespace spyre_dma::model
