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

Sweep::Sweep(spyre_dma::Engine& engine, SweepConfig config) : engine_(engine), config_(std::move(config)) {
  if (config_.sizes.empty()) throw std::invalid_argument("no sizes to sweep");
  const std::uint64_t max_bytes = *std::max_element(config_.sizes.begin(), config_.sizes.end());
  for (int i = 0; i < config_.streams; ++i) {
    spyre_dma::StreamOptions so;
    so.name = "demo-" + std::to_string(i);
    streams_.push_back(engine_.create_stream(so));
  }
  device_ = engine_.allocate(max_bytes);
  for (HostMemory m : config_.memories) {
    auto side = std::make_unique<HostSide>();
    if (m == HostMemory::kRegistered) {
      side->reg_src = engine_.allocate_host(max_bytes);
      side->reg_dst = engine_.allocate_host(max_bytes);
      side->src = static_cast<std::uint8_t*>(side->reg_src.data());
      side->dst = static_cast<std::uint8_t*>(side->reg_dst.data());
      std::memset(side->src, 0, max_bytes);  // fault the pages in before anything is timed
      std::memset(side->dst, 0, max_bytes);
      registered_ = std::move(side);
    } else {
      side->page_src.resize(max_bytes);
      side->page_dst.resize(max_bytes);
      side->src = side->page_src.data();
      side->dst = side->page_dst.data();
      pageable_ = std::move(side);
    }
  }
}

Sweep::~Sweep() = default;

void Sweep::fail(const std::string& message) {
  // Cancel whatever is still queued or in flight, so that the engine shuts down promptly.
  (void)engine_.reset(std::chrono::seconds(10));
  for (auto& s : streams_) (void)s.synchronize(std::chrono::seconds(1));
  throw SweepError(message);
}

std::uint64_t Sweep::transfer(Direction d, std::uint8_t* host, std::uint64_t bytes, const std::string& what) {
  const std::uint64_t per_stream =
      (bytes + streams_.size() - 1) / streams_.size();
  const std::uint64_t piece = (per_stream + kFlit - 1) / kFlit * kFlit;
  std::size_t used = 0;
  std::vector<spyre_dma::Op> ops;
  const auto t0 = Clock::now();
  for (std::uint64_t off = 0; off < bytes; off += piece, ++used) {
    const std::uint64_t n = std::min(piece, bytes - off);
    if (d == Direction::kH2D) ops.push_back(streams_[used].copy_h2d(device_, off, host + off, n));
    else ops.push_back(streams_[used].copy_d2h(host + off, device_, off, n));
  }
  const auto deadline = t0 + config_.timeout;
  for (std::size_t i = 0; i < used; ++i) {
    const auto left = std::max<Clock::duration>(deadline - Clock::now(), Clock::duration::zero());
    const spyre_dma::Status st = streams_[i].synchronize(std::chrono::duration_cast<std::chrono::nanoseconds>(left));
    if (st.code() == spyre_dma::ErrorCode::kWaitTimeout) {
      const spyre_dma::EngineStats s = engine_.stats();
      fail(fmt::format("{}: did not complete within {} s (the engine has {} of {} ops done, {} of {} CBs "
                       "answered, {} staging stalls, {} queue-full stalls): the engine or device stalled",
                       what, std::chrono::duration<double>(config_.timeout).count(), s.ops_completed,
                       s.ops_submitted, s.cbs_completed, s.cbs_submitted, s.staging_stalls, s.queue_full_stalls));
    }
    if (!st.ok()) fail(fmt::format("{}: failed on stream {}: {}", what, i, st.to_string()));
  }
  const auto wall = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
  transfer_wall_ns_ += wall;
  if (!config_.device_clock) return wall;
  std::uint64_t first = UINT64_MAX, last = 0;
  for (const spyre_dma::Op& op : ops) {
    first = std::min(first, op.device_start_ns());
    last = std::max(last, op.device_end_ns());
  }
  return last > first ? last - first : 0;
}

void Sweep::run(const std::function<void(const PointResult&)>& on_point) {
  const bool want_h2d = std::find(config_.directions.begin(), config_.directions.end(), Direction::kH2D) != config_.directions.end();
  const bool want_d2h = std::find(config_.directions.begin(), config_.directions.end(), Direction::kD2H) != config_.directions.end();
  std::uint64_t seed = 0;
  for (const std::uint64_t bytes : config_.sizes) {
    for (const HostMemory mem : config_.memories) {
      HostSide& side = mem == HostMemory::kRegistered ? *registered_ : *pageable_;
      fill_pattern(side.src, bytes, ++seed);
      const std::string label = fmt::format("{} {}", format_size(bytes), to_string(mem));
      // Untimed first transfer: the device pages it touches are allocated now, not in a timed
      // run, and the device then holds the data a D2H-only sweep reads back.
      (void)transfer(Direction::kH2D, side.src, bytes, "H2D warm-up of " + label);

      auto measure = [&](Direction d) {
        PointResult r;
        r.bytes = bytes;
        r.direction = d;
        r.memory = mem;
        const std::uint64_t piece = ((bytes + streams_.size() - 1) / streams_.size() + kFlit - 1) / kFlit * kFlit;
        r.streams_used = static_cast<int>((bytes + piece - 1) / piece);
        const std::uint64_t staged0 = engine_.stats().bytes_staged;
        for (int run = 0; run < config_.repeat; ++run) {
          const std::string what = fmt::format("{} of {} ({} memory), run {} of {}", to_string(d), format_size(bytes),
                                               to_string(mem), run + 1, config_.repeat);
          if (d == Direction::kH2D) {
            r.run_ns.push_back(transfer(d, side.src, bytes, what));
            continue;
          }
          std::memset(side.dst, 0, bytes);
          r.run_ns.push_back(transfer(d, side.dst, bytes, what));
          if (std::memcmp(side.dst, side.src, bytes) != 0) {
            std::uint64_t first = 0, differ = 0;
            for (std::uint64_t i = bytes; i-- > 0;) {
              if (side.dst[i] != side.src[i]) {
                first = i;
                ++differ;
              }
            }
            fail(fmt::format("{}: data mismatch: {} of {} bytes differ, the first at offset {} (sent 0x{:02x}, "
                             "received 0x{:02x})",
                             what, differ, bytes, first, side.src[first], side.dst[first]));
          }
          r.verified = true;
        }
        r.bytes_staged = engine_.stats().bytes_staged - staged0;
        r.median_ns = median(r.run_ns);
        r.gb_per_s = r.median_ns ? static_cast<double>(bytes) / static_cast<double>(r.median_ns) : 0.0;
        results_.push_back(r);
        on_point(results_.back());
      };
      if (want_h2d) measure(Direction::kH2D);
      if (want_d2h) measure(Direction::kD2H);
    }
  }
}

}  // namespace spyre_dma_cli
