// A minimal register-level driver for device tests (refdev, the conformance suite): what an engine
// does, without the engine, through the Device interface alone.
//
// HostBuffer: 4 KiB aligned host memory mapped through Device::map. RingDriver: allocates and
// maps one CB ring and one RB ring per pipeline, programs BAR0, enables the queues and the device,
// writes CBs with hw::encode, rings doorbells and polls RBs by their phase bit with a timeout. On a
// host-driven device (a simulator) it waits in wait_for_interrupt, where such a device advances;
// the interrupts those waits return are kept for take_interrupts().
#pragma once

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

#include "spyre_dma/device.hpp"
#include "spyre_dma/hw/contract.hpp"
#include "spyre_dma/shareable_memory.hpp"

namespace device_test {

namespace hw = spyre_dma::hw;
using spyre_dma::DmaAccess;
using hw::Pipeline;
using namespace std::chrono_literals;

inline unsigned idx(Pipeline p) { return static_cast<unsigned>(p); }

class HostBuffer {
 public:
  HostBuffer(spyre_dma::Device& dev, std::size_t bytes, DmaAccess access, std::uint8_t fill = 0)
      : dev_(dev), bytes_(bytes) {
    // Shareable (page-aligned, backed by a memfd): a device in another process maps it too.
    const std::size_t alloc = (bytes + 4095) / 4096 * 4096;
    data_ = static_cast<std::uint8_t*>(spyre_dma::allocate_shareable(alloc));
    std::memset(data_, fill, alloc);
    iova_ = dev_.map(data_, bytes, access);
    mapped_ = true;
  }
  ~HostBuffer() {
    if (mapped_) dev_.unmap(iova_);
    spyre_dma::free_shareable(data_);
  }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  std::uint8_t* data() const { return data_; }
  std::size_t size() const { return bytes_; }
  std::uint64_t iova() const { return iova_; }
  std::uint64_t iova_flits() const { return iova_ / hw::kFlitBytes; }
  void unmap() {
    dev_.unmap(iova_);
    mapped_ = false;
  }

 private:
  spyre_dma::Device& dev_;
  std::size_t bytes_;
  std::uint8_t* data_ = nullptr;
  std::uint64_t iova_ = 0;
  bool mapped_ = false;
};

struct RingOptions {
  std::array<std::uint32_t, hw::kNumPipelines> cb_size{16, 16, 16};
  std::array<std::uint32_t, hw::kNumPipelines> rb_size{16, 16, 16};
  bool irq_enable = false;
  bool enable = true;  // CONTROL.ENABLE and QUEUE_CONTROL.enable
};

class RingDriver {
 public:
  explicit RingDriver(spyre_dma::Device& dev, RingOptions opt = {})
      : dev_(dev), opt_(opt), host_driven_(dev.describe().progress == spyre_dma::Progress::kHostDriven) {
    for (unsigned p = 0; p < hw::kNumPipelines; ++p) {
      cb_ring_[p] = std::make_unique<HostBuffer>(dev, opt.cb_size[p] * hw::kCbBytes, DmaAccess::kDeviceReads);
      rb_ring_[p] = std::make_unique<HostBuffer>(dev, opt.rb_size[p] * hw::kRbBytes, DmaAccess::kBoth);
    }
    program();
  }

  // Programs every ring register from scratch (after construction or a device reset).
  void program() {
    for (unsigned p = 0; p < hw::kNumPipelines; ++p) {
      const Pipeline pl = static_cast<Pipeline>(p);
      std::memset(rb_ring_[p]->data(), 0, rb_ring_[p]->size());
      pi_[p] = 0;
      rb_ci_[p] = 0;
      dev_.write64(hw::reg::pipe(pl, hw::reg::kCbRingBase_64), cb_ring_[p]->iova());
      dev_.write32(hw::reg::pipe(pl, hw::reg::kCbRingSize), opt_.cb_size[p]);
      dev_.write64(hw::reg::pipe(pl, hw::reg::kRbRingBase_64), rb_ring_[p]->iova());
      dev_.write32(hw::reg::pipe(pl, hw::reg::kRbRingSize), opt_.rb_size[p]);
      dev_.write32(hw::reg::pipe(pl, hw::reg::kIrqVector), p);  // as an engine does: vector = pipeline
      dev_.write32(hw::reg::pipe(pl, hw::reg::kIrqEnable), opt_.irq_enable ? 1 : 0);
      dev_.write32(hw::reg::pipe(pl, hw::reg::kQueueControl), opt_.enable ? hw::kQueueEnable : 0u);
    }
    dev_.write32(hw::reg::kControl, opt_.enable ? std::uint32_t{hw::kControlEnable} : 0u);
  }

