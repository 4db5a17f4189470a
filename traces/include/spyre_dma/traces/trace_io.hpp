// Reading and writing traces in the JSON Lines format of traces/README.md.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <stdexcept>
#include <string>

#include "spyre_dma/traces/trace.hpp"

namespace spyre_dma::traces {

// A trace that cannot be read: where (file, 1-based line; 0 when the whole file is concerned),
// which field (a dotted key such as "op.bytes"; "" when the line as a whole is wrong) and why.
// what() is "file:line: field: message".
class TraceError : public std::runtime_error {
 public:
  TraceError(std::string file, std::size_t line, std::string field, std::string message);
  const std::string& file() const noexcept { return file_; }
  std::size_t line() const noexcept { return line_; }
  const std::string& field() const noexcept { return field_; }
  const std::string& message() const noexcept { return message_; }

 private:
  std::string file_;
  std::size_t line_;
  std::string field_;
  std::string message_;
};

// Reads a trace file; gzip-compressed files are recognised by their magic bytes. Throws
// TraceError for a file that does not open or does not follow the format, naming line and field.
Trace read_trace(const std::string& path);
// The same from a stream (plain or gzip); `name` is what errors call the input.
Trace parse_trace(std::istream& in, const std::string& name);

// Writes the trace (uncompressed); optional fields without a value are left out. Throws
// TraceError when check_trace() rejects the trace, std::runtime_error when the stream fails.
void write_trace(const Trace& trace, std::ostream& out);
void write_trace_file(const Trace& trace, const std::string& path);

}  // namespace spyre_dma::traces
