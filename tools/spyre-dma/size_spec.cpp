#include "size_spec.hpp"
#include "spyre_dma/text.hpp"

#include <algorithm>
#include <cctype>
#include <limits>
#include <stdexcept>

namespace spyre_dma_cli {
using spyre_dma::lower;
using spyre_dma::trim;

std::uint64_t parse_size(const std::string& raw) {
  const std::string text = trim(raw);
  if (text.empty()) throw std::invalid_argument("empty size");
  std::size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0) throw std::invalid_argument("'" + text + "' is not a size (expected e.g. 4096, 4K, 64MiB)");
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < digits; ++i) {
    const std::uint64_t d = static_cast<std::uint64_t>(text[i] - '0');
    if (value > (std::numeric_limits<std::uint64_t>::max() - d) / 10) {
      throw std::invalid_argument("'" + text + "' is too large");
    }
    value = value * 10 + d;
  }
  const std::string unit = lower(trim(text.substr(digits)));
  unsigned shift = 0;
  if (unit.empty() || unit == "b") shift = 0;
  else if (unit == "k" || unit == "kb" || unit == "kib") shift = 10;
  else if (unit == "m" || unit == "mb" || unit == "mib") shift = 20;
  else if (unit == "g" || unit == "gb" || unit == "gib") shift = 30;
  else {
    throw std::invalid_argument("'" + text + "': unknown unit '" + text.substr(digits) +
                                "' (use B, K, M or G, optionally as KiB, MiB, GiB)");
  }
  if (shift && value > (std::numeric_limits<std::uint64_t>::max() >> shift)) {
    throw std::invalid_argument("'" + text + "' is too large");
  }
  value <<= shift;
  if (value == 0) throw std::invalid_argument("'" + text + "': a size must be at least 1 byte");
  return value;
}

std::vector<std::uint64_t> parse_size_list(const std::string& text) {
  std::vector<std::uint64_t> sizes;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = text.find(',', start);
    const std::string item = trim(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (item.empty()) throw std::invalid_argument("'" + text + "': empty item in the size list");
    const std::size_t dots = item.find("..");
    if (dots == std::string::npos) {
      sizes.push_back(parse_size(item));
    } else {
      std::string hi_text = item.substr(dots + 2);
      std::uint64_t factor = 4;
      const std::size_t star = hi_text.find('*');
      if (star != std::string::npos) {
        const std::string f = trim(hi_text.substr(star + 1));
        if (f.empty() || f.find_first_not_of("0123456789") != std::string::npos) {
          throw std::invalid_argument("'" + item + "': the factor after '*' must be a whole number");
        }
        factor = std::stoull(f);
        if (factor < 2) throw std::invalid_argument("'" + item + "': the factor after '*' must be at least 2");
        hi_text = hi_text.substr(0, star);
      }
      const std::uint64_t lo = parse_size(item.substr(0, dots));
      const std::uint64_t hi = parse_size(hi_text);
      if (lo > hi) throw std::invalid_argument("'" + item + "': the range runs backwards");
      for (std::uint64_t s = lo; s <= hi; s *= factor) {
        sizes.push_back(s);
        if (s > hi / factor) break;  // the next step would pass hi (or overflow)
      }
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return sizes;
}

std::string format_size(std::uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  unsigned u = 0;
  while (u + 1 < std::size(kUnits) && bytes != 0 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++u;
  }
  return std::to_string(bytes) + " " + kUnits[u];
}

}  // namespace spyre_dma_cli
