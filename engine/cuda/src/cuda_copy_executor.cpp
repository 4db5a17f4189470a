// The CUDA copy executor (see cuda_copy_executor.hpp). Compiled only when the build found the
// CUDA toolkit; it uses the runtime API alone (linked statically), so a program built with it
// still starts on a machine without the NVIDIA driver and reports that as a DeviceFault.
#include "spyre_dma/cuda/cuda_copy_executor.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <vector>

#include "spyre_dma/status.hpp"

namespace spyre_dma::cuda {
namespace {

std::string cuda_message(const char* call, cudaError_t e) {
  return std::string(call) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
}

// Construction-time failures become the engine's typed errors.
void check_setup(cudaError_t e, const char* call) {
  if (e == cudaSuccess) return;
  (void)cudaGetLastError();  // clear the sticky-free error state for later calls
  if (e == cudaErrorMemoryAllocation) throw OutOfMemory("CUDA executor: " + cuda_message(call, e));
  throw DeviceFault("CUDA executor: " + cuda_message(call, e));
}

// The fill pattern block copied first; later doublings copy within device memory.
constexpr std::size_t kPatternBlock = 64 << 10;

class CudaCopyExecutor final : public CopyExecutor {
 public:
  explicit CudaCopyExecutor(const CudaExecutorConfig& config) : config_(config) {
    if (config_.device_memory_bytes == 0) throw std::invalid_argument("CudaExecutorConfig: device_memory_bytes is zero");
    int count = 0;
    check_setup(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
    if (config_.device < 0 || config_.device >= count) {
      throw DeviceFault("CUDA executor: device " + std::to_string(config_.device) + " does not exist (" +
                        std::to_string(count) + " CUDA devices)");
    }
    check_setup(cudaSetDevice(config_.device), "cudaSetDevice");
    cudaDeviceProp prop{};
    check_setup(cudaGetDeviceProperties(&prop, config_.device), "cudaGetDeviceProperties");
    name_ = prop.name;
    pci_ = std::to_string(prop.pciBusID);
    copy_engines_ = prop.asyncEngineCount;
    void* mem = nullptr;
    check_setup(cudaMalloc(&mem, config_.device_memory_bytes), "cudaMalloc");
    memory_ = static_cast<std::uint8_t*>(mem);
    try {
      for (Lane& l : lanes_) check_setup(cudaStreamCreateWithFlags(&l.stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
      check_setup(cudaEventCreate(&base_event_), "cudaEventCreate");
      void* block = nullptr;
      check_setup(cudaMallocHost(&block, kPatternBlock), "cudaMallocHost");
      pattern_host_ = static_cast<std::uint8_t*>(block);
      // The clock: an event recorded now and the host time it completed at; every later event's
      // time is base + cudaEventElapsedTime(base, event).
      check_setup(cudaEventRecord(base_event_, lanes_[0].stream), "cudaEventRecord");
      check_setup(cudaEventSynchronize(base_event_), "cudaEventSynchronize");
      base_ns_ = host_ns();
    } catch (...) {
      release();
      throw;
    }
  }

  ~CudaCopyExecutor() override {
    for (unsigned l = 0; l < hw::kNumPipelines; ++l) (void)drain(l, std::chrono::seconds(10));
    release();
  }

  std::string describe() const override {
    return "CUDA device " + std::to_string(config_.device) + ": " + name_ + ", PCI bus " + pci_ + ", " +
           std::to_string(copy_engines_) + " copy engines, " + std::to_string(pinned_count()) + " host mappings pinned";
  }
  std::uint64_t device_memory_bytes() const override { return config_.device_memory_bytes; }

  void host_mapped(void* host, std::size_t bytes) noexcept override {
    if (!config_.pin_host_mappings) return;
    const cudaError_t e = cudaHostRegister(host, bytes, cudaHostRegisterDefault);
    std::lock_guard<std::mutex> lock(mu_);
    if (e == cudaSuccess) {
      pinned_[host] = bytes;
    } else {
      // Already registered (an overlapping page) or not pinnable: copies run from pageable memory.
      (void)cudaGetLastError();
      last_error_ = cuda_message("cudaHostRegister", e);
    }
  }

  void host_unmapped(void* host) noexcept override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pinned_.find(host);
    if (it == pinned_.end()) return;
    pinned_.erase(it);
    const cudaError_t e = cudaHostUnregister(host);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      last_error_ = cuda_message("cudaHostUnregister", e);
    }
  }

  Ticket submit(unsigned lane, const CopyCommand& c) override {
    if (lane >= hw::kNumPipelines) throw std::out_of_range("CUDA executor: lane " + std::to_string(lane));
    Lane& l = lanes_[lane];
    Pending p;
    p.ticket = l.next++;
    cudaError_t e = take_events(p);
    if (e == cudaSuccess) e = cudaEventRecord(p.start, l.stream);
    if (e == cudaSuccess) e = enqueue(l.stream, c);
    if (e == cudaSuccess) e = cudaEventRecord(p.end, l.stream);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      p.error = e;
      note_error("submit", e);
    }
    l.pending.push_back(p);
    return p.ticket;
  }

