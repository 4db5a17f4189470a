// SimDevice: the SystemC model behind spyre_dma::Device. One thread owns the SystemC kernel;
// every Device call that touches the model is run on it, in call order.
#include "spyre_dma/model/sim_device.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include "spyre_dma/status.hpp"

#include "fault/fault_kinds.hpp"
#include "sim/debug_hooks.hpp"
#include "sim/kernel.hpp"
#include "sim/sim_top.hpp"
#include "spyre_dma/model/config_loader.hpp"
#include "spyre_dma/device_core/iommu.hpp"
#include "spyre_dma/device_core/register_file.hpp"

namespace spyre_dma::model {

using namespace sc_core;

namespace {
std::atomic<bool> g_device_alive{false};
}

class SimDevice::Impl {
 public:
  Impl(SimConfig config, std::string trace_path)
      : config_(std::move(config)), trace_path_(std::move(trace_path)), hooks_(debug_hooks()) {
    bool expected = false;
    if (!g_device_alive.compare_exchange_strong(expected, true)) {
      throw std::logic_error("SimDevice: one simulated device per process at a time (SystemC has one kernel)");
    }
    try {
      thread_ = std::thread([this] { loop(); });
      call([this] {  // elaboration done, or its exception rethrown here
        if (elaboration_error_) std::rethrow_exception(elaboration_error_);
      });
    } catch (...) {
      shutdown();
      g_device_alive = false;
      throw;
    }
  }

  ~Impl() {
    shutdown();
    g_device_alive = false;
  }

  template <class F>
  auto call(F&& f) -> decltype(f()) {
    using R = decltype(f());
    // An error SystemC raises (a process that threw, a kernel rule broken) stops this simulation
    // for good: the device fails, typed, with the error's words, and refuses every later call
    // (SystemC would only say it cannot restart after an error). A new SimDevice starts afresh.
    std::packaged_task<R()> task([this, &f]() -> R {
      try {
        return f();
      } catch (const sc_report& r) {
        fail(std::string("SystemC: ") + r.what());
      }
    });
    std::future<R> result = task.get_future();
    // Shared: the caller may return (result ready) before the simulation thread sets it.
    auto done = std::make_shared<std::atomic<bool>>(false);
    {
      std::lock_guard lock(mu_);
      if (stop_) throw std::logic_error("SimDevice: the simulation thread has stopped");
      if (!failure_.empty()) throw DeviceFault(failure_);
      commands_.emplace_back([&task, done] {
        task();
        done->store(true, std::memory_order_release);
      });
      queued_.store(true, std::memory_order_release);
    }
    cv_.notify_one();
    // Most calls take a few microseconds of simulation: waiting for them by spinning a little
    // saves the two thread wake-ups that would otherwise cost more than the work itself.
    spin_until([&] { return done->load(std::memory_order_acquire); });
    return result.get();
  }

  void post_write(std::uint64_t offset, std::uint64_t value, unsigned width) {
    device_core::check_bar0_access(offset, width, true, "SimDevice");
    std::lock_guard lock(mu_);
    writes_.push_back({offset, value, width});
  }

  // Queued with the writes, so that it lands between the writes issued before and after it.
  void host_copied(std::uint64_t bytes) {
    std::lock_guard lock(mu_);
    writes_.push_back({0, bytes, 0});
  }

  // On the simulation thread: hands queued register writes to the model at the current instant
  // (width 0: a host staging copy of `value` bytes).
  void take_writes() {
    std::vector<QueuedWrite> w;
    {
      std::lock_guard lock(mu_);
      w.swap(writes_);
    }
    for (const QueuedWrite& q : w) {
      if (q.width == 0) {
        top_->host_copied(q.value);
      } else {
        top_->post_write(q.offset, q.value, q.width);
      }
    }
  }

