#include "observe/state_probe.hpp"

#include <stdexcept>

#include "base/rates.hpp"

namespace spyre_dma::model {

int StateProbe::level(const std::string& scope, const std::string& name, int trace_pid, const std::string& counter,
                      const std::string& series) {
  if (started_) throw std::logic_error("StateProbe: level '" + name + "' declared after the first step");
  Level l;
  if (wave_) l.wave = wave_->variable(scope, name, 32);
  if (trace_ && !counter.empty()) {
    for (std::size_t i = 0; i < counters_.size() && l.counter < 0; ++i) {
      if (counters_[i].pid == trace_pid && counters_[i].name == counter) l.counter = static_cast<int>(i);
    }
    if (l.counter < 0) {
      counters_.push_back(Counter{trace_pid, counter, {}, false});
      l.counter = static_cast<int>(counters_.size() - 1);
    }
    counters_[static_cast<std::size_t>(l.counter)].series.emplace_back(series, static_cast<int>(levels_.size()));
  }
  levels_.push_back(l);
  return static_cast<int>(levels_.size() - 1);
}

void StateProbe::start() {
  if (started_) return;
  started_ = true;
  // Every level starts at 0: the waves show it from time 0 on.
  for (const Level& l : levels_) {
    if (wave_ && l.wave >= 0) wave_->change(0, l.wave, 0);
  }
}

void StateProbe::add(int level, pcie::Ps at_ps, std::int64_t step) {
  start();
  write_before(now_ps());
  if (at_ps < open_from_) {
    ++late_;
    at_ps = open_from_;
  }
  steps_.push(Step{at_ps, level, step});
}

void StateProbe::write_before(pcie::Ps present) {
  while (!steps_.empty() && steps_.top().at < present) {
    const pcie::Ps at = steps_.top().at;
    while (!steps_.empty() && steps_.top().at == at) {
      const Step s = steps_.top();
      steps_.pop();
      Level& l = levels_[static_cast<std::size_t>(s.level)];
      l.value += s.step;
      if (!l.dirty) l.dirty = true, dirty_.push_back(s.level);
    }
    write_instant(at);
    open_from_ = at + 1;
  }
}

void StateProbe::write_instant(pcie::Ps at) {
  for (int i : dirty_) {
    Level& l = levels_[static_cast<std::size_t>(i)];
    l.dirty = false;
    if (l.value == l.written) continue;  // steps that cancel out at one instant show nothing
    l.written = l.value;
    // A negative level is a bug in whoever stepped it; the waves show its two's complement.
    if (wave_ && l.wave >= 0) wave_->change(at, l.wave, static_cast<std::uint64_t>(l.value));
    if (l.counter >= 0) counters_[static_cast<std::size_t>(l.counter)].dirty = true;
  }
  dirty_.clear();
  if (!trace_) return;
  for (Counter& c : counters_) {
    if (!c.dirty) continue;
    c.dirty = false;
    nlohmann::json values = nlohmann::json::object();
    for (const auto& [series, level] : c.series) values[series] = levels_[static_cast<std::size_t>(level)].written;
    trace_->counter(c.name, static_cast<double>(at) / 1000.0, c.pid, values);
  }
}

void StateProbe::finish(pcie::Ps end_ps) {
  start();
  write_before(~pcie::Ps{0});
  // The last instant: viewers end the waves at the last time they see.
  if (wave_ && !levels_.empty() && end_ps >= open_from_ && levels_[0].wave >= 0) {
    wave_->change(end_ps, levels_[0].wave, static_cast<std::uint64_t>(levels_[0].written));
  }
}

}  // namespace spyre_dma::model
