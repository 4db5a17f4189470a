// Byte sizes on the command line: "4096", "4K", "4KiB", "64MiB", "1G" (binary units: K, KB and
// KiB all mean 1024), and size lists for --sizes: comma-separated items, each a size or a range
// "A..B" (A, 4A, 16A, ... up to B) or "A..B*F" (a factor F >= 2 instead of 4).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace spyre_dma_cli {

// Throws std::invalid_argument with a message naming the offending text.
std::uint64_t parse_size(const std::string& text);
std::vector<std::uint64_t> parse_size_list(const std::string& text);

// "4 KiB", "64 MiB", "1536 KiB", "1000 B": the largest binary unit that divides the size exactly.
std::string format_size(std::uint64_t bytes);

}  // namespace spyre_dma_cli
