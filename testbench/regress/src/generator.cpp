#include "generator.hpp"

#include <algorithm>
#include <array>
#include <vector>

#include "rng.hpp"

namespace spyre_dma::regress {
namespace {

constexpr std::uint64_t KiB = 1024, MiB = 1024 * KiB;
constexpr std::uint64_t kSmallBuffer = 2 * MiB;
constexpr std::uint64_t kBigThreshold = 256 * KiB;  // ops above this use the big buffer pair
constexpr std::uint32_t kMaxEvents = 24;            // events are reused round robin beyond this

// A size in [lo, hi], half the time on an edge that matters to the data path.
std::uint64_t edge_size(Rng& r, std::uint64_t lo, std::uint64_t hi, std::uint64_t max_cb) {
  if (r.chance(0.5)) {
    static constexpr std::array<std::uint64_t, 4> kUnits{128, 512, 4096, 0};
    std::uint64_t unit = kUnits[r.below(kUnits.size())];
    if (unit == 0) unit = max_cb;
    const std::uint64_t k_lo = std::max<std::uint64_t>(1, (lo + unit - 1) / unit);
    const std::uint64_t k_hi = hi / unit;
    if (k_hi >= k_lo) {
      const std::uint64_t base = r.between(k_lo, k_hi) * unit;
      static constexpr std::array<std::int64_t, 5> kNudge{0, 0, 1, -1, 128};
      const std::int64_t nudge = kNudge[r.below(kNudge.size())] * (r.chance(0.5) ? 1 : -1);
      const auto s = static_cast<std::int64_t>(base) + nudge;
      if (s >= static_cast<std::int64_t>(lo) && s <= static_cast<std::int64_t>(hi)) return static_cast<std::uint64_t>(s);
      return base;
    }
  }
  return r.between(lo, hi);
}

std::uint64_t draw_size(Rng& r, const GeneratorProfile& prof, std::uint64_t max_cb) {
  const double u = r.unit();
  std::uint64_t lo = 1, hi = KiB;
  if (u < prof.large_fraction) {
    const double v = r.unit();
    lo = MiB + 1, hi = v < 0.85 ? 16 * MiB : prof.max_op_bytes;
  } else if (u < prof.large_fraction + (1 - prof.large_fraction) * prof.tiny_share) {
    lo = 1, hi = KiB;
  } else if (u < prof.large_fraction + (1 - prof.large_fraction) * (prof.tiny_share + prof.small_share)) {
    lo = KiB + 1, hi = 64 * KiB;
  } else {
    lo = 64 * KiB + 1, hi = MiB;
  }
  hi = std::min(hi, prof.max_op_bytes);
  lo = std::min(lo, hi);
  return edge_size(r, lo, hi, max_cb);
}

struct Range {
  std::uint64_t lo, hi;  // [lo, hi)
  bool overlaps(std::uint64_t a, std::uint64_t b) const { return a < hi && lo < b; }
};
struct Write {
  Range range;
  std::uint32_t stream;
  Queue pipe;
};
// What the current epoch did to one buffer.
struct EpochUse {
  std::vector<Write> writes;
  std::vector<Range> reads;
  bool free_for_write(std::uint64_t a, std::uint64_t b) const {
    for (const Write& w : writes) if (w.range.overlaps(a, b)) return false;
    for (const Range& x : reads) if (x.overlaps(a, b)) return false;
    return true;
  }
};

class Builder {
 public:
  Builder(const GeneratorProfile& prof, std::uint64_t seed) : prof_(prof), r_(seed ^ 0x5eed5eed0000ull) {}

  Program build(std::uint64_t seed) {
    p_.name = "random";
    p_.seed = seed;
    choose_tuning();
    choose_streams();
    std::vector<std::uint64_t> sizes(prof_.ops);
    std::uint64_t largest = 0;
    for (auto& s : sizes) {
      s = draw_size(r_, prof_, max_cb_);
      if (s > kBigThreshold) largest = std::max(largest, s);
    }
    choose_buffers(largest);
    choose_faults(seed);
    std::uint32_t epoch_left = next_epoch_length();
    for (std::uint32_t k = 0; k < prof_.ops; ++k) {
      if (!emit_op(sizes[k])) {  // no room left in this epoch: close it and try again
        sync();
        epoch_left = next_epoch_length();
        (void)emit_op(sizes[k]);
      }
      if (--epoch_left == 0) {
        sync();
        epoch_left = next_epoch_length();
      }
    }
    sync();
    p_.events = std::max<std::uint32_t>(p_.events, 1);
    return std::move(p_);
  }