  // Simulated time stops at 2^63 ps (about 106 days): the model adds durations below 2^62 ps to
  // times below this, so no time it computes wraps around its 64 bits before the horizon is
  // reached, and nothing past it is simulated.
  static constexpr pcie::Ps kHorizonPs = pcie::Ps{1} << 63;

  // Runs the model until `done()` or until nothing is left to simulate.
  void run_until(const std::function<bool()>& done) {
    while (!done()) {
      if (!sc_pending_activity()) return;
      const pcie::Ps now = to_ps(sc_time_stamp());
      if (to_ps(sc_time_to_pending_activity()) >= kHorizonPs - now) horizon_reached();
      sc_start(from_ps(kHorizonPs - now), SC_EXIT_ON_STARVATION);
    }
  }

  // Runs the model until simulated time `at` (interrupts on the way stay pending for the next
  // wait_for_interrupt()).
  void run_to(pcie::Ps at) {
    at = std::min(at, kHorizonPs);
    for (pcie::Ps now = to_ps(sc_time_stamp()); now < at; now = to_ps(sc_time_stamp())) sc_start(from_ps(at - now));
    check_horizon();
  }

  void check_horizon() {
    if (to_ps(sc_time_stamp()) >= kHorizonPs) horizon_reached();
  }
  [[noreturn]] void horizon_reached() {
    fail("the model cannot simulate past 2^63 ps (about 106 days of simulated time)");
  }

  // On the simulation thread: the simulation cannot go on. Every later call throws the same.
  [[noreturn]] void fail(const std::string& why) {
    const std::string message = "sim: the simulation stopped at " + std::to_string(to_ps(sc_time_stamp()) / 1000) +
                                " ns of simulated time: " + why + "; a new device starts a fresh simulation";
    {
      std::lock_guard lock(mu_);
      if (failure_.empty()) failure_ = message;
    }
    throw DeviceFault(message);
  }

  std::uint64_t read_register(std::uint64_t offset, unsigned width) {
    device_core::check_bar0_access(offset, width, false, "SimDevice");
    return call([&] {
      take_writes();
      if (top_->writes_pending()) {
        top_->pause_when_written();
        run_until([&] { return !top_->writes_pending(); });
      }
      // The read's completion travels upstream behind the device's posted writes sent before it
      // (PCIe ordering): it returns once they have landed, so what it reports is in host memory.
      ProtocolChecker& checker = top_->link.checker();
      const pcie::Ps sent = to_ps(sc_time_stamp());
      if (!hooks_.reads_pass_posted) run_to(checker.posted_arrival_bound(LinkDirection::kUp, sent));
      const std::uint64_t value = top_->controller.read_register(offset, width);
      checker.completion_order(LinkDirection::kUp, sent, to_ps(sc_time_stamp()), "BAR0 read completion");
      return value;
    });
  }

  std::uint32_t wait_for_interrupt() {
    return call([&] {
      take_writes();
      run_until([&] { return irq_mask_ != 0; });
      const std::uint32_t m = irq_mask_;
      irq_mask_ = 0;
      return m;
    });
  }

  const SimConfig& config() const noexcept { return config_; }
  device_core::Iommu& iommu() noexcept { return iommu_; }
  SimTop& top() noexcept { return *top_; }

 private:
  struct QueuedWrite {
    std::uint64_t offset;
    std::uint64_t value;
    unsigned width;
  };

