// What the importers share to read a capture: the file's text, its lines and words, and a capped
// list of notes about what they left out.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "spyre_dma/text.hpp"

namespace spyre_dma::traces::detail {

// The file's bytes. Throws TraceError(path, 0, "", "cannot open" or "read error").
std::string read_file_text(const std::string& path);
// Refuses JSON nested deeper than spyre_dma/input_file.hpp allows, before it is parsed: a
// TraceError naming `name` and the line (`line`, or the one of the offending bracket when 0).
void check_json_depth(std::string_view text, const std::string& name, std::size_t line = 0);
// The file name without its folders: what a header's source names, so that a trace does not
// depend on where its capture lay.
std::string base_name(const std::string& path);

// 1-based line of byte offset `byte` of `text` (a parser's error position).
std::size_t line_of(const std::string& text, std::size_t byte);
using spyre_dma::trim;  // spyre_dma/text.hpp
bool starts_with(std::string_view s, std::string_view prefix);

// A capture of many odd entries would otherwise carry a note for each: the first kMaxNotes are
// kept, then one line says that more were left out.
inline constexpr std::size_t kMaxNotes = 40;
void add_note(std::vector<std::string>& notes, std::string text);

}  // namespace spyre_dma::traces::detail
