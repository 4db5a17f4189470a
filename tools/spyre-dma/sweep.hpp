// The demo's measurement: a size sweep of H2D and D2H transfers between host memory (registered
// or pageable) and one device buffer, each point timed over several runs, every D2H verified.
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
std::string_view to_string(Direction d) noexcept;   // "H2D", "D2H"
std::string_view to_string(HostMemory m) noexcept;  // "registered", "pageable"

struct SweepConfig {
  std::vector<std::uint64_t> sizes;
  std::vector<Direction> directions{Direction::kH2D, Direction::kD2H};
  std::vector<HostMemory> memories{HostMemory::kRegistered, HostMemory::kPageable};
  int repeat = 5;
  int streams = 1;  // each transfer's bytes are split across this many streams
  std::chrono::nanoseconds timeout = std::chrono::seconds(10);  // per transfer
  // Time runs on the device's clock (first CB start to last CB end, from the RBs) instead of the
  // wall clock: what a simulated device's figures mean.
  bool device_clock = false;
};

struct PointResult {
  std::uint64_t bytes = 0;
  Direction direction = Direction::kH2D;
  HostMemory memory = HostMemory::kRegistered;
  int streams_used = 0;
  std::vector<std::uint64_t> run_ns;  // wall clock (first submission to last stream synchronized),
                                      // or the device clock when SweepConfig::device_clock
  std::uint64_t median_ns = 0;
  double gb_per_s = 0;                // bytes / median, in 1e9 bytes per second
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
  // Allocates the device buffer and the host buffers (of the largest size) up front; throws
  // spyre_dma::Error (e.g. OutOfMemory) when that is impossible.
  Sweep(spyre_dma::Engine& engine, SweepConfig config);
  ~Sweep();

  // Runs every point in order (size, then memory kind, then direction), calling on_point after
  // each. Throws SweepError on the first failure, after resetting the engine so that nothing is
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
  std::uint64_t transfer(Direction d, std::uint8_t* host, std::uint64_t bytes, const std::string& what);
  [[noreturn]] void fail(const std::string& message);

  spyre_dma::Engine& engine_;
  SweepConfig config_;
  std::vector<spyre_dma::Stream> streams_;
  spyre_dma::DeviceBuffer device_;
  std::unique_ptr<HostSide> registered_, pageable_;
  std::vector<PointResult> results_;
  std::uint64_t transfer_wall_ns_ = 0;
};

}  // namespace spyre_dma_cli
