// The small text rules every reader and command shares, written once: ASCII case folding (unit
// names, option values, file extensions) and trimming of the white space around a field.
#pragma once

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

namespace spyre_dma {

// `s` with ASCII letters in lower case (other bytes as they are, whatever the locale).
inline std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// `s` without the white space (std::isspace) at either end.
inline std::string trim(std::string_view s) {
  const auto not_space = [](unsigned char c) { return !std::isspace(c); };
  const auto b = std::find_if(s.begin(), s.end(), not_space);
  const auto e = std::find_if(s.rbegin(), s.rend(), not_space).base();
  return b < e ? std::string(b, e) : std::string();
}

}  // namespace spyre_dma
