#include "device_allocator.hpp"

#include <string>
#include <vector>

#include "spyre_dma/status.hpp"

namespace spyre_dma::detail {
namespace {
constexpr std::uint64_t round_up(std::uint64_t v, std::uint64_t a) { return (v + a - 1) / a * a; }
}  // namespace

DeviceAllocator::DeviceAllocator(std::uint64_t usable_bytes) {
  const std::uint64_t per_segment =
      std::min<std::uint64_t>(usable_bytes / hw::kNumSegments / hw::kFlitBytes * hw::kFlitBytes,
                              hw::kSegmentBytes);
  for (auto& list : free_) {
    if (per_segment) list.emplace(0, per_segment);
  }
  capacity_ = per_segment * hw::kNumSegments;
}

bool DeviceAllocator::take(std::uint8_t segment, std::uint64_t want, std::uint64_t min,
                           DeviceChunk& out) {
  FreeList& list = free_[segment];
  // First fit for the whole request; failing that, the largest range of at least `min`.
  auto best = list.end();
  for (auto it = list.begin(); it != list.end(); ++it) {
    if (it->second >= want) {
      best = it;
      break;
    }
    if (it->second >= min && (best == list.end() || it->second > best->second)) best = it;
  }
  if (best == list.end()) return false;
  const std::uint64_t size = std::min(want, best->second);
  out = DeviceChunk{segment, best->first, size};
  const std::uint64_t rest_offset = best->first + size, rest = best->second - size;
  list.erase(best);
  if (rest) list.emplace(rest_offset, rest);
  return true;
}

void DeviceAllocator::give_back(std::uint8_t segment, std::uint64_t offset, std::uint64_t size) {
  FreeList& list = free_[segment];
  auto next = list.lower_bound(offset);
  if (next != list.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      offset = prev->first;
      size += prev->second;
      list.erase(prev);
    }
  }
  if (next != list.end() && offset + size == next->first) {
    size += next->second;
    list.erase(next);
  }
  list.emplace(offset, size);
}

CompositeAddress DeviceAllocator::allocate(std::uint64_t bytes, std::uint64_t max_chunk_bytes) {
  if (bytes == 0) throw InvalidArgument("device allocation of 0 bytes");
  if (max_chunk_bytes % hw::kFlitBytes != 0) {
    throw InvalidArgument("AllocOptions::max_chunk_bytes " + std::to_string(max_chunk_bytes) +
                          " is not a multiple of 128");
  }
  std::lock_guard lock(mu_);
  // Checked before any arithmetic: rounding a size near 2^64 up to a flit wraps to zero.
  if (bytes > capacity_ - allocated_) {
    throw OutOfMemory("device allocation of " + std::to_string(bytes) + " bytes: only " +
                      std::to_string(capacity_ - allocated_) + " of " + std::to_string(capacity_) +
                      " bytes free");
  }
  const std::uint64_t need = round_up(bytes, hw::kFlitBytes);
  const std::uint64_t chunk_cap = max_chunk_bytes ? max_chunk_bytes : hw::kSegmentBytes;
  std::vector<DeviceChunk> chunks;
  std::uint64_t got = 0;
  // Each chunk: the next segment (round-robin, so chunks spread out) with a free range that holds
  // the whole piece; when none has one, the largest range anywhere (scatter-gather).
  while (got < need) {
    const std::uint64_t want = std::min(need - got, chunk_cap);
    DeviceChunk c;
    bool found = false;
    for (unsigned i = 0; i < hw::kNumSegments && !found; ++i) {
      const auto seg = static_cast<std::uint8_t>((next_segment_ + i) % hw::kNumSegments);
      found = take(seg, want, want, c);
    }
    if (!found) {
      std::uint8_t best_seg = 0;
      std::uint64_t best = 0;
      for (unsigned seg = 0; seg < hw::kNumSegments; ++seg) {
        for (const auto& [off, size] : free_[seg]) {
          if (size > best) best = size, best_seg = static_cast<std::uint8_t>(seg);
        }
      }
      found = best != 0 && take(best_seg, want, hw::kFlitBytes, c);
    }
    if (!found) break;
    next_segment_ = (c.segment + 1u) % hw::kNumSegments;
    chunks.push_back(c);
    got += c.size;
  }
  if (got < need) {
    for (const DeviceChunk& c : chunks) give_back(c.segment, c.offset, c.size);
    throw OutOfMemory("device allocation of " + std::to_string(bytes) + " bytes: only " +
                      std::to_string(capacity_ - allocated_) + " of " + std::to_string(capacity_) +
                      " bytes free");
  }
  allocated_ += got;
  // Keep logical order = allocation order; the last chunk may be padded to a flit.
  return CompositeAddress(std::move(chunks));
}

void DeviceAllocator::free(const CompositeAddress& address) noexcept {
  std::lock_guard lock(mu_);
  for (const DeviceChunk& c : address.chunks()) {
    give_back(c.segment, c.offset, c.size);
    allocated_ -= c.size;
  }
}

std::uint64_t DeviceAllocator::allocated_bytes() const {
  std::lock_guard lock(mu_);
  return allocated_;
}

}  // namespace spyre_dma::detail