  // Writes the CB bytes into the next slot (no doorbell).
  void write_cb(Pipeline p, const hw::CbBytes& bytes) {
    const unsigned i = idx(p);
    std::memcpy(cb_ring_[i]->data() + (pi_[i] & (opt_.cb_size[i] - 1)) * hw::kCbBytes, bytes.data(), bytes.size());
    ++pi_[i];
  }
  void write_cb(Pipeline p, const hw::ControlBlock& cb) { write_cb(p, hw::encode(cb)); }
  void ring(Pipeline p) { dev_.write32(hw::reg::pipe(p, hw::reg::kCbPi), pi_[idx(p)]); }
  void submit(Pipeline p, const hw::ControlBlock& cb) {
    write_cb(p, cb);
    ring(p);
  }
  void submit(Pipeline p, const hw::CbBytes& bytes) {
    write_cb(p, bytes);
    ring(p);
  }

  // Whether the next RB of p has arrived (by its phase bit, read with acquire).
  bool rb_ready(Pipeline p) const {
    const unsigned i = idx(p);
    const std::uint8_t* slot = slot_of(p);
    const std::uint64_t w0 = __atomic_load_n(reinterpret_cast<const std::uint64_t*>(slot), __ATOMIC_ACQUIRE);
    std::uint8_t b[8];
    std::memcpy(b, &w0, 8);
    return hw::rb_phase(b) == hw::expected_phase(rb_ci_[i], opt_.rb_size[i]);
  }

  // Waits for the next RB of p, decodes it and returns the slot to the device (RB_CI).
  std::optional<hw::RbDecodeResult> wait_rb(Pipeline p, std::chrono::milliseconds timeout = 5000ms,
                                            bool consume = true) {
    if (!eventually([&] { return rb_ready(p); }, timeout)) return std::nullopt;
    hw::RbDecodeResult r = hw::decode_rb(slot_of(p));
    if (consume) {
      ++rb_ci_[idx(p)];
      dev_.write32(hw::reg::pipe(p, hw::reg::kRbCi), rb_ci_[idx(p)]);
    }
    return r;
  }

  // Waits for the next RB and expects it to decode; returns it (default-constructed on timeout,
  // tag 0, which no valid RB has).
  hw::ResponseBlock next_rb(Pipeline p, std::chrono::milliseconds timeout = 5000ms) {
    auto r = wait_rb(p, timeout);
    if (!r || r->error) return hw::ResponseBlock{};
    return r->rb;
  }

  // Polls `pred` until it holds or `timeout` passes, letting the device make progress meanwhile.
  template <class Pred>
  bool eventually(Pred pred, std::chrono::milliseconds timeout = 5000ms) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!pred()) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      progress();
    }
    return true;
  }
  // Lets the device do all it can now: a host-driven device runs until it has nothing left to do;
  // a self-timed one gets `grace` of wall-clock time.
  void settle(std::chrono::milliseconds grace = 50ms) {
    if (!host_driven_) return std::this_thread::sleep_for(grace);
    while (std::uint32_t m = dev_.wait_for_interrupt(1ms)) irqs_ |= m;
  }
  // The pipelines (bits) that raised an interrupt since the last call, waiting up to `wait`.
  std::uint32_t take_interrupts(std::chrono::nanoseconds wait = std::chrono::nanoseconds::zero()) {
    const std::uint32_t m = irqs_ | dev_.wait_for_interrupt(wait);
    irqs_ = 0;
    return m;
  }

  std::uint32_t pi(Pipeline p) const { return pi_[idx(p)]; }
  std::uint32_t rb_ci(Pipeline p) const { return rb_ci_[idx(p)]; }
  HostBuffer& cb_ring(Pipeline p) { return *cb_ring_[idx(p)]; }
  HostBuffer& rb_ring(Pipeline p) { return *rb_ring_[idx(p)]; }

 private:
  void progress() {
    if (host_driven_) {
      irqs_ |= dev_.wait_for_interrupt(1ms);
    } else {
      std::this_thread::sleep_for(20us);
    }
  }
  const std::uint8_t* slot_of(Pipeline p) const {
    const unsigned i = idx(p);
    return rb_ring_[i]->data() + (rb_ci_[i] & (opt_.rb_size[i] - 1)) * hw::kRbBytes;
  }

  spyre_dma::Device& dev_;
  RingOptions opt_;
  std::array<std::unique_ptr<HostBuffer>, hw::kNumPipelines> cb_ring_;
  std::array<std::unique_ptr<HostBuffer>, hw::kNumPipelines> rb_ring_;
  std::array<std::uint32_t, hw::kNumPipelines> pi_{};
  std::array<std::uint32_t, hw::kNumPipelines> rb_ci_{};
  const bool host_driven_;
  std::uint32_t irqs_ = 0;
};