 private:
  std::uint32_t next_epoch_length() {
    // A few seeds run long epochs of tiny ops against small rings: queue-full pressure.
    if (pressure_) return static_cast<std::uint32_t>(r_.between(64, 400));
    return static_cast<std::uint32_t>(r_.between(prof_.epoch_min, prof_.epoch_max));
  }

  void choose_tuning() {
    if (r_.chance(0.25)) {
      static constexpr std::array<std::uint32_t, 3> kSlots{16, 32, 64};
      p_.tuning.ring_slots = kSlots[r_.below(kSlots.size())];
      pressure_ = r_.chance(0.5);
    }
    if (r_.chance(0.2)) {
      static constexpr std::array<std::uint64_t, 3> kCb{64 * KiB, 256 * KiB, MiB};
      p_.tuning.max_cb_bytes = kCb[r_.below(kCb.size())];
    }
    if (r_.chance(0.2)) {
      p_.tuning.staging_buffers = static_cast<std::uint32_t>(r_.between(2, 3));
      static constexpr std::array<std::uint64_t, 3> kStage{128 * KiB, 256 * KiB, MiB};
      p_.tuning.staging_buffer_bytes = kStage[r_.below(kStage.size())];
    }
    max_cb_ = p_.tuning.max_cb_bytes ? p_.tuning.max_cb_bytes : 4 * MiB;
    // Drawn only where the profile asks for it, so that the other profiles' programs stay as they were.
    if (prof_.footprint_share > 0) p_.tuning.order_by_footprint = r_.chance(prof_.footprint_share);
  }

  void choose_streams() {
    const auto n = static_cast<std::uint32_t>(r_.between(1, std::max<std::uint32_t>(1, prof_.max_streams)));
    for (std::uint32_t i = 0; i < n; ++i) {
      StreamSpec s;
      const double u = r_.unit();
      s.ordering = u < 0.6 ? Ordering::kStrict : u < 0.8 ? Ordering::kOpOrdered : Ordering::kPipelineFifo;
      s.priority = static_cast<int>(r_.below(3)) - 1;
      // Drawn only where the profile asks for it, so that the other profiles' programs stay as they were.
      if (prof_.propagate_share > 0 && r_.chance(prof_.propagate_share)) s.on_failure = FailurePolicy::kPropagate;
      p_.streams.push_back(s);
    }
  }

  std::uint64_t chunk_choice() {
    if (!r_.chance(0.4)) return 0;
    static constexpr std::array<std::uint64_t, 5> kChunks{4 * KiB, 16 * KiB, 64 * KiB, 192 * KiB, MiB};
    return kChunks[r_.below(kChunks.size())];
  }

  void choose_buffers(std::uint64_t largest) {
    const auto nh = static_cast<std::uint32_t>(r_.between(2, 4));
    for (std::uint32_t i = 0; i < nh; ++i) {
      HostBufferSpec h;
      h.bytes = kSmallBuffer + r_.below(64) * 128 + r_.below(128);
      h.kind = r_.chance(0.55) ? HostKind::kRegistered : HostKind::kPageable;
      if (h.kind == HostKind::kPageable && r_.chance(0.4)) h.misalign = static_cast<std::uint32_t>(r_.between(1, 127));
      p_.host_buffers.push_back(h);
    }
    const auto nd = static_cast<std::uint32_t>(r_.between(2, 4));
    for (std::uint32_t i = 0; i < nd; ++i) {
      DeviceBufferSpec d;
      d.bytes = kSmallBuffer + r_.below(64) * 128;
      d.max_chunk_bytes = chunk_choice();
      p_.device_buffers.push_back(d);
    }
    small_host_ = nh;
    small_dev_ = nd;
    if (largest > 0) {
      // Room for the largest op twice over, so that source and destination fit in one epoch.
      const std::uint64_t big = 2 * ((largest + 4 * KiB + 127) / 128 * 128);
      p_.host_buffers.push_back(HostBufferSpec{big, r_.chance(0.6) ? HostKind::kRegistered : HostKind::kPageable, 0});
      p_.host_buffers.push_back(HostBufferSpec{big, HostKind::kRegistered, 0});
      const std::uint64_t chunk = r_.chance(0.5) ? 0 : std::max<std::uint64_t>(MiB, (largest / 3 + 127) / 128 * 128);
      p_.device_buffers.push_back(DeviceBufferSpec{big, chunk});
      p_.device_buffers.push_back(DeviceBufferSpec{big, 0});
    }
    host_use_.resize(p_.host_buffers.size());
    dev_use_.resize(p_.device_buffers.size());
  }

