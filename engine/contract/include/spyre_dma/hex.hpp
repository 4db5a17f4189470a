// How every message of the project writes an address, an IOVA or a register value: "0x" and the
// lowercase hex digits.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace spyre_dma {

inline std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace spyre_dma
