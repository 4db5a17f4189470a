// The model's state over simulated time: levels that components change by steps (CBs queued on a
// pipeline, read tags in flight, flow-control credits in use), written as waveforms (WaveWriter:
// VCD or FST) and as the Perfetto trace's counters.
//
// The model books work ahead of simulated time (a CB's TLPs, their credits and tags, its RB), so
// steps arrive out of time order. Nothing is booked before the present, so every step before the
// present is final: each add() first writes out, in time order, the steps before the simulated
// present, one value per level per instant (the level after all steps at that instant). A step
// for an instant already written (none should come) goes to the first instant still open and is
// counted in late().
#pragma once

#include <cstdint>
#include <queue>
#include <string>
#include <vector>

#include "observe/trace_writer.hpp"
#include "pcie/ps.hpp"
#include "spyre_dma/model/wave_writer.hpp"

namespace spyre_dma::model {

class StateProbe {
 public:
  // Either may be null: no waves, or no trace counters.
  StateProbe(WaveWriter* wave, TraceWriter* trace) : wave_(wave), trace_(trace) {}

  // A level, 0 at the start: in the waves `name` of `scope`, 32 bits; in the trace (when
  // `counter` is not empty) the series `series` of the counter `counter` of process `trace_pid`
  // (levels that share a counter are written together). Before the first add().
  int level(const std::string& scope, const std::string& name, int trace_pid = 0, const std::string& counter = {},
            const std::string& series = {});

  // The level goes up (or down) by `step` at `at_ps`.
  void add(int level, pcie::Ps at_ps, std::int64_t step);
  // Writes every step, and the waves' last instant `end_ps` (at least the last step's); the
  // caller then closes the writers.
  void finish(pcie::Ps end_ps);

  std::uint64_t late() const noexcept { return late_; }
  std::uint64_t pending() const noexcept { return steps_.size(); }

 private:
  struct Step {
    pcie::Ps at;
    int level;
    std::int64_t step;
    bool operator>(const Step& o) const { return at > o.at; }
  };
  struct Level {
    int wave = -1;
    int counter = -1;  // index into counters_, or -1
    std::int64_t value = 0, written = 0;
    bool dirty = false;
  };
  struct Counter {
    int pid;
    std::string name;
    std::vector<std::pair<std::string, int>> series;  // (series, level)
    bool dirty = false;
  };
  void start();                         // the levels' first value, at the first step
  void write_before(pcie::Ps present);  // every step before `present`
  void write_instant(pcie::Ps at);      // the dirty levels at `at`

  WaveWriter* wave_;
  TraceWriter* trace_;
  std::vector<Level> levels_;
  std::vector<Counter> counters_;
  std::vector<int> dirty_;
  std::priority_queue<Step, std::vector<Step>, std::greater<Step>> steps_;
  pcie::Ps open_from_ = 0;  // the first instant not yet written
  bool started_ = false;
  std::uint64_t late_ = 0;
};

}  // namespace spyre_dma::model
