// Output files that are never half-written: every report, trace and plot the tools write goes
// through here. The content is written to a temporary file in the same folder (so the final
// rename stays on one filesystem), flushed to disk, and only then renamed over the target; on
// any failure the temporary is removed and an existing file at the target is left as it was.
#pragma once

#include <functional>
#include <iosfwd>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace spyre_dma::traces {

// An output that could not be written, or may not be: names the path and why.
class OutputError : public std::runtime_error {
 public:
  OutputError(std::string path, const std::string& why);
  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
};

// Writes `path` atomically; `write` fills the stream (an exception from it abandons the file).
void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& write);
void write_file_atomically(const std::string& path, std::string_view content);

// Checks, before a long run, that `path` can be written at its end: not empty, not a folder, its
// folder exists and this process may create files in it. `what` names the option ("--json").
void check_output_path(const std::string& path, std::string_view what);

// Refuses an output that is also one of the inputs (the same file, however it is named).
void check_not_an_input(const std::string& output, std::string_view what, const std::vector<std::string>& inputs);

}  // namespace spyre_dma::traces
