// A CopyExecutor that runs copies with memcpy on one host thread per lane, against device
// memory held in host RAM. It is the executor of the CUDA backend's unit tests (everything above
// the executor runs unchanged), and it lets a machine without a GPU exercise the backend.
//
// Test controls: fail every n-th command (with an ErrorKind, as a failed cudaMemcpyAsync would),
// or stall a lane (a copy engine that never finishes) so the device's completion timeout fires.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "spyre_dma/cuda/copy_executor.hpp"

namespace spyre_dma::cuda {

struct HostCopyExecutorConfig {
  std::uint64_t device_memory_bytes = 256ull << 20;
  // 0: off. Every n-th command (over all lanes) completes with `fail_kind` and moves nothing.
  std::uint32_t fail_every_n = 0;
  hw::ErrorKind fail_kind = hw::ErrorKind::kPcieError;
};

class HostCopyExecutor final : public CopyExecutor {
 public:
  // Throws std::invalid_argument for zero device memory, spyre_dma::OutOfMemory when the host
  // cannot hold it.
  explicit HostCopyExecutor(HostCopyExecutorConfig config = {});
  ~HostCopyExecutor() override;

  std::string describe() const override;
  std::uint64_t device_memory_bytes() const override { return config_.device_memory_bytes; }
  void host_mapped(void* host, std::size_t bytes) noexcept override;
  void host_unmapped(void* host) noexcept override;
  Ticket submit(unsigned lane, const CopyCommand& command) override;
  std::optional<CopyCompletion> poll(unsigned lane, Ticket ticket) override;
  bool drain(unsigned lane, std::chrono::nanoseconds timeout) override;
  std::uint64_t now_ns() override;
  void read_device(std::uint64_t offset, void* dst, std::size_t bytes) override;
  void write_device(std::uint64_t offset, const void* src, std::size_t bytes) override;
  std::string describe_last_error() const override;

  // Test controls. stall(true): the lane finishes no further command until stall(false).
  void stall(unsigned lane, bool on);
  std::uint64_t commands_run() const noexcept { return commands_run_.load(); }
  std::uint64_t host_mappings() const noexcept { return mappings_.load(); }

 private:
  struct Job {
    Ticket ticket;
    CopyCommand command;
    bool fail;
  };
  struct Lane {
    std::thread thread;
    std::mutex mu;
    std::condition_variable cv;
    std::deque<Job> queue;
    std::vector<std::pair<Ticket, CopyCompletion>> done;  // in order
    Ticket next = 1;
    bool busy = false;
    bool stalled = false;
  };
  void lane_main(unsigned lane);
  CopyCompletion run(const Job& job);

  const HostCopyExecutorConfig config_;
  const std::chrono::steady_clock::time_point t0_;
  // Anonymous pages, zero until first written: a large device memory costs nothing until used
  // (a value-initialised array would write every byte up front).
  struct Unmap {
    std::uint64_t bytes;
    void operator()(std::uint8_t* p) const;
  };
  std::unique_ptr<std::uint8_t, Unmap> memory_;
  std::array<Lane, hw::kNumPipelines> lanes_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> counter_{0};
  std::atomic<std::uint64_t> commands_run_{0};
  std::atomic<std::int64_t> mappings_{0};
  mutable std::mutex error_mu_;
  std::string last_error_;
};

}  // namespace spyre_dma::cuda
