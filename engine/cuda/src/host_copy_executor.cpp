// HostCopyExecutor: copies with memcpy on one thread per lane (see host_copy_executor.hpp).
#include "spyre_dma/cuda/host_copy_executor.hpp"

#include <sys/mman.h>

#include <cstring>
#include <stdexcept>
#include <string>

#include "spyre_dma/status.hpp"

namespace spyre_dma::cuda {

HostCopyExecutor::HostCopyExecutor(HostCopyExecutorConfig config)
    : config_(config), t0_(std::chrono::steady_clock::now()) {
  if (config_.device_memory_bytes == 0) throw std::invalid_argument("HostCopyExecutorConfig: device_memory_bytes is zero");
  void* p = ::mmap(nullptr, config_.device_memory_bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    throw OutOfMemory("HostCopyExecutor: cannot hold " + std::to_string(config_.device_memory_bytes) +
                      " bytes of device memory in host RAM");
  }
  memory_ = std::unique_ptr<std::uint8_t, Unmap>(static_cast<std::uint8_t*>(p),
                                                  Unmap{config_.device_memory_bytes});
  for (unsigned l = 0; l < hw::kNumPipelines; ++l) lanes_[l].thread = std::thread([this, l] { lane_main(l); });
}

void HostCopyExecutor::Unmap::operator()(std::uint8_t* p) const { ::munmap(p, bytes); }

HostCopyExecutor::~HostCopyExecutor() {
  stop_.store(true);
  for (Lane& l : lanes_) {
    {
      std::lock_guard<std::mutex> lock(l.mu);
      l.stalled = false;
    }
    l.cv.notify_all();
  }
  for (Lane& l : lanes_) {
    if (l.thread.joinable()) l.thread.join();
  }
}

std::string HostCopyExecutor::describe() const { return "host memcpy, one thread per lane"; }

void HostCopyExecutor::host_mapped(void*, std::size_t) noexcept { mappings_.fetch_add(1); }
void HostCopyExecutor::host_unmapped(void*) noexcept { mappings_.fetch_sub(1); }

std::uint64_t HostCopyExecutor::now_ns() {
  // +1: a timestamp of 0 means "not timed" to the engine.
  return 1 + static_cast<std::uint64_t>(
                 std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0_).count());
}

Ticket HostCopyExecutor::submit(unsigned lane, const CopyCommand& command) {
  if (lane >= hw::kNumPipelines) throw std::out_of_range("HostCopyExecutor::submit: lane " + std::to_string(lane));
  const std::uint32_t n = config_.fail_every_n;
  const bool fail = n != 0 && (counter_.fetch_add(1) + 1) % n == 0;
  Lane& l = lanes_[lane];
  Ticket t;
  {
    std::lock_guard<std::mutex> lock(l.mu);
    t = l.next++;
    l.queue.push_back(Job{t, command, fail});
  }
  l.cv.notify_one();
  return t;
}

std::optional<CopyCompletion> HostCopyExecutor::poll(unsigned lane, Ticket ticket) {
  Lane& l = lanes_[lane];
  std::lock_guard<std::mutex> lock(l.mu);
  for (auto it = l.done.begin(); it != l.done.end(); ++it) {
    if (it->first == ticket) {
      CopyCompletion c = it->second;
      l.done.erase(it);
      return c;
    }
  }
  return std::nullopt;
}

bool HostCopyExecutor::drain(unsigned lane, std::chrono::nanoseconds timeout) {
  Lane& l = lanes_[lane];
  std::unique_lock<std::mutex> lock(l.mu);
  const bool drained = l.cv.wait_for(lock, timeout, [&] { return l.queue.empty() && !l.busy; });
  if (!drained && l.stalled) {
    l.queue.clear();  // a stalled copy engine: what it has not started never runs
  }
  l.done.clear();
  return drained;
}

CopyCompletion HostCopyExecutor::run(const Job& job) {
  CopyCompletion c;
  c.start_ns = now_ns();
  const CopyCommand& cmd = job.command;
  const std::uint64_t dev = config_.device_memory_bytes;
  auto inside = [dev](std::uint64_t off, std::uint64_t n) { return off <= dev && n <= dev - off; };
  if (job.fail) {
    c.error = config_.fail_kind;
    c.detail = counter_.load();
  } else if (!inside(cmd.device_offset, cmd.bytes) ||
             (cmd.kind == CopyKind::kDeviceToDevice && !inside(cmd.source_offset, cmd.bytes))) {
    c.error = hw::ErrorKind::kDeviceMemoryFault;
    c.detail = cmd.device_offset;
    std::lock_guard<std::mutex> lock(error_mu_);
    last_error_ = "copy outside device memory at offset " + std::to_string(cmd.device_offset);
  } else {
    std::uint8_t* d = memory_.get() + cmd.device_offset;
    switch (cmd.kind) {
      case CopyKind::kHostToDevice: std::memcpy(d, cmd.host, cmd.bytes); break;
      case CopyKind::kDeviceToHost: std::memcpy(cmd.host, d, cmd.bytes); break;
      case CopyKind::kDeviceToDevice: std::memmove(d, memory_.get() + cmd.source_offset, cmd.bytes); break;
      case CopyKind::kFill:
        for (std::uint64_t i = 0; i < cmd.bytes; ++i) d[i] = static_cast<std::uint8_t>(cmd.pattern >> (8 * (i % 4)));
        break;
    }
  }
  c.end_ns = now_ns();
  commands_run_.fetch_add(1);
  return c;
}

void HostCopyExecutor::lane_main(unsigned lane) {
  Lane& l = lanes_[lane];
  std::unique_lock<std::mutex> lock(l.mu);
  while (!stop_.load()) {
    if (l.queue.empty() || l.stalled) {
      l.cv.wait_for(lock, std::chrono::milliseconds(10));
      continue;
    }
    Job job = l.queue.front();
    l.queue.pop_front();
    l.busy = true;
    lock.unlock();
    const CopyCompletion c = run(job);
    lock.lock();
    l.busy = false;
    l.done.emplace_back(job.ticket, c);
    l.cv.notify_all();
  }
}

void HostCopyExecutor::stall(unsigned lane, bool on) {
  Lane& l = lanes_.at(lane);
  {
    std::lock_guard<std::mutex> lock(l.mu);
    l.stalled = on;
  }
  l.cv.notify_all();
}

void HostCopyExecutor::read_device(std::uint64_t offset, void* dst, std::size_t bytes) {
  if (offset > config_.device_memory_bytes || bytes > config_.device_memory_bytes - offset) {
    throw std::out_of_range("HostCopyExecutor::read_device: [" + std::to_string(offset) + ", +" +
                            std::to_string(bytes) + ") outside device memory");
  }
  std::memcpy(dst, memory_.get() + offset, bytes);
}

void HostCopyExecutor::write_device(std::uint64_t offset, const void* src, std::size_t bytes) {
  if (offset > config_.device_memory_bytes || bytes > config_.device_memory_bytes - offset) {
    throw std::out_of_range("HostCopyExecutor::write_device: [" + std::to_string(offset) + ", +" +
                            std::to_string(bytes) + ") outside device memory");
  }
  std::memcpy(memory_.get() + offset, src, bytes);
}

std::string HostCopyExecutor::describe_last_error() const {
  std::lock_guard<std::mutex> lock(error_mu_);
  return last_error_;
}

}  // namespace spyre_dma::cuda
