// Decoding gzip inputs (Kineto profiles, trace files), once for every reader, with a cap on what
// they may inflate to: a few kilobytes of gzip can expand to gigabytes.
#pragma once

#include <cstddef>
#include <string>

namespace spyre_dma::traces::detail {

// The largest an input may inflate to: the input cap of spyre_dma/input_file.hpp (4 GiB, or
// SPYRE_DMA_MAX_INPUT_BYTES); a malformed value there is refused, naming it.
std::size_t max_inflated_bytes();

// The decoded bytes of the gzip stream `data` read from `name`; throws TraceError naming the file
// for corrupt or truncated data and for output beyond `limit` bytes (before holding more).
std::string gunzip(const std::string& data, const std::string& name, std::size_t limit = max_inflated_bytes());

}  // namespace spyre_dma::traces::detail
