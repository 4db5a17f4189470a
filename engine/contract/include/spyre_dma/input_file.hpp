// The rules every reader of outside input follows (traces, captured logs, model configurations,
// directed tests, regression reports, handle files), written once:
//   * Only regular files are read. A FIFO, a directory, a device or a socket is refused by name
//     before anything blocks on it (the file is opened non-blocking, then checked).
//   * A size cap: kMaxInputBytes (4 GiB) unless SPYRE_DMA_MAX_INPUT_BYTES raises (or lowers) it;
//     a larger file is refused before it is read, a decompressed input at the cap.
//   * A JSON nesting limit: kMaxJsonDepth levels of arrays and objects. Deeper input is refused
//     before it is parsed (the parsed tree's copies and destructors recurse; 100,000 levels would
//     overflow the stack), at the byte where it goes too deep.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace spyre_dma {

inline constexpr std::uint64_t kMaxInputBytes = 4ull << 30;
inline constexpr unsigned kMaxJsonDepth = 128;

// A file that cannot be read under the rules above; what() names the path and the reason.
class InputFileError : public std::runtime_error {
 public:
  InputFileError(const std::string& path, const std::string& why)
      : std::runtime_error(path + ": " + why), path_(path), why_(why) {}
  const std::string& path() const noexcept { return path_; }
  const std::string& why() const noexcept { return why_; }

 private:
  std::string path_;
  std::string why_;
};

// The cap in force: SPYRE_DMA_MAX_INPUT_BYTES (a positive integer of bytes) or kMaxInputBytes.
// Throws std::invalid_argument naming the variable for a value that is not one.
std::uint64_t max_input_bytes();

// The whole file, under the rules above. Throws InputFileError (its path SPYRE_DMA_MAX_INPUT_BYTES
// when that is what is wrong).
std::string read_input_file(const std::string& path);

// The 0-based byte offset of the bracket at which `text` nests deeper than `max_depth` arrays
// and objects (brackets inside strings do not count), or std::string_view::npos.
std::size_t json_too_deep_at(std::string_view text, unsigned max_depth = kMaxJsonDepth) noexcept;

// "nests deeper than 128 levels of arrays and objects", for the readers' own error types.
std::string json_too_deep_message(unsigned max_depth = kMaxJsonDepth);

}  // namespace spyre_dma
