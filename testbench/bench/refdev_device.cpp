// Benchmarks of the reference device alone, driven at register level (Google Benchmark): doorbell
// cost, copy bandwidth against plain memcpy, and the CB rate for small CBs.
// Run: build/default/testbench/bench/refdev_device
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>

#include "spyre_dma/hw/contract.hpp"
#include "spyre_dma/refdev/ref_device.hpp"

namespace {

namespace hw = spyre_dma::hw;
namespace reg = hw::reg;
using spyre_dma::DmaAccess;
using spyre_dma::refdev::RefDevice;

struct Aligned {
  explicit Aligned(std::size_t n) : p(static_cast<std::uint8_t*>(std::aligned_alloc(4096, (n + 4095) / 4096 * 4096))) {
    std::memset(p, 0x5A, n);
  }
  ~Aligned() { std::free(p); }
  std::uint8_t* p;
};

// One pipeline's rings, programmed and enabled.
struct Rings {
  Rings(RefDevice& d, hw::Pipeline p, std::uint32_t size)
      : dev(d), pipe(p), n(size), cb(size * hw::kCbBytes), rb(size * hw::kRbBytes) {
    std::memset(rb.p, 0, size * hw::kRbBytes);
    cb_iova = dev.map(cb.p, size * hw::kCbBytes, DmaAccess::kDeviceReads);
    rb_iova = dev.map(rb.p, size * hw::kRbBytes, DmaAccess::kBoth);
    dev.write64(reg::pipe(p, reg::kCbRingBase_64), cb_iova);
    dev.write32(reg::pipe(p, reg::kCbRingSize), size);
    dev.write64(reg::pipe(p, reg::kRbRingBase_64), rb_iova);
    dev.write32(reg::pipe(p, reg::kRbRingSize), size);
    dev.write32(reg::pipe(p, reg::kQueueControl), hw::kQueueEnable);
    dev.write32(reg::kControl, hw::kControlEnable);
  }
  ~Rings() {
    dev.unmap(cb_iova);
    dev.unmap(rb_iova);
  }
  void put(const hw::CbBytes& b) { std::memcpy(cb.p + (pi++ & (n - 1)) * hw::kCbBytes, b.data(), b.size()); }
  void ring() { dev.write32(reg::pipe(pipe, reg::kCbPi), pi); }
  // Waits for the next RB by its phase bit and returns the slot.
  void take() {
    const std::uint8_t* slot = rb.p + (ci & (n - 1)) * hw::kRbBytes;
    const bool want = hw::expected_phase(ci, n);
    for (;;) {
      const auto w0 = __atomic_load_n(reinterpret_cast<const std::uint64_t*>(slot), __ATOMIC_ACQUIRE);
      if (((w0 >> 32) & 1u) == (want ? 1u : 0u)) break;
      if (yield_wait) std::this_thread::yield();
    }
    dev.write32(reg::pipe(pipe, reg::kRbCi), ++ci);
  }
  RefDevice& dev;
  hw::Pipeline pipe;
  std::uint32_t n, pi = 0, ci = 0;
  bool yield_wait = false;
  Aligned cb, rb;
  std::uint64_t cb_iova = 0, rb_iova = 0;
};

hw::ControlBlock fill_cb(std::uint32_t bytes) {
  hw::ControlBlock cb;
  cb.tag = 1;
  cb.dmi.type = hw::DmaType::kMemoryFill;
  cb.dmi.length_flits = bytes / 128;
  cb.xlat[0] = hw::XlatEntry{hw::XlatMode::kReadWrite, 0, static_cast<std::uint32_t>(hw::kSegmentFlits)};
  return cb;
}

// The cost of one doorbell with the workers paused (pure submission).
void BM_Doorbell(benchmark::State& state) {
  RefDevice dev;
  dev.pause();
  std::uint32_t pi = 0;
  for (auto _ : state) dev.write32(reg::pipe(hw::Pipeline::kDmai, reg::kCbPi), ++pi);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Doorbell);

void BM_Memcpy(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  Aligned a(n), b(n);
  for (auto _ : state) {
    std::memcpy(b.p, a.p, n);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(std::int64_t(state.iterations()) * std::int64_t(n));
}
BENCHMARK(BM_Memcpy)->Arg(4 << 20)->Arg(64 << 20)->UseRealTime();

// H2D (DMI immediate) of n bytes per CB, one CB in flight: device memory already resident.
void BM_H2d(benchmark::State& state) {
  const auto n = static_cast<std::uint32_t>(state.range(0));
  RefDevice dev;
  Rings r(dev, hw::Pipeline::kDmai, 16);
  Aligned host(n);
  const std::uint64_t iova = dev.map(host.p, n, DmaAccess::kDeviceReads);
  hw::ControlBlock cb = fill_cb(n);
  cb.dmi.type = hw::DmaType::kImmediate;
  cb.dmi.fill_pattern = 0;
  cb.dmi.host_iova_flits = iova / 128;
  const hw::CbBytes bytes = hw::encode(cb);
  r.yield_wait = state.range(1) != 0;
  r.put(bytes), r.ring(), r.take();  // touch the device pages once
  for (auto _ : state) {
    r.put(bytes);
    r.ring();
    r.take();
  }
  state.SetBytesProcessed(std::int64_t(state.iterations()) * n);
  dev.unmap(iova);
}
// Second argument 1: the poller yields instead of spinning (on a machine with few cores a spinning
// poller slows the device's memcpy down).
BENCHMARK(BM_H2d)->Args({4 << 20, 0})->Args({4 << 20, 1})->Args({64 << 20, 0})->Args({64 << 20, 1})->UseRealTime();

// Small CBs, batches of 8 in flight: CB rate of one pipeline.
void BM_SmallCbs(benchmark::State& state) {
  spyre_dma::refdev::RefDeviceConfig config;
  config.idle_spin = std::chrono::microseconds(state.range(1));
  RefDevice dev(config);
  Rings r(dev, hw::Pipeline::kDmai, 64);
  r.yield_wait = state.range(0) != 0;
  const hw::CbBytes bytes = hw::encode(fill_cb(128));
  for (auto _ : state) {
    for (int i = 0; i < 8; ++i) r.put(bytes);
    r.ring();
    for (int i = 0; i < 8; ++i) r.take();
  }
  state.SetItemsProcessed(std::int64_t(state.iterations()) * 8);
}
BENCHMARK(BM_SmallCbs)->Args({0, 10})->Args({1, 10})->Args({0, 200})->Args({1, 200})->UseRealTime();

// The device's own CB rate: 64 small CBs queued while paused, then run back to back; the poller
// sleeps in wait_for_interrupt (the last CB interrupts), so it costs the worker nothing.
void BM_DeviceCbRate(benchmark::State& state) {
  RefDevice dev;
  Rings r(dev, hw::Pipeline::kDmai, 64);
  const hw::CbBytes plain = hw::encode(fill_cb(128));
  hw::ControlBlock last_cb = fill_cb(128);
  last_cb.interrupt = true;
  const hw::CbBytes last = hw::encode(last_cb);
  for (auto _ : state) {
    state.PauseTiming();
    dev.pause();
    for (int i = 0; i < 63; ++i) r.put(plain);
    r.put(last);
    r.ring();
    state.ResumeTiming();
    dev.resume();
    while (dev.wait_for_interrupt(std::chrono::seconds(5)) == 0) {
    }
    state.PauseTiming();
    for (int i = 0; i < 64; ++i) r.take();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(std::int64_t(state.iterations()) * 64);
}
BENCHMARK(BM_DeviceCbRate)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
