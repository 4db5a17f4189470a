// Shared helpers of the engine tests: deterministic data, aligned host memory, an engine on a
// fresh refdev, and SpyDevice, a Device decorator that decodes every CB the engine hands over
// (at its doorbell) so tests can count barriers and prove the rings are never overrun.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "spyre_dma/hw/contract.hpp"
#include "spyre_dma/backend/builtin.hpp"
#include "spyre_dma/refdev/ref_device.hpp"
#include "spyre_dma/shareable_memory.hpp"
#include "spyre_dma/spyre_dma.hpp"

namespace spyre_dma::test {

using namespace std::chrono_literals;

// Every wait in the engine tests is bounded. Generous enough for sanitizer builds.
inline constexpr auto kWait = 10s;

constexpr std::uint64_t KiB = 1024, MiB = 1024 * 1024;

// --- Deterministic data ---------------------------------------------------------------------

// Fills [p, p + n) with a pseudo-random byte stream determined by `seed` alone (xorshift64*).
inline void fill_pattern(void* p, std::size_t n, std::uint64_t seed) {
  auto* out = static_cast<std::uint8_t*>(p);
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
  if (x == 0) x = 1;
  std::size_t i = 0;
  while (i < n) {
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    const std::uint64_t v = x * 0x2545F4914F6CDD1Dull;
    const std::size_t k = std::min<std::size_t>(8, n - i);
    std::memcpy(out + i, &v, k);
    i += k;
  }
}

inline std::vector<std::uint8_t> pattern(std::size_t n, std::uint64_t seed) {
  std::vector<std::uint8_t> v(n);
  fill_pattern(v.data(), n, seed);
  return v;
}

// The bytes a 32-bit fill writes: the pattern little-endian, repeated from the range start.
inline void fill32_reference(std::uint8_t* p, std::size_t n, std::uint32_t pattern) {
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<std::uint8_t>(pattern >> (8 * (i % 4)));
}

// Byte comparison that reports the first difference instead of dumping megabytes.
inline ::testing::AssertionResult bytes_equal(const void* expected, const void* actual, std::size_t n) {
  const auto* e = static_cast<const std::uint8_t*>(expected);
  const auto* a = static_cast<const std::uint8_t*>(actual);
  if (std::memcmp(e, a, n) == 0) return ::testing::AssertionSuccess();
  std::size_t i = 0;
  while (e[i] == a[i]) ++i;
  std::size_t bad = 0;
  for (std::size_t j = i; j < n; ++j) bad += e[j] != a[j];
  return ::testing::AssertionFailure() << "first difference at byte " << i << " of " << n
                                       << ": expected " << int(e[i]) << ", got " << int(a[i])
                                       << " (" << bad << " bytes differ)";
}

// --- Host memory ----------------------------------------------------------------------------

// Page-aligned host memory of the caller (for register_host), freed with the object. Shareable, so
// that a device in another process (vfio-user) can map it too.
class AlignedHost {
 public:
  explicit AlignedHost(std::size_t bytes)
      : bytes_(bytes), p_(static_cast<std::uint8_t*>(allocate_shareable(bytes))) {}
  ~AlignedHost() { free_shareable(p_); }
  AlignedHost(const AlignedHost&) = delete;
  AlignedHost& operator=(const AlignedHost&) = delete;
  std::uint8_t* data() const noexcept { return p_; }
  std::size_t size() const noexcept { return bytes_; }

