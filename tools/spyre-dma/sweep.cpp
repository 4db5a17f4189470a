#include "sweep.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "size_spec.hpp"

namespace spyre_dma_cli {

using Clock = std::chrono::steady_clock;

std::string_view to_string(Direction d) noexcept { return d == Direction::kH2D ? "H2D" : "D2H"; }
std::string_view to_string(HostMemory m) noexcept {
  return m == HostMemory::kRegistered ? "registered" : "pageable";
}

namespace {

constexpr std::uint64_t kFlit = 128;  // device offsets of the per-stream pieces stay flit aligned

// A pseudo-random pattern that differs per point, so stale data from an earlier point fails.
void fill_pattern(std::uint8_t* p, std::uint64_t n, std::uint64_t seed) {
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 0xD1B54A32D192ED03ull;
  std::uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    std::memcpy(p + i, &x, 8);
  }
  for (; i < n; ++i) p[i] = static_cast<std::uint8_t>(x >> (8 * (i % 8)));
}

std::uint64_t median(std::vector<std::uint64_t> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

}  // namespace

// Source and destination host buffers of one memory kind.
struct Sweep::HostSide {
  spyre_dma::HostBuffer reg_src, reg_dst;
  std::vector<std::uint8_t> page_src, page_dst;  // value-initialised: every page is touched
  std::uint8_t* src = nullptr;
  std::uint8_t* dst = nullptr;
};

struct Sweep::Lane {
  spyre_dma::Engine* engine = nullptr;
  std::vector<spyre_dma::Stream> streams;
  spyre_dma::DeviceBuffer device;
  std::unique_ptr<HostSide> registered, pageable;
  std::vector<spyre_dma::Op> ops;  // of the transfer in progress
  HostSide& side(HostMemory m) { return m == HostMemory::kRegistered ? *registered : *pageable; }
};

Sweep::Sweep(std::vector<spyre_dma::Engine*> engines, SweepConfig config) : config_(std::move(config)) {
  if (config_.sizes.empty()) throw std::invalid_argument("no sizes to sweep");
  if (engines.empty()) throw std::invalid_argument("no device to sweep on");
  const std::uint64_t max_bytes = *std::max_element(config_.sizes.begin(), config_.sizes.end());
  lanes_.resize(engines.size());
  for (std::size_t l = 0; l < engines.size(); ++l) {
    Lane& lane = lanes_[l];
    lane.engine = engines[l];
    for (int i = 0; i < config_.streams; ++i) {
      spyre_dma::StreamOptions so;
      so.name = "demo-" + std::to_string(i);
      lane.streams.push_back(lane.engine->create_stream(so));
    }
    lane.device = lane.engine->allocate(max_bytes);
    for (HostMemory m : config_.memories) {
      auto side = std::make_unique<HostSide>();
      if (m == HostMemory::kRegistered) {
        side->reg_src = lane.engine->allocate_host(max_bytes);
        side->reg_dst = lane.engine->allocate_host(max_bytes);
        side->src = static_cast<std::uint8_t*>(side->reg_src.data());
        side->dst = static_cast<std::uint8_t*>(side->reg_dst.data());
        std::memset(side->src, 0, max_bytes);  // fault the pages in before anything is timed
        std::memset(side->dst, 0, max_bytes);
        lane.registered = std::move(side);
      } else {
        side->page_src.resize(max_bytes);
        side->page_dst.resize(max_bytes);
        side->src = side->page_src.data();
        side->dst = side->page_dst.data();
        lane.pageable = std::move(side);
      }
    }
  }
}

Sweep::~Sweep() = default;

void Sweep::fail(const std::string& message) {
  // Cancel whatever is still queued or in flight, so that the engines shut down promptly.
  for (Lane& lane : lanes_) (void)lane.engine->reset(std::chrono::seconds(10));
  for (Lane& lane : lanes_)
    for (auto& s : lane.streams) (void)s.synchronize(std::chrono::seconds(1));
  throw SweepError(message);
}

// Every device's transfer is submitted before any is waited for, so that they run together.
Sweep::Timing Sweep::transfer(Direction d, HostMemory mem, std::uint64_t bytes, const std::string& what) {
  const std::uint64_t per_stream = (bytes + config_.streams - 1) / config_.streams;
  const std::uint64_t piece = (per_stream + kFlit - 1) / kFlit * kFlit;
  std::size_t used = 0;
  const auto t0 = Clock::now();
  for (Lane& lane : lanes_) {
    HostSide& side = lane.side(mem);
    lane.ops.clear();
    used = 0;
    for (std::uint64_t off = 0; off < bytes; off += piece, ++used) {
      const std::uint64_t n = std::min(piece, bytes - off);
      if (d == Direction::kH2D) lane.ops.push_back(lane.streams[used].copy_h2d(lane.device, off, side.src + off, n));
      else lane.ops.push_back(lane.streams[used].copy_d2h(side.dst + off, lane.device, off, n));
    }
  }
  const auto deadline = t0 + config_.timeout;
  if (lanes_.size() > 1) {
    // Every device's engine polled in turn, as each device's own runtime thread would drive it: a
    // poll of a simulated server steps to the next interrupt of any device, and each engine takes
    // up its own work (staging copies of pageable memory, the next CBs) when its device asks.
    // Waiting for one device at a time would leave the others' host work until it is done.
    for (bool idle = false; !idle && Clock::now() < deadline;) {
      idle = true;
      for (Lane& lane : lanes_) {
        for (std::size_t i = 0; i < used; ++i) idle = lane.streams[i].query() && idle;
      }
    }
  }
  for (std::size_t l = 0; l < lanes_.size(); ++l) {
    Lane& lane = lanes_[l];
    const std::string where = lanes_.size() > 1 ? fmt::format("{} on device {}", what, l) : what;
    for (std::size_t i = 0; i < used; ++i) {
      const auto left = std::max<Clock::duration>(deadline - Clock::now(), Clock::duration::zero());
      const spyre_dma::Status st =
          lane.streams[i].synchronize(std::chrono::duration_cast<std::chrono::nanoseconds>(left));
      if (st.code() == spyre_dma::ErrorCode::kWaitTimeout) {
        const spyre_dma::EngineStats s = lane.engine->stats();
        fail(fmt::format("{}: did not complete within {} s (the engine has {} of {} ops done, {} of {} CBs "
                         "answered, {} staging stalls, {} queue-full stalls): the engine or device stalled",
                         where, std::chrono::duration<double>(config_.timeout).count(), s.ops_completed,
                         s.ops_submitted, s.cbs_completed, s.cbs_submitted, s.staging_stalls, s.queue_full_stalls));
      }
      if (!st.ok()) fail(fmt::format("{}: failed on stream {}: {}", where, i, st.to_string()));
    }
  }
  const auto wall = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
  transfer_wall_ns_ += wall;
  Timing t;
  if (config_.time_base == TimeBase::kWall) {
    t.all_ns = wall;
    t.device_ns.assign(lanes_.size(), wall);
    return t;
  }
  const bool host = config_.time_base == TimeBase::kHost;
  std::uint64_t first = UINT64_MAX, last = 0;
  for (const Lane& lane : lanes_) {
    std::uint64_t f = UINT64_MAX, e = 0;
    for (const spyre_dma::Op& op : lane.ops) {
      f = std::min(f, host ? op.host_start_ns() : op.device_start_ns());
      e = std::max(e, host ? op.host_end_ns() : op.device_end_ns());
    }
    t.device_ns.push_back(e > f ? e - f : 0);
    first = std::min(first, f);
    last = std::max(last, e);
  }
  t.all_ns = last > first ? last - first : 0;
  return t;
}

void Sweep::run(const std::function<void(const PointResult&)>& on_point) {
  const bool want_h2d = std::find(config_.directions.begin(), config_.directions.end(), Direction::kH2D) != config_.directions.end();
  const bool want_d2h = std::find(config_.directions.begin(), config_.directions.end(), Direction::kD2H) != config_.directions.end();
  const std::size_t devices = lanes_.size();
  std::uint64_t seed = 0;
  for (const std::uint64_t bytes : config_.sizes) {
    for (const HostMemory mem : config_.memories) {
      ++seed;
      for (std::size_t l = 0; l < devices; ++l) fill_pattern(lanes_[l].side(mem).src, bytes, seed + (std::uint64_t{l} << 32));
      const std::string label = fmt::format("{} {}", format_size(bytes), to_string(mem));
      // Untimed first transfer: the device pages it touches are allocated now, not in a timed
      // run, and the device then holds the data a D2H-only sweep reads back.
      (void)transfer(Direction::kH2D, mem, bytes, "H2D warm-up of " + label);

      auto measure = [&](Direction d) {
        PointResult r;
        r.bytes = bytes;
        r.direction = d;
        r.memory = mem;
        const std::uint64_t piece = ((bytes + config_.streams - 1) / config_.streams + kFlit - 1) / kFlit * kFlit;
        r.streams_used = static_cast<int>((bytes + piece - 1) / piece);
        std::uint64_t staged0 = 0;
        for (const Lane& lane : lanes_) staged0 += lane.engine->stats().bytes_staged;
        std::vector<std::vector<std::uint64_t>> per_device(devices);
        for (int run = 0; run < config_.repeat; ++run) {
          const std::string what = fmt::format("{} of {} ({} memory), run {} of {}", to_string(d), format_size(bytes),
                                               to_string(mem), run + 1, config_.repeat);
          if (d == Direction::kD2H) {
            for (Lane& lane : lanes_) std::memset(lane.side(mem).dst, 0, bytes);
          }
          const Timing t = transfer(d, mem, bytes, what);
          r.run_ns.push_back(t.all_ns);
          for (std::size_t l = 0; l < devices; ++l) per_device[l].push_back(t.device_ns[l]);
          if (d == Direction::kH2D) continue;
          for (std::size_t l = 0; l < devices; ++l) {
            const HostSide& side = lanes_[l].side(mem);
            if (std::memcmp(side.dst, side.src, bytes) == 0) continue;
            std::uint64_t first = 0, differ = 0;
            for (std::uint64_t i = bytes; i-- > 0;) {
              if (side.dst[i] != side.src[i]) {
                first = i;
                ++differ;
              }
            }
            fail(fmt::format("{}{}: data mismatch: {} of {} bytes differ, the first at offset {} (sent 0x{:02x}, "
                             "received 0x{:02x})",
                             what, devices > 1 ? fmt::format(" on device {}", l) : "", differ, bytes, first,
                             side.src[first], side.dst[first]));
          }
          r.verified = true;
        }
        std::uint64_t staged1 = 0;
        for (const Lane& lane : lanes_) staged1 += lane.engine->stats().bytes_staged;
        r.bytes_staged = staged1 - staged0;
        r.median_ns = median(r.run_ns);
        r.gb_per_s = r.median_ns ? static_cast<double>(bytes * devices) / static_cast<double>(r.median_ns) : 0.0;
        if (devices > 1) {
          for (const auto& runs : per_device) {
            const std::uint64_t m = median(runs);
            r.device_median_ns.push_back(m);
            r.device_gb_per_s.push_back(m ? static_cast<double>(bytes) / static_cast<double>(m) : 0.0);
          }
        }
        results_.push_back(r);
        on_point(results_.back());
      };
      if (want_h2d) measure(Direction::kH2D);
      if (want_d2h) measure(Direction::kD2H);
    }
  }
}

}  // namespace spyre_dma_cli