  void choose_faults(std::uint64_t seed) {
    if (prof_.fault_rate > 0) {
      const double tlp = prof_.fault_rate / 5;
      p_.faults.poisoned_rate = p_.faults.unsupported_request_rate = p_.faults.completer_abort_rate = tlp;
      p_.faults.dropped_completion_rate = p_.faults.lcrc_rate = tlp;
      p_.faults.iommu_fault_rate = p_.faults.malformed_cb_rate = prof_.fault_rate / 10;
      p_.faults.device_reset_rate = prof_.fault_rate / 100;
    }
    if (prof_.fault_at_cb) {
      p_.faults.at_cb_fault = kFaultKinds[seed % std::size(kFaultKinds)];
      p_.faults.at_cb = r_.between(1, std::max<std::uint64_t>(2, prof_.ops / 2));
    }
  }

  // A random offset for `bytes` in a buffer of `size`: device offsets in flits, host offsets
  // aligned or not; sometimes straddling a chunk boundary.
  std::uint64_t pick_offset(std::uint64_t size, std::uint64_t bytes, bool device, std::uint64_t chunk,
                            bool aligned_host) {
    const std::uint64_t room = size - bytes;
    if (device || aligned_host) {
      if (device && chunk > 0 && bytes > 128 && r_.chance(0.35)) {
        const std::uint64_t boundaries = size / chunk;
        if (boundaries > 0) {
          const std::uint64_t b = r_.between(1, boundaries) * chunk;
          const std::uint64_t back = std::min<std::uint64_t>(b, 128 * r_.between(1, 8));
          const std::uint64_t off = b - back;
          if (off <= room) return off;
        }
      }
      return 128 * r_.below(room / 128 + 1);
    }
    return r_.below(room + 1);
  }

  // Finds a free range of `bytes` for a write (write_once) or any range for a read.
  bool place(bool device, std::uint32_t& buf, std::uint64_t bytes, bool for_write, std::uint64_t& offset) {
    const bool big = bytes > kBigThreshold;
    const std::uint32_t first = big ? (device ? small_dev_ : small_host_) : 0;
    const std::uint32_t count = big ? 2 : (device ? small_dev_ : small_host_);
    if (big && (device ? p_.device_buffers.size() : p_.host_buffers.size()) < first + 2) return false;
    for (int attempt = 0; attempt < 8; ++attempt) {
      const auto b = static_cast<std::uint32_t>(first + r_.below(count));
      const std::uint64_t size = device ? p_.device_buffers[b].bytes : p_.host_buffers[b].bytes;
      if (bytes > size) continue;
      const bool registered = !device && p_.host_buffers[b].kind == HostKind::kRegistered;
      const std::uint64_t off =
          pick_offset(size, bytes, device, device ? p_.device_buffers[b].max_chunk_bytes : 0,
                      registered && r_.chance(0.75));
      const EpochUse& use = device ? dev_use_[b] : host_use_[b];
      // Reads may go anywhere: order_reads() orders them after the epoch's writes they overlap.
      if (for_write && !use.free_for_write(off, off + bytes)) continue;
      buf = b;
      offset = off;
      return true;
    }
    return false;
  }

  // Orders the op about to be emitted on `stream` after every epoch write it reads (with ordering
  // by footprint, the engine's job).
  void order_reads(std::uint32_t stream, Queue pipe, const EpochUse& use, std::uint64_t lo, std::uint64_t hi) {
    if (p_.tuning.order_by_footprint) return;
    for (const Write& w : use.writes) {
      if (!w.range.overlaps(lo, hi)) continue;
      const bool ordered = w.stream == stream && stream_orders(p_, stream, w.pipe, pipe);
      if (!ordered) link(w.stream, stream);
    }
  }

  void link(std::uint32_t from, std::uint32_t to) {
    const std::uint32_t e = next_event_++ % kMaxEvents;
    p_.events = std::max(p_.events, e + 1);
    OpSpec rec;
    rec.type = OpType::kRecord, rec.stream = from, rec.event = e;
    OpSpec wait;
    wait.type = OpType::kWait, wait.stream = to, wait.event = e;
    p_.ops.push_back(rec);
    p_.ops.push_back(wait);
  }

