// The demo's measurement: a size sweep of H2D and D2H transfers between host memory (registered
// or pageable) and one device buffer, each point timed over several runs, every D2H verified. On
// several devices (one engine each) every point runs on all of them at once, each with its own
// buffers.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "spyre_dma/spyre_dma.hpp"

namespace spyre_dma_cli {

enum class Direction { kH2D, kD2H };
enum class HostMemory { kRegistered, kPageable };
enum class TimeBase { kWall, kDevice, kHost };
std::string_view to_string(Direction d) noexcept;   // "H2D", "D2H"
std::string_view to_string(HostMemory m) noexcept;  // "registered", "pageable"

struct SweepConfig {
  std::vector<std::uint64_t> sizes;
  std::vector<Direction> directions{Direction::kH2D, Direction::kD2H};
  std::vector<HostMemory> memories{HostMemory::kRegistered, HostMemory::kPageable};
  int repeat = 5;
  int streams = 1;  // each transfer's bytes are split across this many streams
  std::chrono::nanoseconds timeout = std::chrono::seconds(10);  // per transfer
  // What a run's time is (docs/engine.md, "Timing"): the wall clock from the first submission to
  // the last stream synchronized; device time, the first CB's start to the last CB's end (the
  // RBs' timestamps); or host time on the device's clock, the first op's call to the last op's
  // completion as the engine saw it, staging copies included. Device and host time are what a
  // simulated device's figures mean.
  TimeBase time_base = TimeBase::kWall;
};

struct PointResult {
  std::uint64_t bytes = 0;  // per device
  Direction direction = Direction::kH2D;
  HostMemory memory = HostMemory::kRegistered;
  int streams_used = 0;
  std::vector<std::uint64_t> run_ns;  // by SweepConfig::time_base; over every device: the first
                                      // start to the last end
  std::uint64_t median_ns = 0;
  double gb_per_s = 0;                // all devices' bytes / median, in 1e9 bytes per second
  // Several devices: each device's own median time (device clock: its first start to its last
  // end) and rate, by device index.
  std::vector<std::uint64_t> device_median_ns;
  std::vector<double> device_gb_per_s;
  std::uint64_t bytes_staged = 0;     // over all runs (the engine's count): shows the path taken
  bool verified = false;              // D2H: every run's data compared byte for byte
};

// A transfer that failed, stalled or delivered wrong data. The message names the point.
class SweepError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Sweep {
 public:
  // Allocates each device's buffer and host buffers (of the largest size) up front; throws
  // spyre_dma::Error (e.g. OutOfMemory) when that is impossible.
  Sweep(std::vector<spyre_dma::Engine*> engines, SweepConfig config);
  ~Sweep();

  // Runs every point in order (size, then memory kind, then direction), calling on_point after
  // each. Throws SweepError on the first failure, after resetting the engines so that nothing is
  // left in flight.
  void run(const std::function<void(const PointResult&)>& on_point);

  const std::vector<PointResult>& results() const noexcept { return results_; }
  const SweepConfig& config() const noexcept { return config_; }
  // Wall time spent moving data (submitting and waiting for every transfer, warm-ups included):
  // on a simulated device, the simulation. The rest of a sweep is its own work: filling, clearing
  // and comparing host buffers.
  double transfer_wall_s() const noexcept { return static_cast<double>(transfer_wall_ns_) / 1e9; }

 private:
  struct HostSide;
  struct Lane;  // one device: its engine, streams and buffers
  struct Timing {
    std::uint64_t all_ns = 0;               // over every device
    std::vector<std::uint64_t> device_ns;   // each device's own
  };
  Timing transfer(Direction d, HostMemory mem, std::uint64_t bytes, const std::string& what);
  [[noreturn]] void fail(const std::string& message);

  SweepConfig config_;
  std::vector<Lane> lanes_;
  std::vector<PointResult> results_;
  std::uint64_t transfer_wall_ns_ = 0;
};

}  // namespace spyre_dma_cli
