// The output files a command was asked for, checked before it does its work: a long run must not
// find out at its end that a report cannot be written, nor overwrite one of its own inputs.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace spyre_dma_cli {

struct NamedOutput {
  std::string_view option;  // "--json"
  std::string path;         // empty: not asked for
};

// The file a path names once links and `..` are resolved (as far as they exist), so that two
// spellings of one file compare equal.
std::string resolved_path(const std::string& path);

// Prints what is wrong with each (as "spyre-dma <command>: cannot write ...") and returns false
// if any cannot be written, is also one of `inputs`, or names the same file as another output
// (after resolving links and `..`).
bool check_outputs(std::string_view command, const std::vector<NamedOutput>& outputs,
                   const std::vector<std::string>& inputs = {});

}  // namespace spyre_dma_cli
