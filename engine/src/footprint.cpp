// Ordering by footprint: see footprint.hpp.
#include "footprint.hpp"

#include <algorithm>

namespace spyre_dma::detail {
namespace {

Touch host(const void* p, std::uint64_t bytes, bool write) {
  const auto lo = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p));
  return Touch{0, lo, lo + bytes, write};
}

Touch device(const AllocationState& a, std::uint64_t offset, std::uint64_t bytes, bool write) {
  return Touch{a.id, offset, offset + bytes, write};
}

// Whether the stream's own order already puts `later` after `earlier` (both of `s`).
bool stream_orders(const StreamState& s, const OpState& earlier, const OpState& later) {
  return s.options.ordering != Ordering::kPipelineFifo || earlier.pipe == later.pipe;
}

}  // namespace

Footprint Footprint::of(const OpState& op) {
  Footprint f;
  if (op.bytes == 0) return f;
  switch (op.kind) {
    case OpKind::kH2D:
      f.touch[f.n++] = host(op.host_src, op.bytes, false);
      f.touch[f.n++] = device(*op.dst, op.dst_offset, op.bytes, true);
      break;
    case OpKind::kD2H:
      f.touch[f.n++] = device(*op.src, op.src_offset, op.bytes, false);
      f.touch[f.n++] = host(op.host_dst, op.bytes, true);
      break;
    case OpKind::kD2D:
      f.touch[f.n++] = device(*op.src, op.src_offset, op.bytes, false);
      f.touch[f.n++] = device(*op.dst, op.dst_offset, op.bytes, true);
      break;
    case OpKind::kFill: f.touch[f.n++] = device(*op.dst, op.dst_offset, op.bytes, true); break;
    default: break;
  }
  return f;
}

unsigned HazardTracker::add(OpState& op, const Footprint& fp) {
  unsigned waits = 0;
  std::vector<OpState*> after;  // each earlier op once, though both its touches may overlap
  for (unsigned i = 0; i < fp.n; ++i) {
    const Touch& t = fp.touch[i];
    const auto space = spaces_.find(t.space);
    if (space == spaces_.end()) continue;
    const Index& index = space->second.by_lo;
    const std::uint64_t from = t.lo >= space->second.longest ? t.lo - space->second.longest + 1 : 0;
    for (auto it = index.lower_bound(from); it != index.end() && it->first < t.hi; ++it) {
      const Live& l = it->second;
      if (l.hi <= t.lo || !(l.write || t.write)) continue;
      if (l.op->stream == op.stream && stream_orders(*op.stream, *l.op, op)) continue;
      if (std::find(after.begin(), after.end(), l.op) != after.end()) continue;
      after.push_back(l.op);
    }
  }
  for (OpState* earlier : after) {
    entries_[earlier].followers.push_back(&op);
    ++waits;
  }
  op.footprint_waits = waits;
  op.footprint_live = true;
  Entry& e = entries_[&op];
  e.follows = std::move(after);
  for (unsigned i = 0; i < fp.n; ++i) {
    const Touch& t = fp.touch[i];
    Space& space = spaces_[t.space];
    space.longest = std::max(space.longest, t.hi - t.lo);
    e.at[e.n] = space.by_lo.emplace(t.lo, Live{t.hi, t.write, &op});
    e.space[e.n++] = t.space;
  }
  return waits;
}

void HazardTracker::remove(OpState& op, std::vector<OpState*>& followers) {
  op.footprint_live = false;
  const auto found = entries_.find(&op);
  if (found == entries_.end()) return;
  Entry& e = found->second;
  for (unsigned i = 0; i < e.n; ++i) {
    const auto space = spaces_.find(e.space[i]);
    space->second.by_lo.erase(e.at[i]);
    if (space->second.by_lo.empty()) spaces_.erase(space);
  }
  for (OpState* earlier : e.follows) {  // those still live, which it never got to follow
    const auto it = entries_.find(earlier);
    if (it == entries_.end()) continue;
    auto& list = it->second.followers;
    list.erase(std::remove(list.begin(), list.end(), &op), list.end());
  }
  for (OpState* f : e.followers) {
    --f->footprint_waits;
    followers.push_back(f);
  }
  entries_.erase(found);
}

const OpState* HazardTracker::first_awaited(const OpState& op) const {
  const OpState* first = nullptr;
  for (const auto& [earlier, e] : entries_) {
    if (std::find(e.followers.begin(), e.followers.end(), &op) == e.followers.end()) continue;
    if (!first || earlier->id < first->id) first = earlier;
  }
  return first;
}

}  // namespace spyre_dma::detail