 private:
  std::size_t bytes_;
  std::uint8_t* p_;
};

// --- ForwardingDevice ------------------------------------------------------------------------

// Forwards every call to another device: the base of a test's device that changes or watches one
// or two of them.
class ForwardingDevice : public Device {
 public:
  explicit ForwardingDevice(std::shared_ptr<Device> inner) : inner_(std::move(inner)) {}
  DeviceDescription describe() const override { return inner_->describe(); }
  std::uint32_t read32(std::uint64_t offset) override { return inner_->read32(offset); }
  std::uint64_t read64(std::uint64_t offset) override { return inner_->read64(offset); }
  void write32(std::uint64_t offset, std::uint32_t value) override { inner_->write32(offset, value); }
  void write64(std::uint64_t offset, std::uint64_t value) override { inner_->write64(offset, value); }
  std::uint64_t map(void* host, std::size_t bytes, DmaAccess access) override {
    return inner_->map(host, bytes, access);
  }
  void unmap(std::uint64_t iova) override { inner_->unmap(iova); }
  std::uint32_t wait_for_interrupt(std::chrono::nanoseconds timeout) override {
    return inner_->wait_for_interrupt(timeout);
  }
  void wake_waiter() noexcept override { inner_->wake_waiter(); }
  std::uint64_t host_time_ns() override { return inner_->host_time_ns(); }
  void host_copied(std::uint64_t bytes) override { inner_->host_copied(bytes); }

 protected:
  Device& inner() noexcept { return *inner_; }

 private:
  std::shared_ptr<Device> inner_;
};

// --- SpyDevice ------------------------------------------------------------------------------

// A CB as the spy saw it at its doorbell.
struct SeenCb {
  hw::Pipeline pipe = hw::Pipeline::kDmai;
  std::uint32_t tag = 0;
  bool barrier = false;
  std::uint64_t bytes = 0;  // of the section that describes work (0 for compute)
  std::uint64_t doorbell = 0;  // global doorbell sequence number that handed it over
};

// Forwards everything to a RefDevice and watches the CB rings: at each CB_PI write it decodes the
// CBs handed over and checks that the producer never runs more than a ring ahead of the device's
// consumer index (an overrun).
class SpyDevice final : public Device {
 public:
  explicit SpyDevice(refdev::RefDeviceConfig config = {})
      : ref_(std::make_shared<refdev::RefDevice>(std::move(config))), inner_(ref_) {}
  // Any other backend (the SystemC model): the same checks, without refdev's test controls.
  explicit SpyDevice(std::shared_ptr<Device> other) : inner_(std::move(other)) {}

  bool is_refdev() const noexcept { return ref_ != nullptr; }
  refdev::RefDevice& ref() {
    if (!ref_) throw std::logic_error("this test needs refdev's test controls; the backend is " + describe().backend);
    return *ref_;
  }

  DeviceDescription describe() const override { return inner_->describe(); }
  std::uint32_t read32(std::uint64_t offset) override { return inner_->read32(offset); }
  std::uint64_t read64(std::uint64_t offset) override { return inner_->read64(offset); }
  std::uint32_t wait_for_interrupt(std::chrono::nanoseconds timeout) override {
    return inner_->wait_for_interrupt(timeout);
  }
  void wake_waiter() noexcept override { inner_->wake_waiter(); }
  std::uint64_t host_time_ns() override { return inner_->host_time_ns(); }

  std::uint64_t map(void* host, std::size_t bytes, DmaAccess access) override {
    const std::uint64_t iova = inner_->map(host, bytes, access);
    std::lock_guard lock(mu_);
    maps_[iova] = {static_cast<std::uint8_t*>(host), bytes};
    return iova;
  }
  void unmap(std::uint64_t iova) override {
    inner_->unmap(iova);
    std::lock_guard lock(mu_);
    maps_.erase(iova);
  }

  void write64(std::uint64_t offset, std::uint64_t value) override {
    {
      std::lock_guard lock(mu_);
      for (unsigned p = 0; p < hw::kNumPipelines; ++p) {
        if (offset == hw::reg::pipe(static_cast<hw::Pipeline>(p), hw::reg::kCbRingBase_64)) {
          rings_[p].base_iova = value;
        }
      }
    }
    inner_->write64(offset, value);
  }