  std::optional<CopyCompletion> poll(unsigned lane, Ticket ticket) override {
    Lane& l = lanes_[lane];
    if (l.pending.empty() || l.pending.front().ticket != ticket) return std::nullopt;  // in order only
    Pending& p = l.pending.front();
    CopyCompletion c;
    if (p.error == cudaSuccess) {
      const cudaError_t q = cudaEventQuery(p.end);
      if (q == cudaErrorNotReady) return std::nullopt;
      if (q != cudaSuccess) {
        (void)cudaGetLastError();
        p.error = q;
        note_error("cudaEventQuery", q);
      } else {
        c.start_ns = event_ns(p.start);
        c.end_ns = std::max(c.start_ns, event_ns(p.end));
      }
    }
    if (p.error != cudaSuccess) {
      c.error = hw::ErrorKind::kPcieError;
      c.detail = static_cast<std::uint64_t>(p.error);
      c.start_ns = c.end_ns = now_ns();
    }
    give_events(p);
    l.pending.pop_front();
    return c;
  }

  bool drain(unsigned lane, std::chrono::nanoseconds timeout) override {
    Lane& l = lanes_[lane];
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const cudaError_t q = cudaStreamQuery(l.stream);
      if (q != cudaErrorNotReady) {
        if (q != cudaSuccess) (void)cudaGetLastError();
        break;
      }
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    for (Pending& p : l.pending) give_events(p);
    l.pending.clear();
    return true;
  }

  std::uint64_t now_ns() override { return host_ns() - base_ns_ + 1; }

  void read_device(std::uint64_t offset, void* dst, std::size_t bytes) override {
    check_range(offset, bytes, "read_device");
    check_setup(cudaMemcpy(dst, memory_ + offset, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy (read_device)");
  }
  void write_device(std::uint64_t offset, const void* src, std::size_t bytes) override {
    check_range(offset, bytes, "write_device");
    check_setup(cudaMemcpy(memory_ + offset, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy (write_device)");
  }

  std::string describe_last_error() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return last_error_;
  }

 private:
  struct Pending {
    Ticket ticket = 0;
    cudaEvent_t start = nullptr;
    cudaEvent_t end = nullptr;
    cudaError_t error = cudaSuccess;
  };
  struct Lane {
    cudaStream_t stream = nullptr;
    std::deque<Pending> pending;  // touched by this lane's worker only
    Ticket next = 1;
  };

  static std::uint64_t host_ns() {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          std::chrono::steady_clock::now().time_since_epoch())
                                          .count());
  }

  std::uint64_t event_ns(cudaEvent_t e) {
    float ms = 0;
    if (cudaEventElapsedTime(&ms, base_event_, e) != cudaSuccess) {
      (void)cudaGetLastError();
      return now_ns();
    }
    return 1 + static_cast<std::uint64_t>(static_cast<double>(ms) * 1e6);
  }

  cudaError_t take_events(Pending& p) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (free_events_.size() >= 2) {
        p.start = free_events_.back();
        free_events_.pop_back();
        p.end = free_events_.back();
        free_events_.pop_back();
        return cudaSuccess;
      }
    }
    cudaError_t e = cudaEventCreate(&p.start);
    if (e == cudaSuccess) e = cudaEventCreate(&p.end);
    return e;
  }

  void give_events(Pending& p) {
    std::lock_guard<std::mutex> lock(mu_);
    if (p.start) free_events_.push_back(p.start);
    if (p.end) free_events_.push_back(p.end);
    p.start = p.end = nullptr;
  }