  bool emit_op(std::uint64_t bytes) {
    const auto stream = static_cast<std::uint32_t>(r_.below(p_.streams.size()));
    const double u = r_.unit();
    OpSpec op;
    op.stream = stream;
    op.bytes = bytes;
    if (u < 0.30) op.type = OpType::kH2D;
    else if (u < 0.58) op.type = OpType::kD2H;
    else if (u < 0.70) op.type = OpType::kD2D;
    else if (u < 0.80) op.type = OpType::kFill;
    else if (u < 0.86) op.type = OpType::kCompute;
    else if (u < 0.89) op.type = OpType::kHostCallback;
    else if (u < 0.93) {  // an event with no data dependency behind it
      const auto other = static_cast<std::uint32_t>(r_.below(p_.streams.size()));
      link(other, stream);
      return true;
    } else {
      op.type = OpType::kH2D;  // extra weight on the most common direction
    }
    const Queue pipe = queue_of(op.type);
    switch (op.type) {
      case OpType::kH2D: {
        if (!place(true, op.dev, bytes, true, op.dev_offset)) return false;
        if (!place(false, op.host, bytes, false, op.host_offset)) return false;
        order_reads(stream, pipe, host_use_[op.host], op.host_offset, op.host_offset + bytes);
        host_use_[op.host].reads.push_back({op.host_offset, op.host_offset + bytes});
        dev_use_[op.dev].writes.push_back({{op.dev_offset, op.dev_offset + bytes}, stream, pipe});
        break;
      }
      case OpType::kD2H: {
        if (!place(false, op.host, bytes, true, op.host_offset)) return false;
        if (!place(true, op.dev, bytes, false, op.dev_offset)) return false;
        order_reads(stream, pipe, dev_use_[op.dev], op.dev_offset, op.dev_offset + bytes);
        dev_use_[op.dev].reads.push_back({op.dev_offset, op.dev_offset + bytes});
        host_use_[op.host].writes.push_back({{op.host_offset, op.host_offset + bytes}, stream, pipe});
        break;
      }
      case OpType::kD2D: {
        if (!place(true, op.dev, bytes, true, op.dev_offset)) return false;
        // The source must not overlap the destination just chosen (same buffer possible).
        dev_use_[op.dev].writes.push_back({{op.dev_offset, op.dev_offset + bytes}, stream, pipe});
        const bool ok = place(true, op.src_dev, bytes, false, op.src_offset) &&
                        !(op.src_dev == op.dev && op.src_offset < op.dev_offset + bytes &&
                          op.dev_offset < op.src_offset + bytes);
        dev_use_[op.dev].writes.pop_back();
        if (!ok) return false;
        order_reads(stream, pipe, dev_use_[op.src_dev], op.src_offset, op.src_offset + bytes);
        dev_use_[op.src_dev].reads.push_back({op.src_offset, op.src_offset + bytes});
        dev_use_[op.dev].writes.push_back({{op.dev_offset, op.dev_offset + bytes}, stream, pipe});
        break;
      }
      case OpType::kFill: {
        if (!place(true, op.dev, bytes, true, op.dev_offset)) return false;
        op.pattern = static_cast<std::uint32_t>(r_.next());
        dev_use_[op.dev].writes.push_back({{op.dev_offset, op.dev_offset + bytes}, stream, pipe});
        break;
      }
      case OpType::kCompute:
        op.bytes = 0;
        op.duration_ns = r_.between(100, 20000);
        break;
      case OpType::kHostCallback: op.bytes = 0; break;
      default: break;
    }
    p_.ops.push_back(op);
    return true;
  }

  void sync() {
    if (!p_.ops.empty() && p_.ops.back().type == OpType::kSync) return;
    OpSpec s;
    s.type = OpType::kSync;
    p_.ops.push_back(s);
    for (auto& u : host_use_) u = EpochUse{};
    for (auto& u : dev_use_) u = EpochUse{};
  }

  const GeneratorProfile& prof_;
  Rng r_;
  Program p_;
  std::uint64_t max_cb_ = 4 * MiB;
  bool pressure_ = false;
  std::uint32_t small_host_ = 0, small_dev_ = 0;
  std::uint32_t next_event_ = 0;
  std::vector<EpochUse> host_use_, dev_use_;
};

}  // namespace

Program generate(const GeneratorProfile& profile, std::uint64_t seed) {
  return Builder(profile, seed).build(seed);
}

}  // namespace spyre_dma::regress