  // A staging copy's report: held while hold_host_copies(true), so that a test can keep the
  // engine's staging thread mid-copy (bounded: released after 10 s whatever the test does).
  void host_copied(std::uint64_t bytes) override {
    {
      std::unique_lock lock(mu_);
      ++copies_held_;
      hold_cv_.notify_all();
      hold_cv_.wait_for(lock, std::chrono::seconds(10), [&] { return !hold_copies_; });
      --copies_held_;
    }
    inner_->host_copied(bytes);
  }
  void hold_host_copies(bool hold) {
    std::lock_guard lock(mu_);
    hold_copies_ = hold;
    hold_cv_.notify_all();
  }
  // Waits (up to `timeout`) until a staging copy is held.
  bool wait_for_held_copy(std::chrono::nanoseconds timeout) {
    std::unique_lock lock(mu_);
    return hold_cv_.wait_for(lock, timeout, [&] { return copies_held_ > 0; });
  }
  std::uint64_t resets_seen() const noexcept { return resets_seen_.load(); }

  void write32(std::uint64_t offset, std::uint32_t value) override {
    {
      std::lock_guard lock(mu_);
      if (offset == hw::reg::kControl && (value & hw::kControlReset)) ++resets_seen_;
      for (unsigned p = 0; p < hw::kNumPipelines; ++p) {
        const auto pipe = static_cast<hw::Pipeline>(p);
        Ring& r = rings_[p];
        if (offset == hw::reg::pipe(pipe, hw::reg::kCbRingSize)) r.size = value;
        if (offset == hw::reg::pipe(pipe, hw::reg::kCbPi)) on_doorbell(pipe, r, value);
      }
      if (offset == hw::reg::kControl && (value & hw::kControlReset)) {
        for (Ring& r : rings_) r.pi = 0;
      }
    }
    inner_->write32(offset, value);
  }

  std::vector<SeenCb> cbs() const {
    std::lock_guard lock(mu_);
    return seen_;
  }
  std::size_t barrier_cbs() const {
    std::lock_guard lock(mu_);
    return static_cast<std::size_t>(
        std::count_if(seen_.begin(), seen_.end(), [](const SeenCb& c) { return c.barrier; }));
  }
  std::uint64_t overruns() const noexcept { return overruns_.load(); }
  std::uint32_t max_occupancy(hw::Pipeline p) const {
    std::lock_guard lock(mu_);
    return rings_[static_cast<unsigned>(p)].max_occupancy;
  }
  void clear() {
    std::lock_guard lock(mu_);
    seen_.clear();
  }

 private:
  struct Ring {
    std::uint64_t base_iova = 0;
    std::uint32_t size = 0;
    std::uint32_t pi = 0;
    std::uint32_t max_occupancy = 0;
  };

  const std::uint8_t* host_of(std::uint64_t iova) const {
    auto it = maps_.upper_bound(iova);
    if (it == maps_.begin()) return nullptr;
    --it;
    if (iova - it->first >= it->second.second) return nullptr;
    return it->second.first + (iova - it->first);
  }

  void on_doorbell(hw::Pipeline pipe, Ring& r, std::uint32_t new_pi) {
    if (new_pi == 0 || r.size == 0) {  // programming after a reset
      r.pi = new_pi;
      return;
    }
    const std::uint32_t ci = inner_->read32(hw::reg::pipe(pipe, hw::reg::kCbCi));
    const std::uint32_t occupancy = new_pi - ci;
    r.max_occupancy = std::max(r.max_occupancy, occupancy);
    if (occupancy > r.size) overruns_.fetch_add(1);
    const std::uint8_t* ring = host_of(r.base_iova);
    const std::uint64_t seq = ++doorbells_;
    for (std::uint32_t i = r.pi; i != new_pi && ring; ++i) {
      const std::uint8_t* slot = ring + std::size_t(i & (r.size - 1)) * hw::kCbBytes;
      const hw::CbDecodeResult d = hw::decode_cb(slot);
      SeenCb c;
      c.pipe = pipe;
      c.tag = d.cb.tag;
      c.barrier = d.cb.barrier;
      c.bytes = d.cb.dmi.type != hw::DmaType::kSkip ? d.cb.dmi.byte_count() : d.cb.dmo.byte_count();
      c.doorbell = seq;
      seen_.push_back(c);
    }
    r.pi = new_pi;
  }

