// The model's statistics tree: counters, time-weighted gauges and latency histograms registered
// under dotted paths ("link.up.tlps.MWr", "dmai.read_engine.tag_stalls") and written as one
// nested JSON object.
//
// Registration does the string work once and returns a reference that stays valid as long as the
// registry; updates go through that reference (an add, or a few arithmetic operations for a
// gauge) with no lookup. Registering the same path again with the same kind returns the same
// object, so two components may share a statistic; a different kind, or a path that would make a
// statistic both a leaf and a group ("link.up" and "link.up.tlps"), is a StatsError.
//
// Time is simulated time in nanoseconds, passed by the caller (the registry has no clock and
// never reads the wall clock), so the same run gives the same numbers. Not thread-safe: the
// SystemC kernel runs one process at a time.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace spyre_dma::model {

class StatsError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// An event count. JSON: the number.
class Counter {
 public:
  void inc() noexcept { ++value_; }
  void add(std::uint64_t n) noexcept { value_ += n; }
  std::uint64_t value() const noexcept { return value_; }
  void reset() noexcept { value_ = 0; }

 private:
  std::uint64_t value_ = 0;
};

// A level over simulated time (queue occupancy, tags in flight, credits held). Its mean is
// weighted by how long each value was held, from the last reset (time 0 at first) to the instant
// the mean is asked for. An update earlier than the previous one is taken as happening at the
// previous instant. JSON: {"current", "mean", "min", "max", "span_ns"}.
class Gauge {
 public:
  void set(double value, double now_ns) noexcept {
    if (now_ns > last_ns_) {
      area_ += value_ * (now_ns - last_ns_);
      last_ns_ = now_ns;
    }
    value_ = value;
    if (value > max_) max_ = value;
    if (value < min_) min_ = value;
  }
  void add(double delta, double now_ns) noexcept { set(value_ + delta, now_ns); }

  double value() const noexcept { return value_; }
  double max() const noexcept { return max_; }
  double min() const noexcept { return min_; }
  // Time-weighted mean over [reset instant, now_ns]; the current value if that span is empty.
  double mean(double now_ns) const noexcept;
  // Starts a new window at now_ns holding the current value.
  void reset(double now_ns) noexcept;
  nlohmann::json to_json(double now_ns) const;

 private:
  double value_ = 0.0;
  double min_ = 0.0;
  double max_ = 0.0;
  double area_ = 0.0;  // integral of value over [start_ns_, last_ns_]
  double start_ns_ = 0.0;
  double last_ns_ = 0.0;
};

// Log-spaced bins of a latency histogram: [lo_ns, hi_ns) cut into bins_per_decade bins per
// factor of ten, plus an underflow and an overflow bin. The default (1 ns .. 10 s, 20 per
// decade) resolves about 12% (10^(1/20)).
struct HistogramAxis {
  double lo_ns = 1.0;
  double hi_ns = 1e10;
  unsigned bins_per_decade = 20;
};

// Latencies in ns over Boost.Histogram. Count, mean, min and max are exact; quantiles are
// interpolated within their bin (geometrically) and clamped to [min, max], so they are within one
// bin's ratio of the true value. JSON: {"count", "mean", "min", "p50", "p90", "p99", "max",
// "unit": "ns", "bins": [[lower_ns, upper_ns, count], ...] (non-empty bins only)}; the statistics
// are null while the count is 0.
class LatencyHistogram {
 public:
  explicit LatencyHistogram(HistogramAxis axis = {});
  ~LatencyHistogram();
  LatencyHistogram(const LatencyHistogram&) = delete;
  LatencyHistogram& operator=(const LatencyHistogram&) = delete;

  void record(double ns);  // negative and NaN values count as 0

  std::uint64_t count() const noexcept { return count_; }
  double mean() const noexcept { return count_ ? sum_ / static_cast<double>(count_) : 0.0; }
  double min() const noexcept { return count_ ? min_ : 0.0; }
  double max() const noexcept { return count_ ? max_ : 0.0; }
  double quantile(double q) const;    // q in [0, 1]; 0 while empty
  double bin_ratio() const noexcept;  // upper / lower edge of a bin: the relative resolution
  const HistogramAxis& axis() const noexcept { return axis_; }
  void reset();
  nlohmann::json to_json() const;

 private:
  struct Bins;
  HistogramAxis axis_;
  std::unique_ptr<Bins> bins_;
  std::uint64_t count_ = 0;
  double sum_ = 0.0;
  double min_ = 0.0;
  double max_ = 0.0;
};

class StatsScope;

class StatsRegistry {
 public:
  StatsRegistry();
  ~StatsRegistry();
  StatsRegistry(const StatsRegistry&) = delete;
  StatsRegistry& operator=(const StatsRegistry&) = delete;

  // Path: dot-separated, non-empty segments without whitespace, '/', '~' or '"'.
  Counter& counter(std::string_view path);
  Gauge& gauge(std::string_view path);
  // The axis applies when the path is new; a later registration gets the existing histogram.
  LatencyHistogram& histogram(std::string_view path, HistogramAxis axis = {});
  StatsScope scope(std::string_view prefix);

  // nullptr if the path is not registered as that kind.
  const Counter* find_counter(std::string_view path) const;
  const Gauge* find_gauge(std::string_view path) const;
  const LatencyHistogram* find_histogram(std::string_view path) const;
  std::vector<std::string> paths() const;  // sorted

  // Nested by path segment, keys sorted; gauges' means taken at now_ns.
  nlohmann::json to_json(double now_ns) const;
  // Zeroes counters and histograms and starts gauges' windows at now_ns (e.g. after warm-up).
  void reset(double now_ns);

 private:
  using Stat = std::variant<std::unique_ptr<Counter>, std::unique_ptr<Gauge>,
                            std::unique_ptr<LatencyHistogram>>;
  // Defined and instantiated in stats.cpp only.
  template <class T, class Make>
  T& get_or_add(std::string_view path, Make make);
  template <class T>
  const T* find(std::string_view path) const;

  std::map<std::string, Stat, std::less<>> stats_;
};

// A registry seen under a prefix: a component registers "tags_in_flight" and gets
// "<prefix>.tags_in_flight". Cheap to copy; valid as long as the registry.
class StatsScope {
 public:
  StatsScope(StatsRegistry& registry, std::string prefix);

  Counter& counter(std::string_view name) const;
  Gauge& gauge(std::string_view name) const;
  LatencyHistogram& histogram(std::string_view name, HistogramAxis axis = {}) const;
  StatsScope scope(std::string_view name) const;
  const std::string& prefix() const noexcept { return prefix_; }
  StatsRegistry& registry() const noexcept { return *registry_; }

 private:
  std::string path(std::string_view name) const;
  StatsRegistry* registry_;
  std::string prefix_;
};

}  // namespace spyre_dma::model