  // A fill: the pattern block from pinned host memory, then copies of what is already there,
  // doubling, all on the lane's stream (so in order with the lane's other copies).
  cudaError_t enqueue(cudaStream_t s, const CopyCommand& c) {
    std::uint8_t* d = memory_ + c.device_offset;
    switch (c.kind) {
      case CopyKind::kHostToDevice: return cudaMemcpyAsync(d, c.host, c.bytes, cudaMemcpyHostToDevice, s);
      case CopyKind::kDeviceToHost: return cudaMemcpyAsync(c.host, d, c.bytes, cudaMemcpyDeviceToHost, s);
      case CopyKind::kDeviceToDevice:
        return cudaMemcpyAsync(d, memory_ + c.source_offset, c.bytes, cudaMemcpyDeviceToDevice, s);
      case CopyKind::kFill: {
        if (c.bytes == 0) return cudaSuccess;
        std::uint64_t done = std::min<std::uint64_t>(c.bytes, kPatternBlock);
        {
          // The pinned block is shared by every fill; all fills of one pattern agree on it, and a
          // different pattern waits for the previous block's copy to finish.
          std::lock_guard<std::mutex> lock(pattern_mu_);
          if (pattern_event_) (void)cudaEventSynchronize(pattern_event_);
          for (std::size_t i = 0; i < kPatternBlock; ++i) {
            pattern_host_[i] = static_cast<std::uint8_t>(c.pattern >> (8 * (i % 4)));
          }
          cudaError_t e = cudaMemcpyAsync(d, pattern_host_, done, cudaMemcpyHostToDevice, s);
          if (e != cudaSuccess) return e;
          if (!pattern_event_ && (e = cudaEventCreate(&pattern_event_)) != cudaSuccess) return e;
          if ((e = cudaEventRecord(pattern_event_, s)) != cudaSuccess) return e;
        }
        // Doubling keeps the phase: the block length is a multiple of 4.
        while (done < c.bytes) {
          const std::uint64_t n = std::min(done, c.bytes - done);
          const cudaError_t e = cudaMemcpyAsync(d + done, d, n, cudaMemcpyDeviceToDevice, s);
          if (e != cudaSuccess) return e;
          done += n;
        }
        return cudaSuccess;
      }
    }
    return cudaErrorInvalidValue;
  }

  void check_range(std::uint64_t offset, std::size_t bytes, const char* what) const {
    if (offset > config_.device_memory_bytes || bytes > config_.device_memory_bytes - offset) {
      throw std::out_of_range(std::string("CUDA executor: ") + what + ": [" + std::to_string(offset) + ", +" +
                              std::to_string(bytes) + ") outside device memory");
    }
  }

  void note_error(const char* where, cudaError_t e) {
    std::lock_guard<std::mutex> lock(mu_);
    last_error_ = cuda_message(where, e);
  }

  std::size_t pinned_count() const {
    std::lock_guard<std::mutex> lock(mu_);
    return pinned_.size();
  }

  void release() noexcept {
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& [host, bytes] : pinned_) (void)cudaHostUnregister(host);
      pinned_.clear();
      for (cudaEvent_t e : free_events_) (void)cudaEventDestroy(e);
      free_events_.clear();
    }
    for (Lane& l : lanes_) {
      for (Pending& p : l.pending) {
        if (p.start) (void)cudaEventDestroy(p.start);
        if (p.end) (void)cudaEventDestroy(p.end);
      }
      l.pending.clear();
      if (l.stream) (void)cudaStreamDestroy(l.stream);
      l.stream = nullptr;
    }
    if (pattern_event_) (void)cudaEventDestroy(pattern_event_);
    if (base_event_) (void)cudaEventDestroy(base_event_);
    if (pattern_host_) (void)cudaFreeHost(pattern_host_);
    if (memory_) (void)cudaFree(memory_);
    pattern_event_ = base_event_ = nullptr;
    pattern_host_ = nullptr;
    memory_ = nullptr;
    (void)cudaGetLastError();
  }

  const CudaExecutorConfig config_;
  std::string name_, pci_;
  int copy_engines_ = 0;
  std::uint8_t* memory_ = nullptr;
  std::array<Lane, hw::kNumPipelines> lanes_;
  cudaEvent_t base_event_ = nullptr;
  std::uint64_t base_ns_ = 0;
  std::mutex pattern_mu_;
  std::uint8_t* pattern_host_ = nullptr;
  cudaEvent_t pattern_event_ = nullptr;
  mutable std::mutex mu_;
  std::unordered_map<void*, std::size_t> pinned_;
  std::vector<cudaEvent_t> free_events_;
  std::string last_error_;
};

}  // namespace

bool cuda_support_built() noexcept { return true; }

std::string cuda_device_unavailable_reason(int device) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return cuda_message("cudaGetDeviceCount", e);
  }
  if (device < 0 || device >= count) {
    return "CUDA device " + std::to_string(device) + " does not exist (" + std::to_string(count) + " devices)";
  }
  return {};
}

std::unique_ptr<CopyExecutor> make_cuda_executor(const CudaExecutorConfig& config) {
  return std::make_unique<CudaCopyExecutor>(config);
}

}  // namespace spyre_dma::cuda