  std::shared_ptr<refdev::RefDevice> ref_;  // null on other backends
  std::shared_ptr<Device> inner_;
  mutable std::mutex mu_;
  std::condition_variable hold_cv_;
  bool hold_copies_ = false;
  unsigned copies_held_ = 0;
  std::atomic<std::uint64_t> resets_seen_{0};
  std::map<std::uint64_t, std::pair<std::uint8_t*, std::size_t>> maps_;
  std::array<Ring, hw::kNumPipelines> rings_{};
  std::vector<SeenCb> seen_;
  std::uint64_t doorbells_ = 0;
  std::atomic<std::uint64_t> overruns_{0};
};

// --- Streams --------------------------------------------------------------------------------

inline const char* name(Ordering o) {
  switch (o) {
    case Ordering::kStrict: return "Strict";
    case Ordering::kOpOrdered: return "OpOrdered";
    case Ordering::kPipelineFifo: return "PipelineFifo";
  }
  return "?";
}

inline StreamOptions with(Ordering o, int priority = 0) {
  StreamOptions so;
  so.ordering = o;
  so.priority = priority;
  return so;
}

// --- Engine on a fresh device ---------------------------------------------------------------

struct Rig {
  std::shared_ptr<SpyDevice> spy;
  std::unique_ptr<Engine> engine;
  refdev::RefDevice& dev() { return spy->ref(); }
};

// The backend the engine tests run on: refdev, or the one SPYRE_DMA_TEST_BACKEND names (sim, rtl,
// vfio-user:<served>, vfio: CTest registers the suites for all but the last), opened through the
// backend registry. On vfio-user:<served> (sim, refdev), each device is a <served> device in a
// private `spyre-dma serve` process (the build's spyre-dma). On vfio, it is the card
// SPYRE_DMA_TEST_VFIO_DEVICE names (default: the first card), as it is.
inline std::string test_backend() {
  const char* b = std::getenv("SPYRE_DMA_TEST_BACKEND");
  return b != nullptr && *b ? b : "refdev";
}

// A fresh device of the run's backend (refdev unless SPYRE_DMA_TEST_BACKEND names another), with
// `m` armed through its misbehaviour control before the engine hands it any CB.
// The registry's name and settings for the run's backend (no configuration patch yet).
inline std::pair<std::string, backend::Settings> test_backend_settings() {
  std::string name = test_backend();
  backend::Settings settings;
  std::string served;  // vfio-user:<served>
  if (const auto colon = name.find(':'); colon != std::string::npos) {
    served = name.substr(colon + 1);
    name = name.substr(0, colon);
  }
  if (name == "vfio") {  // a real card: its own depths and sizes
    if (const char* card = std::getenv("SPYRE_DMA_TEST_VFIO_DEVICE")) settings.values["vfio-device"] = card;
  }
  if (name == "vfio-user") {
    settings.values["vfio-serve"] = served.empty() ? "sim" : served;
#ifdef SPYRE_DMA_TEST_SERVER_PROGRAM
    settings.values["vfio-server"] = SPYRE_DMA_TEST_SERVER_PROGRAM;
#endif
  }
  return {name, settings};
}

// A fresh device of the run's backend (refdev unless SPYRE_DMA_TEST_BACKEND names another), with
// `m` armed through its misbehaviour control before the engine hands it any CB.
inline std::shared_ptr<Device> misbehaving_device(const device_core::Misbehave& m) {
  const auto [name, settings] = test_backend_settings();
  backend::Instance i = backend::builtin().open(name, settings);
  if (!i.misbehave) throw std::logic_error("backend " + test_backend() + " cannot misbehave");
  i.misbehave->arm_misbehave(m);
  return i.device;
}

inline std::shared_ptr<SpyDevice> make_device(const refdev::RefDeviceConfig& config) {
  if (test_backend() == "refdev") return std::make_shared<SpyDevice>(config);
  auto [name, settings] = test_backend_settings();
  if (name != "vfio") {
    // The model's default preset (or a served refdev), shaped like the refdev the test asked for.
    settings.patch = {{"device",
                       {{"depth", {{"compute", config.depth[0]}, {"dmai", config.depth[1]}, {"dmao", config.depth[2]}}},
                        {"max_cb_bytes", config.max_cb_bytes},
                        {"memory_bytes", config.device_memory_bytes},
                        {"usable_bytes", config.usable_bytes},
                        {"capabilities", config.capabilities}}}};
    if (settings.get("vfio-serve") == "refdev" && config.honour_compute_time) {
      settings.patch["device"]["honour_compute_time"] = true;
    }
  }
  return std::make_shared<SpyDevice>(backend::builtin().open(name, settings).device);
}

inline Rig make_rig(EngineOptions options = {}, refdev::RefDeviceConfig config = {}) {
  // A failed test may leave work stuck on the device; the engine's destructor then waits up to
  // cb_timeout. Keep that bounded unless the test chose a timeout itself.
  if (options.cb_timeout == EngineOptions{}.cb_timeout) options.cb_timeout = 10s;
  Rig r;
  r.spy = make_device(config);
  r.engine = Engine::open(r.spy, options);
  return r;
}

// Counts on_complete calls of many ops, by op index, from any thread.
class CompletionLog {
 public:
  explicit CompletionLog(std::size_t n = 0) : counts_(n) {}
  void resize(std::size_t n) {
    std::lock_guard lock(mu_);
    counts_.resize(n);
  }
  Callback callback(std::size_t index) {
    return [this, index](const Status& s) {
      std::lock_guard lock(mu_);
      ++counts_.at(index);
      order_.push_back(index);
      codes_.emplace_back(index, s.code());
    };
  }
  std::vector<std::size_t> order() const {
    std::lock_guard lock(mu_);
    return order_;
  }
  std::vector<int> counts() const {
    std::lock_guard lock(mu_);
    return counts_;
  }
  std::vector<std::pair<std::size_t, ErrorCode>> codes() const {
    std::lock_guard lock(mu_);
    return codes_;
  }
  // Every op completed exactly once.
  ::testing::AssertionResult exactly_once() const {
    std::lock_guard lock(mu_);
    for (std::size_t i = 0; i < counts_.size(); ++i) {
      if (counts_[i] != 1) {
        return ::testing::AssertionFailure() << "op " << i << " completed " << counts_[i] << " times";
      }
    }
    return ::testing::AssertionSuccess();
  }

 private:
  mutable std::mutex mu_;
  std::vector<int> counts_;
  std::vector<std::size_t> order_;
  std::vector<std::pair<std::size_t, ErrorCode>> codes_;
};

// Waits until `pred` holds or `timeout` passes (for counters updated by engine threads).
template <class Pred>
bool eventually(Pred pred, std::chrono::nanoseconds timeout = kWait) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

#define SPYRE_EXPECT_OK(expr)                               \
  do {                                                      \
    const ::spyre_dma::Status _st = (expr);                 \
    EXPECT_TRUE(_st.ok()) << #expr << ": " << _st.to_string(); \
  } while (0)
#define SPYRE_ASSERT_OK(expr)                               \
  do {                                                      \
    const ::spyre_dma::Status _st = (expr);                 \
    ASSERT_TRUE(_st.ok()) << #expr << ": " << _st.to_string(); \
  } while (0)

}  // namespace spyre_dma::test
