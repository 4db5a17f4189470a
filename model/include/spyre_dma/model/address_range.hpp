// A range of addresses: a TLP's, a segment of a transfer.
#pragma once

#include <cstdint>

namespace spyre_dma::model {

struct AddressRange {
  std::uint64_t addr = 0;
  std::uint64_t len = 0;
  std::uint64_t end() const { return addr + len; }
  friend bool operator==(const AddressRange& a, const AddressRange& b) { return a.addr == b.addr && a.len == b.len; }
  friend bool operator!=(const AddressRange& a, const AddressRange& b) { return !(a == b); }
};

}  // namespace spyre_dma::model