  void loop() {
    fresh_kernel();
    try {
      // An MSI-X message speaks for the pipelines its vector was given to (Device::wait_for_interrupt
      // returns pipelines, not vectors).
      top_ = std::make_unique<SimTop>("spyre", config_, iommu_, [this](std::uint32_t vector) {
        irq_mask_ |= top_->controller.pipelines_of_vector(vector);
        sc_pause();
      }, trace_path_);
    } catch (...) {
      elaboration_error_ = std::current_exception();
    }
    for (;;) {
      std::function<void()> cmd;
      {
        spin_until([&] { return queued_.load(std::memory_order_acquire); });
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !commands_.empty(); });
        if (commands_.empty()) break;
        cmd = std::move(commands_.front());
        commands_.pop_front();
        queued_.store(!commands_.empty(), std::memory_order_relaxed);
      }
      cmd();  // a packaged task: its exceptions travel to the caller through the future
    }
    stop_threads();
    top_.reset();
    release_kernel();  // the device was the kernel's only user
  }

  // Spins for up to kSpin (yielding the core when another thread wants it), then gives up.
  template <class Ready>
  static void spin_until(Ready ready) {
    constexpr auto kSpin = std::chrono::microseconds(50);
    const auto until = std::chrono::steady_clock::now() + kSpin;
    for (unsigned i = 0; !ready(); ++i) {
      if ((i & 63) == 63) {
        if (std::chrono::steady_clock::now() > until) return;
        std::this_thread::yield();
      }
    }
  }

  void shutdown() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_one();
    if (thread_.joinable()) thread_.join();
  }

  SimConfig config_;
  std::string trace_path_;
  DebugHooks hooks_;
  device_core::Iommu iommu_;
  std::unique_ptr<SimTop> top_;
  std::uint32_t irq_mask_ = 0;  // simulation thread only
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> commands_;
  std::atomic<bool> queued_{false};  // commands_ is not empty (read without the lock by the spin)
  std::vector<QueuedWrite> writes_;
  std::exception_ptr elaboration_error_;
  std::string failure_;  // why the simulation stopped for good (empty: it did not); under mu_
  bool stop_ = false;
};

SimDevice::SimDevice(SimConfig config, std::string trace_path)
    : impl_(std::make_unique<Impl>(std::move(config), std::move(trace_path))) {}
SimDevice::~SimDevice() = default;

DeviceDescription SimDevice::describe() const {
  const SimConfig& c = impl_->config();
  const bool rtl = c.data_path == DataPathKind::kRtl;
  return DeviceDescription{rtl ? "rtl" : "sim",
                           std::string(rtl ? "SystemC model with the RTL data path" : "SystemC model") + ", preset " + c.preset + ", PCIe Gen" + std::to_string(c.link.generation) +
                               " x" + std::to_string(c.link.lanes) +
                               (c.fidelity == Fidelity::kTlp ? ", TLP fidelity" : ", burst fidelity"),
                           Progress::kHostDriven};
}

std::uint64_t SimDevice::bar0_read(std::uint64_t offset, unsigned width) { return impl_->read_register(offset, width); }
void SimDevice::bar0_write(std::uint64_t offset, std::uint64_t value, unsigned width) {
  impl_->post_write(offset, value, width);
}

device_core::Iommu& SimDevice::device_iommu() { return impl_->iommu(); }
void SimDevice::host_copied(std::uint64_t bytes) {
  if (config().host_cost.staging_gbps > 0) impl_->host_copied(bytes);
}

std::uint32_t SimDevice::wait_for_interrupt(std::chrono::nanoseconds) { return impl_->wait_for_interrupt(); }

const SimConfig& SimDevice::config() const noexcept { return impl_->config(); }

double SimDevice::now_ns() {
  return impl_->call([] { return sc_time_stamp().to_seconds() * 1e9; });
}

device_core::SparseMemory& SimDevice::memory() { return impl_->top().device_memory.storage(); }
void SimDevice::arm_misbehave(const device_core::Misbehave& m) {
  impl_->call([&] { impl_->top().controller.arm_misbehave(m); });
}
void SimDevice::backdoor_read(std::uint64_t phys, void* dst, std::size_t bytes) { memory().read(phys, dst, bytes); }
void SimDevice::backdoor_write(std::uint64_t phys, const void* src, std::size_t bytes) {
  memory().write(phys, src, bytes);
}

