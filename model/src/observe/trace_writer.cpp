// Chrome trace-event JSON, streamed.
#include "observe/trace_writer.hpp"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <system_error>

namespace spyre_dma::model {

namespace {

using nlohmann::json;

// JSON text of a string or value; invalid UTF-8 is replaced rather than thrown on.
std::string text_of(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}
std::string quoted(std::string_view s) { return text_of(json(std::string(s))); }

// Nanoseconds as microseconds with up to 6 decimals (1 ps), locale-independent, no trailing
// zeros: 1234.5 ns -> "1.2345".
std::string micros(double ns) {
  if (!std::isfinite(ns)) ns = 0.0;
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, ns / 1000.0, std::chars_format::fixed, 6);
  std::string s(buf, res.ptr);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  if (s == "-0") s = "0";
  return s;
}

}  // namespace

TraceWriter::TraceWriter(const std::string& path, json other_data)
    : path_(path), partial_(path + ".partial"), other_data_(std::move(other_data)) {
  out_.open(partial_, std::ios::binary | std::ios::trunc);
  if (!out_) throw TraceError("trace: cannot open " + partial_ + " for writing");
  out_ << "{\"traceEvents\":[";
  open_ = true;
}

TraceWriter::~TraceWriter() {
  try {
    close();
  } catch (...) {  // a destructor must not throw; close() explicitly to see write errors
  }
}

void TraceWriter::close() {
  if (!open_) return;
  open_ = false;
  out_ << "\n],\"displayTimeUnit\":\"ns\"";
  if (!other_data_.is_null()) out_ << ",\"otherData\":" << text_of(other_data_);
  out_ << "}\n";
  out_.flush();
  const bool ok = static_cast<bool>(out_);
  out_.close();
  std::error_code ec;
  if (!ok || !out_) {
    std::filesystem::remove(partial_, ec);
    throw TraceError("trace: writing " + path_ + " failed");
  }
  // Only a whole trace takes the name: a run that stops early leaves no half-written file there.
  std::filesystem::rename(partial_, path_, ec);
  if (ec) throw TraceError("trace: cannot put " + path_ + " in place: " + ec.message());
}

void TraceWriter::begin_event() {
  out_ << (events_ == 0 ? "\n" : ",\n");
  ++events_;
}

void TraceWriter::write_common(std::string_view name, std::string_view category, char phase,
                               double ts_ns, int pid, const int* tid) {
  begin_event();
  out_ << "{\"name\":" << quoted(name);
  if (!category.empty()) out_ << ",\"cat\":" << quoted(category);
  out_ << ",\"ph\":\"" << phase << "\",\"ts\":" << micros(ts_ns) << ",\"pid\":" << pid;
  if (tid != nullptr) out_ << ",\"tid\":" << *tid;
}

void TraceWriter::metadata(std::string_view what, int pid, const int* tid, const json& args) {
  if (!open_) return;
  begin_event();
  out_ << "{\"name\":" << quoted(what) << ",\"ph\":\"M\",\"pid\":" << pid;
  if (tid != nullptr) out_ << ",\"tid\":" << *tid;
  out_ << ",\"args\":" << text_of(args) << "}";
}

int TraceWriter::process(std::string_view name) {
  const int pid = next_pid_++;
  process_name(pid, name);
  process_sort_index(pid, pid);
  return pid;
}

TraceTrack TraceWriter::thread(int pid, std::string_view name) {
  const TraceTrack track{pid, next_tid_++};
  thread_name(track.pid, track.tid, name);
  thread_sort_index(track.pid, track.tid, track.tid);
  return track;
}

void TraceWriter::process_name(int pid, std::string_view name) {
  metadata("process_name", pid, nullptr, {{"name", std::string(name)}});
}
void TraceWriter::thread_name(int pid, int tid, std::string_view name) {
  metadata("thread_name", pid, &tid, {{"name", std::string(name)}});
}
void TraceWriter::process_sort_index(int pid, int index) {
  metadata("process_sort_index", pid, nullptr, {{"sort_index", index}});
}
void TraceWriter::thread_sort_index(int pid, int tid, int index) {
  metadata("thread_sort_index", pid, &tid, {{"sort_index", index}});
}

void TraceWriter::complete(std::string_view name, std::string_view category, double ts_ns,
                           double dur_ns, TraceTrack track, const json& args) {
  if (!open_) return;
  write_common(name, category, 'X', ts_ns, track.pid, &track.tid);
  out_ << ",\"dur\":" << micros(dur_ns > 0.0 ? dur_ns : 0.0);
  if (!args.is_null()) out_ << ",\"args\":" << text_of(args);
  out_ << "}";
}

void TraceWriter::instant(std::string_view name, std::string_view category, double ts_ns,
                          TraceTrack track, const json& args) {
  if (!open_) return;
  write_common(name, category, 'i', ts_ns, track.pid, &track.tid);
  out_ << ",\"s\":\"t\"";
  if (!args.is_null()) out_ << ",\"args\":" << text_of(args);
  out_ << "}";
}

void TraceWriter::counter(std::string_view name, double ts_ns, int pid, const json& values) {
  if (!open_) return;
  write_common(name, "", 'C', ts_ns, pid, nullptr);
  out_ << ",\"args\":" << text_of(values.is_null() ? json::object() : values) << "}";
}

void TraceWriter::flow(std::string_view name, std::string_view category, double ts_ns, TraceTrack from, double to_ns,
                       TraceTrack to) {
  if (!open_) return;
  const std::uint64_t id = next_flow_++;
  write_common(name, category, 's', ts_ns, from.pid, &from.tid);
  out_ << ",\"id\":" << id << "}";
  write_common(name, category, 'f', to_ns, to.pid, &to.tid);
  out_ << ",\"id\":" << id << ",\"bp\":\"e\"}";
}

}  // namespace spyre_dma::model
