// Directed tests: small JSON files that spell out a Program (buffers, streams, operations) and
// what each operation must return. The format is documented in docs/regress.md ("Directed tests");
// testbench/regress/directed/ holds the project's set.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "program.hpp"

namespace spyre_dma::regress {

// A directed file that cannot be used: names the file, the place (line:column for syntax errors,
// the JSON path of the offending key otherwise) and what is wrong with the value.
class DirectedError : public std::runtime_error {
 public:
  DirectedError(std::string file, std::string where, std::string message);
  const std::string& file() const noexcept { return file_; }
  const std::string& where() const noexcept { return where_; }
  const std::string& message() const noexcept { return message_; }

 private:
  std::string file_, where_, message_;
};

struct DirectedTest {
  std::string name;
  std::string description;
  // The seed the model's random faults draw from; none: the file's index in its folder.
  std::optional<std::uint64_t> seed;
  std::vector<std::string> backends;  // empty: every backend
  Program program;
};

// A program in the directed format (so that any random test can be kept as a directed one);
// parse_directed() of the result gives the same program back. `with_seed`: the program's seed is
// kept (its random faults then draw the same numbers wherever the file lies).
std::string to_directed_json(const Program& program, const std::string& description = {}, bool with_seed = false);

DirectedTest parse_directed(const std::string& text, const std::string& file);
DirectedTest load_directed(const std::string& path);
// The *.json files of a folder, sorted by name (the directed suite's seeds index this list).
std::vector<std::string> directed_files(const std::string& folder);

}  // namespace spyre_dma::regress
