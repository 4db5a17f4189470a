// The simulation of one server (SimConfig::topology), or of a cluster of network.nodes such
// servers with a NIC each on one network: one thread owns the SystemC kernel and the elaborated
// model; every call that touches the model runs on it, in call order. The devices' handles
// (SimDevice) and the NICs' (SimNic) share it; it ends when the last of them (and the SimNode or
// SimCluster) is gone. Devices are numbered across the cluster: node n's device i is
// n x topology.devices + i.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/debug_hooks.hpp"
#include "sim/sim_top.hpp"
#include "spyre_dma/device_core/iommu.hpp"
#include "spyre_dma/model/sim_config.hpp"

namespace spyre_dma::model {

// A second simulation while one is alive in the process: SystemC has one kernel.
class SimulationBusy : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

class NodeSimulation {
 public:
  // Throws std::logic_error while another simulation lives in this process (SystemC has one
  // kernel), and what elaboration throws (a configuration the model cannot run).
  NodeSimulation(SimConfig config, std::string trace_path, std::string wave_path = {});
  ~NodeSimulation();
  NodeSimulation(const NodeSimulation&) = delete;
  NodeSimulation& operator=(const NodeSimulation&) = delete;

  // Runs f on the simulation thread and returns its result (or rethrows its exception). An error
  // SystemC raises stops the simulation for good: that call and every later one throw DeviceFault.
  template <class F>
  auto call(F&& f) -> decltype(f());

  // Device `d`'s register write, posted: the next call hands it to the model at that instant.
  void post_write(unsigned d, std::uint64_t offset, std::uint64_t value, unsigned width);
  // Device `d`'s host staging copy, queued with its writes.
  void host_copied(unsigned d, std::uint64_t bytes);
  // The host's present for device d in simulated time, ns: the kernel's time when the simulation
  // last stopped, or when d's host staging copies end if later. Reads what the simulation thread
  // published, so it costs a call into the simulation only when staging copies are queued.
  std::uint64_t host_time_ns(unsigned d);
  // A read first lets device d's earlier writes land, and returns behind its posted writes.
  std::uint64_t read_register(unsigned d, std::uint64_t offset, unsigned width);
  // Runs the model until device d has raised an interrupt (or nothing is left to simulate);
  // returns its pipelines' bits and clears them. Other devices' interrupts stay pending. `step`:
  // also stop at the next interrupt of any other device (then d's bits may be 0), so that a
  // thread that polls every device's engine in turn lets each take up its work as it comes.
  std::uint32_t wait_for_interrupt(unsigned d, bool step);

  // Runs the model until its next NIC event (a completion, a put's data landed) or until nothing
  // is left; false when nothing is left to simulate. The caller then runs run_nic_callbacks().
  bool run_to_nic_event();
  // Runs, on the calling thread, the callbacks of the NIC events so far (a transfer's `done`,
  // `landed`) in their order; true if there were any. wait_for_interrupt() runs them too: the
  // engine's waits make a cluster's transfers complete. They never run on the simulation thread,
  // so they may start transfers, wait and take locks as any host code does.
  bool run_nic_callbacks();
  // Runs the model until simulated time `at`; on the simulation thread.
  void run_to_time(pcie::Ps at) { run_to(at); }

  // What the devices of node `node` share (SimNode::statistics), and the node's NIC and network
  // port in a cluster; on the simulation thread.
  nlohmann::json server_statistics(unsigned node = 0);

  const SimConfig& config() const noexcept { return config_; }
  std::size_t size() const noexcept { return iommus_.size(); }  // devices, all nodes
  std::size_t nodes() const noexcept { return tops_.size(); }
  device_core::Iommu& iommu(unsigned d) { return *iommus_.at(d); }
  SimTop& top(unsigned node = 0) { return *tops_.at(node); }
  DeviceModel& device(unsigned d);
  Nic& nic(unsigned node);
  Network& network() { return *network_; }
  // A number no other simulation in this process had: it tells a handle of this cluster from one
  // of an earlier one.
  std::uint64_t generation() const noexcept { return generation_; }

