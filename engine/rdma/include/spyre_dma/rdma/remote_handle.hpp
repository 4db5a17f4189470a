// A range of memory one node exposes to its peers, as it hands it out: the owner's address (where
// to reach it), the range's base and size in the owner's address space, and the key that opens it.
// It travels as one line of text (to_text / from_text), through a file, the environment of a job
// or any message, so the two sides need share nothing but that line.
//
//   spyre-dma-remote 1 size=4194304 base=0x7f3a5c000000 owner=<hex> key=<hex>
//
// The owner and key are opaque bytes of the transport (UCX: the worker address and the packed
// remote key), written in hex.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "spyre_dma/status.hpp"

namespace spyre_dma::rdma {

struct RemoteHandle {
  std::string owner;          // where the owner is reached (transport bytes)
  std::uint64_t base = 0;     // the range's first byte, in the owner's address space
  std::uint64_t size = 0;     // bytes; an access must lie in [base, base + size)
  std::string key;            // what opens the range to a peer (transport bytes)

  bool valid() const noexcept { return size != 0 && !owner.empty() && !key.empty(); }
  // Whether an access of `bytes` at `offset` lies in the range: ok, or InvalidArgument
  // ("<op>: N bytes at offset O leave the remote range of S bytes"; 0 bytes is one too).
  Status check(const char* op, std::uint64_t offset, std::uint64_t bytes) const;
  std::string to_text() const;
  // Throws spyre_dma::InvalidArgument naming the field that is missing or malformed.
  static RemoteHandle from_text(std::string_view text);
  bool operator==(const RemoteHandle& o) const {
    return owner == o.owner && base == o.base && size == o.size && key == o.key;
  }
};

}  // namespace spyre_dma::rdma