nlohmann::json SimDevice::statistics() {
  return impl_->call([this] {
    SimTop& t = impl_->top();
    const LinkCounters& l = t.link.counters();
    const ControllerCounters c = t.controller.counters();
    nlohmann::json j;
    j["time_ns"] = sc_time_stamp().to_seconds() * 1e9;
    j["link"] = {{"tlps", {{"MWr", l.mwr}, {"MRd", l.mrd}, {"CplD", l.cpld}, {"Cpl", l.cpl}}},
                 {"wire_bytes", {{"up", l.up_bytes}, {"down", l.down_bytes}}},
                 {"payload_bytes", {{"up", l.payload_up}, {"down", l.payload_down}}},
                 {"busy_ns", {{"up", t.link.up_busy_ps() / 1000.0}, {"down", t.link.down_busy_ps() / 1000.0}}},
                 {"credit_stalls", l.credit_stalls},
                 {"credit_stall_ns", l.credit_stall_ps / 1000.0},
                 {"replays", l.replays}};
    ProtocolChecker& checker = t.link.checker();
    checker.prune(to_ps(sc_time_stamp()));  // checks the credit bookings up to now
    nlohmann::json by_rule = nlohmann::json::object();
    for (std::size_t r = 0; r < kNumProtocolRules; ++r) {
      const auto rule = static_cast<ProtocolRule>(r);
      by_rule[std::string(to_string(rule))] = checker.violations(rule);
    }
    j["link"]["protocol"] = {{"tlps_checked", checker.tlps_checked()},
                             {"cbs_checked", checker.cbs_checked()},
                             {"violations", checker.violations()},
                             {"violations_by_rule", by_rule},
                             {"last_violation", checker.last_violation()}};
    const FaultInjector& faults = t.controller.faults();
    nlohmann::json injected = nlohmann::json::object();
    for (std::size_t k = 0; k < kNumFaultKinds; ++k) injected[std::string(kFaultKindNames[k])] = faults.injected()[k];
    injected["lcrc"] = l.replays;  // random (link.lcrc_error_rate) and at_cb ones: the link's replays
    j["faults"] = {{"injected", injected}, {"affected_cbs", faults.affected_cbs()}};
    nlohmann::json pipes = nlohmann::json::object();
    for (unsigned i = 0; i < hw::kNumPipelines; ++i) {
      const PipelineCounters& p = c.pipe[i];
      pipes[std::string(hw::to_string(static_cast<hw::Pipeline>(i)))] = {
          {"cbs", p.cbs}, {"error_rbs", p.error_rbs}, {"bytes", p.bytes},
          {"barrier_waits", p.barrier_waits}, {"barrier_wait_ns", p.barrier_wait_ps / 1000.0},
          {"rb_ring_stalls", p.rb_ring_stalls}, {"fetches", p.fetches}, {"busy_ns", p.busy_ps / 1000.0}};
    }
    j["controller"] = {{"pipelines", pipes},
                       {"read_requests", c.read_requests},
                       {"tag_stalls", c.tag_stalls},
                       {"tag_stall_ns", c.tag_stall_ps / 1000.0},
                       {"write_tlps", c.write_tlps},
                       {"interrupts", c.interrupts},
                       {"resets", c.resets}};
    j["root_complex"] = {{"read_requests", t.root_complex.read_requests()},
                         {"write_requests", t.root_complex.write_requests()},
                         {"iommu_faults", t.root_complex.iommu_faults()}};
    j["device_memory"] = {{"bytes_read", t.device_memory.bytes_read()},
                          {"bytes_written", t.device_memory.bytes_written()},
                          {"bytes_resident", t.device_memory.storage().bytes_resident()}};
    t.controller.data_path().add_statistics(j);  // the RTL's clock and stream checker
    j.merge_patch(t.stats.to_json(sc_time_stamp().to_seconds() * 1e9));  // histograms, occupancy
    j["config"] = to_json(impl_->config());
    return j;
  });
}

}  // namespace spyre_dma::model
