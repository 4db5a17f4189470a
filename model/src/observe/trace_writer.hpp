// A Chrome trace-event JSON writer (viewable in Perfetto and chrome://tracing).
//
// Events are written to PATH.partial as they arrive; nothing but the current event is held in
// memory. close() renames the whole file to PATH, so PATH is never a half-written trace. The file is {"traceEvents":[...],"displayTimeUnit":"ns"[,"otherData":{...}]} and is
// valid JSON once close() has run (the destructor closes), even with no events. Output is a pure
// function of the calls made: times are printed with a fixed, locale-independent format (ps
// resolution) and args through nlohmann::json (sorted keys), so the same events give the same
// bytes.
//
// Times are simulated nanoseconds; the file carries microseconds ("ts", "dur"), as the format
// requires, with fractions. Tracks: a process (pid) per component group and a thread (tid) per
// track, named with "M" metadata events; process() and thread() allocate ids in call order and
// emit the names, or name ids of your own with process_name() / thread_name().
#pragma once

#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>

namespace spyre_dma::model {

class TraceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct TraceTrack {
  int pid = 0;
  int tid = 0;
};

class TraceWriter {
 public:
  // Creates (truncates) `path`.partial. Throws TraceError if it cannot be opened. `other_data` (an
  // object, or null for none) is written as the file's "otherData", e.g. the configuration.
  explicit TraceWriter(const std::string& path, nlohmann::json other_data = nullptr);
  ~TraceWriter();  // closes; never throws
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // A new process (pid 1, 2, ...) named `name`, sorted in call order.
  int process(std::string_view name);
  // A new thread of `pid` (tid 1, 2, ... across the writer) named `name`, sorted in call order.
  TraceTrack thread(int pid, std::string_view name);

  void process_name(int pid, std::string_view name);
  void thread_name(int pid, int tid, std::string_view name);
  void process_sort_index(int pid, int index);
  void thread_sort_index(int pid, int tid, int index);

  // "X": a span [ts_ns, ts_ns + dur_ns) on `track` (a negative duration is written as 0).
  void complete(std::string_view name, std::string_view category, double ts_ns, double dur_ns,
                TraceTrack track, const nlohmann::json& args = nullptr);
  // "i": an instant on `track` (thread scope).
  void instant(std::string_view name, std::string_view category, double ts_ns, TraceTrack track,
               const nlohmann::json& args = nullptr);
  // "C": counter values (an object of numbers: one series each) of process `pid`.
  void counter(std::string_view name, double ts_ns, int pid, const nlohmann::json& values);
  // A flow arrow from the slice enclosing (ts_ns, from) to the slice or instant enclosing (to_ns,
  // to): "s" and "f" events (bound to the enclosing slice) under one id, unique in the file.
  void flow(std::string_view name, std::string_view category, double ts_ns, TraceTrack from, double to_ns,
            TraceTrack to);

  // Ends the array and the object, closes the file and puts it in place (PATH.partial renamed to
  // PATH); later events are ignored. Throws TraceError if anything failed to write (the partial
  // file is then removed). Idempotent.
  void close();

  bool is_open() const noexcept { return open_; }
  std::uint64_t event_count() const noexcept { return events_; }
  const std::string& path() const noexcept { return path_; }

 private:
  void begin_event();  // the separator before an event
  void metadata(std::string_view what, int pid, const int* tid, const nlohmann::json& args);
  void write_common(std::string_view name, std::string_view category, char phase, double ts_ns,
                    int pid, const int* tid);

  std::string path_;
  std::string partial_;  // written here, renamed to path_ by close()
  std::ofstream out_;
  nlohmann::json other_data_;
  bool open_ = false;
  std::uint64_t events_ = 0;
  int next_pid_ = 1;
  int next_tid_ = 1;
  std::uint64_t next_flow_ = 1;
};

}  // namespace spyre_dma::model