 private:
  struct QueuedWrite {
    unsigned device;
    std::uint64_t offset;
    std::uint64_t value;
    unsigned width;  // 0: a staging copy of `value` bytes
  };
  void loop();
  void take_writes();
  void publish_clock() noexcept;  // on the simulation thread: what host_time_ns() reads
  void run_until(const std::function<bool()>& done);
  void run_to(pcie::Ps at);
  void release_windows() noexcept;
  struct WindowsClosedAfter {  // release_windows() on every way out of an sc_start()
    NodeSimulation& sim;
    ~WindowsClosedAfter() { sim.release_windows(); }
  };
  [[noreturn]] void horizon_reached();
  [[noreturn]] void fail(const std::string& why);
  void shutdown();
  void enqueue(std::function<void()> command);
  template <class Ready>
  static void spin_until(Ready ready);

  SimConfig config_;
  std::string trace_path_;
  std::string wave_path_;
  DebugHooks hooks_;
  std::vector<std::unique_ptr<device_core::Iommu>> iommus_;
  std::unique_ptr<Network> network_;  // a cluster's (before the nodes that hold it)
  std::vector<std::unique_ptr<SimTop>> tops_;  // one per node
  std::vector<std::uint32_t> irq_mask_;  // per device; simulation thread only
  std::uint64_t interrupts_ = 0;         // raised so far, any device; simulation thread only
  std::uint64_t nic_completions_ = 0;    // NIC events, any NIC; simulation thread only
  std::mutex deferred_mu_;
  std::deque<std::function<void()>> deferred_;  // NIC events' callbacks, in order
  std::uint64_t generation_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> commands_;
  std::atomic<bool> queued_{false};  // commands_ is not empty (read without the lock by the spin)
  std::vector<QueuedWrite> writes_;
  // What host_time_ns() reads: the kernel's time at the end of the last call into the simulation,
  // and per device when its host staging copies end and whether some are queued and not charged.
  struct HostClock {
    std::atomic<std::uint64_t> free_ps{0};
    std::atomic<bool> copies_queued{false};
  };
  std::atomic<std::uint64_t> stopped_at_ps_{0};
  std::unique_ptr<HostClock[]> host_clock_;
  std::exception_ptr elaboration_error_;
  std::string failure_;  // why the simulation stopped for good (empty: it did not); under mu_
  bool stop_ = false;
};

template <class Ready>
void NodeSimulation::spin_until(Ready ready) {
  // Spins for up to 50 us (yielding the core when another thread wants it), then gives up.
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
  for (unsigned i = 0; !ready(); ++i) {
    if ((i & 63) == 63) {
      if (std::chrono::steady_clock::now() > until) return;
      std::this_thread::yield();
    }
  }
}

template <class F>
auto NodeSimulation::call(F&& f) -> decltype(f()) {
  using R = decltype(f());
  // From the simulation thread itself (a NIC's completion that posts the next transfer): at once.
  if (std::this_thread::get_id() == thread_.get_id()) return f();
  std::packaged_task<R()> task([this, &f]() -> R {
    // The clock host_time_ns() reads is published before the result is: the caller may go on
    // the moment it is.
    struct Publish {
      NodeSimulation& sim;
      ~Publish() { sim.publish_clock(); }
    } publish{*this};
    try {
      return f();
    } catch (const sc_core::sc_report& r) {
      fail(std::string("SystemC: ") + r.what());
    }
  });
  std::future<R> result = task.get_future();
  // Shared: the caller may return (result ready) before the simulation thread sets it.
  auto done = std::make_shared<std::atomic<bool>>(false);
  enqueue([&task, done] {
    task();
    done->store(true, std::memory_order_release);
  });
  // Most calls take a few microseconds of simulation: waiting for them by spinning a little
  // saves the two thread wake-ups that would otherwise cost more than the work itself.
  spin_until([&] { return done->load(std::memory_order_acquire); });
  return result.get();
}

}  // namespace spyre_dma::model