// Aborts the test binary when a scope takes longer than `limit`: a hang must fail, not stall CI.
class Watchdog {
 public:
  explicit Watchdog(std::chrono::milliseconds limit, const char* what) : thread_([this, limit, what] {
      std::unique_lock<std::mutex> lock(mutex_);
      if (!cv_.wait_for(lock, limit, [this] { return done_; })) {
        std::fprintf(stderr, "watchdog: %s did not finish within %lld ms\n", what,
                     static_cast<long long>(limit.count()));
        std::abort();
      }
    }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

// Polls `pred` until it holds or `timeout` passes.
template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds timeout = 5000ms) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(50us);
  }
  return true;
}

// --- CB builders ---------------------------------------------------------------------------------

// XLAT entry `segment` -> physical [base_flits, base_flits + length_flits).
inline void set_xlat(hw::ControlBlock& cb, unsigned segment, std::uint64_t base_flits,
                     std::uint32_t length_flits = hw::kSegmentFlits, hw::XlatMode mode = hw::XlatMode::kReadWrite) {
  cb.xlat[segment] = hw::XlatEntry{mode, base_flits, length_flits};
}

// Flits and last-flit byte count for a byte length.
inline void set_length(hw::DmaSection& s, std::uint64_t bytes) {
  s.length_flits = static_cast<std::uint32_t>(hw::flits_for(bytes));
  s.last_flit_bytes = static_cast<std::uint8_t>(bytes % hw::kFlitBytes);
}

// H2D: host IOVA -> device VA (segment 0, flit offset), identity XLAT of segment 0 onto physical
// flit `phys_base_flits`.
inline hw::ControlBlock h2d(std::uint32_t tag, std::uint64_t iova, std::uint32_t dev_flit, std::uint64_t bytes,
                            std::uint64_t phys_base_flits = 0) {
  hw::ControlBlock cb;
  cb.tag = tag;
  cb.dmi.type = hw::DmaType::kImmediate;
  cb.dmi.device = hw::DeviceVa{0, dev_flit};
  cb.dmi.host_iova_flits = iova / hw::kFlitBytes;
  set_length(cb.dmi, bytes);
  set_xlat(cb, 0, phys_base_flits);
  return cb;
}

inline hw::ControlBlock d2h(std::uint32_t tag, std::uint64_t iova, std::uint32_t dev_flit, std::uint64_t bytes,
                            std::uint64_t phys_base_flits = 0) {
  hw::ControlBlock cb;
  cb.tag = tag;
  cb.dmo.type = hw::DmaType::kImmediate;
  cb.dmo.device = hw::DeviceVa{0, dev_flit};
  cb.dmo.host_iova_flits = iova / hw::kFlitBytes;
  set_length(cb.dmo, bytes);
  set_xlat(cb, 0, phys_base_flits);
  return cb;
}

inline hw::ControlBlock fill(std::uint32_t tag, std::uint32_t dev_flit, std::uint64_t bytes, std::uint32_t pattern) {
  hw::ControlBlock cb;
  cb.tag = tag;
  cb.dmi.type = hw::DmaType::kMemoryFill;
  cb.dmi.device = hw::DeviceVa{0, dev_flit};
  cb.dmi.fill_pattern = pattern;
  set_length(cb.dmi, bytes);
  set_xlat(cb, 0, 0);
  return cb;
}

inline hw::ControlBlock device_copy(std::uint32_t tag, std::uint32_t dst_flit, std::uint32_t src_flit,
                                    std::uint64_t bytes) {
  hw::ControlBlock cb;
  cb.tag = tag;
  cb.dmi.type = hw::DmaType::kDeviceCopy;
  cb.dmi.device = hw::DeviceVa{0, dst_flit};
  cb.dmi.source = hw::DeviceVa{0, src_flit};
  set_length(cb.dmi, bytes);
  set_xlat(cb, 0, 0);
  return cb;
}

inline hw::ControlBlock compute(std::uint32_t tag, std::uint64_t duration_ns) {
  hw::ControlBlock cb;
  cb.tag = tag;
  cb.cmpt.type = hw::ComputeType::kTimed;
  cb.cmpt.duration_ns = duration_ns;
  return cb;
}

// Deterministic test bytes.
inline void pattern_bytes(std::uint8_t* p, std::size_t n, std::uint32_t seed) {
  std::uint32_t x = seed * 2654435761u + 12345u;
  for (std::size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    p[i] = static_cast<std::uint8_t>(x);
  }
}

}  // namespace device_test
