#include "text_input.hpp"

#include <algorithm>
#include <cctype>

#include "spyre_dma/input_file.hpp"
#include "spyre_dma/traces/trace_io.hpp"

namespace spyre_dma::traces::detail {

std::string read_file_text(const std::string& path) {
  try {
    return read_input_file(path);
  } catch (const InputFileError& e) {
    throw TraceError(e.path(), 0, "", e.why());
  }
}

void check_json_depth(std::string_view text, const std::string& name, std::size_t line) {
  if (const std::size_t at = json_too_deep_at(text); at != std::string_view::npos) {
    if (line == 0) line = 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
    throw TraceError(name, line, "",
                     "invalid JSON: " + json_too_deep_message() + " (at byte " + std::to_string(at) + ")");
  }
}

std::string base_name(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::size_t line_of(const std::string& text, std::size_t byte) {
  byte = std::min(byte, text.size());
  return 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(byte), '\n'));
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

void add_note(std::vector<std::string>& notes, std::string text) {
  if (notes.size() < kMaxNotes) {
    notes.push_back(std::move(text));
  } else if (notes.size() == kMaxNotes) {
    notes.push_back("... further notes left out");
  }
}

}  // namespace spyre_dma::traces::detail
