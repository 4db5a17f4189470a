#include "sim/node_simulation.hpp"

#include <algorithm>
#include <stdexcept>

#include "sim/kernel.hpp"
#include "spyre_dma/device_core/register_file.hpp"
#include "spyre_dma/status.hpp"

namespace spyre_dma::model {

using namespace sc_core;

namespace {
std::atomic<bool> g_simulation_alive{false};

// Simulated time stops at 2^63 ps (about 106 days): the model adds durations below 2^62 ps to
// times below this, so no time it computes wraps around its 64 bits before the horizon is
// reached, and nothing past it is simulated.
constexpr pcie::Ps kHorizonPs = pcie::Ps{1} << 63;
}  // namespace

NodeSimulation::NodeSimulation(SimConfig config, std::string trace_path, std::string wave_path)
    : config_(std::move(config)), trace_path_(std::move(trace_path)), wave_path_(std::move(wave_path)),
      hooks_(debug_hooks()) {
  bool expected = false;
  if (!g_simulation_alive.compare_exchange_strong(expected, true)) {
    throw SimulationBusy(
        "one simulated server per process at a time (SystemC has one kernel): close the engine of the other "
        "first; a server of several devices is one open with devices N");
  }
  try {
    static std::atomic<std::uint64_t> simulations{0};
    generation_ = ++simulations;
    const std::uint32_t devices = config_.topology.devices * config_.network.nodes;
    for (std::uint32_t d = 0; d < devices; ++d) iommus_.push_back(std::make_unique<device_core::Iommu>());
    irq_mask_.assign(iommus_.size(), 0);
    host_clock_ = std::make_unique<HostClock[]>(iommus_.size());
    thread_ = std::thread([this] { loop(); });
    call([this] {  // elaboration done, or its exception rethrown here
      if (elaboration_error_) std::rethrow_exception(elaboration_error_);
    });
  } catch (...) {
    shutdown();
    g_simulation_alive = false;
    throw;
  }
}

NodeSimulation::~NodeSimulation() {
  shutdown();
  g_simulation_alive = false;
}

void NodeSimulation::enqueue(std::function<void()> command) {
  {
    std::lock_guard lock(mu_);
    if (stop_) throw std::logic_error("SimDevice: the simulation thread has stopped");
    if (!failure_.empty()) throw DeviceFault(failure_);
    commands_.push_back(std::move(command));
    queued_.store(true, std::memory_order_release);
  }
  cv_.notify_one();
}

void NodeSimulation::post_write(unsigned d, std::uint64_t offset, std::uint64_t value, unsigned width) {
  device_core::check_bar0_access(offset, width, true, "SimDevice");
  std::lock_guard lock(mu_);
  writes_.push_back({d, offset, value, width});
}

// Queued with the writes, so that it lands between the writes issued before and after it.
void NodeSimulation::host_copied(unsigned d, std::uint64_t bytes) {
  std::lock_guard lock(mu_);
  writes_.push_back({d, 0, bytes, 0});
  host_clock_[d].copies_queued.store(true, std::memory_order_relaxed);
}

std::uint64_t NodeSimulation::host_time_ns(unsigned d) {
  if (host_clock_[d].copies_queued.load(std::memory_order_acquire)) call([this] { take_writes(); });
  const std::uint64_t ps = std::max(stopped_at_ps_.load(std::memory_order_acquire),
                                    host_clock_[d].free_ps.load(std::memory_order_acquire));
  return ps / 1000;
}

void NodeSimulation::publish_clock() noexcept {
  if (tops_.size() != config_.network.nodes) return;  // still elaborating, or it failed
  stopped_at_ps_.store(now_ps(), std::memory_order_release);
  for (unsigned d = 0; d < size(); ++d) {
    host_clock_[d].free_ps.store(device(d).host_free_ps(), std::memory_order_release);
  }
}

// On the simulation thread: hands every device's queued register writes to the model at the
// current instant.
void NodeSimulation::take_writes() {
  std::vector<QueuedWrite> w;
  {
    std::lock_guard lock(mu_);
    w.swap(writes_);
    // Every queued copy is in `w` now: charged below, before anyone reads the clock again.
    for (unsigned d = 0; d < size(); ++d) host_clock_[d].copies_queued.store(false, std::memory_order_relaxed);
  }
  for (const QueuedWrite& q : w) {
    DeviceModel& device = this->device(q.device);
    if (q.width == 0) device.host_copied(q.value);
    else device.post_write(q.offset, q.value, q.width);
  }
}

// Runs the model until `done()` or until nothing is left to simulate.
void NodeSimulation::run_until(const std::function<bool()>& done) {
  while (!done()) {
    if (!sc_pending_activity()) return;
    const pcie::Ps now = now_ps();
    if (to_ps(sc_time_to_pending_activity()) >= kHorizonPs - now) horizon_reached();
    const WindowsClosedAfter closed{*this};
    sc_start(from_ps(kHorizonPs - now), SC_EXIT_ON_STARVATION);
  }
}

// Runs the model until simulated time `at` (interrupts on the way stay pending for the next
// wait_for_interrupt()).
void NodeSimulation::run_to(pcie::Ps at) {
  at = std::min(at, kHorizonPs);
  for (pcie::Ps now = now_ps(); now < at; now = now_ps()) {
    const WindowsClosedAfter closed{*this};
    sc_start(from_ps(at - now));
  }
  if (now_ps() >= kHorizonPs) horizon_reached();
}

// An sc_start() that pauses, or ends in an error, can leave a TLP's IOMMU window open; host threads
// may unmap while the simulation waits.
void NodeSimulation::release_windows() noexcept {
  for (const auto& top : tops_) top->root_complex.release_windows();
}

void NodeSimulation::horizon_reached() {
  fail("the model cannot simulate past 2^63 ps (about 106 days of simulated time)");
}

// On the simulation thread: the simulation cannot go on. Every later call throws the same.
void NodeSimulation::fail(const std::string& why) {
  const std::string message = "sim: the simulation stopped at " + std::to_string(now_ps() / 1000) +
                              " ns of simulated time: " + why + "; a new device starts a fresh simulation";
  {
    std::lock_guard lock(mu_);
    if (failure_.empty()) failure_ = message;
  }
  throw DeviceFault(message);
}

std::uint64_t NodeSimulation::read_register(unsigned d, std::uint64_t offset, unsigned width) {
  device_core::check_bar0_access(offset, width, false, "SimDevice");
  return call([&] {
    take_writes();
    DeviceModel& device = this->device(d);
    if (device.writes_pending()) {
      device.pause_when_written();
      run_until([&] { return !device.writes_pending(); });
    }
    // The read's completion travels upstream behind the device's posted writes sent before it
    // (PCIe ordering): it returns once they have landed, so what it reports is in host memory.
    ProtocolChecker& checker = device.link.checker();
    const pcie::Ps sent = now_ps();
    if (!hooks_.reads_pass_posted) run_to(checker.posted_arrival_bound(LinkDirection::kUp, sent));
    const std::uint64_t value = device.controller.read_register(offset, width);
    checker.completion_order(LinkDirection::kUp, sent, now_ps(), "BAR0 read completion");
    return value;
  });
}

bool NodeSimulation::run_nic_callbacks() {
  std::deque<std::function<void()>> now;
  {
    std::lock_guard lock(deferred_mu_);
    now.swap(deferred_);
  }
  for (auto& f : now) f();
  return !now.empty();
}

bool NodeSimulation::run_to_nic_event() {
  return call([&] {
    take_writes();
    const std::uint64_t before = nic_completions_;
    run_until([&] { return nic_completions_ != before; });
    return nic_completions_ != before || sc_pending_activity();
  });
}

std::uint32_t NodeSimulation::wait_for_interrupt(unsigned d, bool step) {
  const std::uint32_t mask = call([&] {
    take_writes();
    const std::uint64_t before = interrupts_, nic_before = nic_completions_;
    // A NIC's completion ends the wait too: it may end a host task the caller waits for.
    run_until([&] { return irq_mask_[d] != 0 || (step && interrupts_ != before) || nic_completions_ != nic_before; });
    const std::uint32_t m = irq_mask_[d];
    irq_mask_[d] = 0;
    return m;
  });
  run_nic_callbacks();  // on this thread, which holds no engine lock while it waits
  return mask;
}

void NodeSimulation::loop() {
  fresh_kernel();
  try {
    const unsigned per_node = config_.topology.devices;
    const unsigned nodes = config_.network.nodes;
    if (nodes > 1) network_ = std::make_unique<Network>(config_.network);
    for (unsigned n = 0; n < nodes; ++n) {
      std::vector<device_core::Iommu*> iommus;
      for (unsigned i = 0; i < per_node; ++i) iommus.push_back(iommus_[n * per_node + i].get());
      // An MSI-X message speaks for the pipelines its vector was given to (Device::wait_for_interrupt
      // returns pipelines, not vectors).
      auto on_interrupt = [this, base = n * per_node](unsigned i, std::uint32_t vector) {
        irq_mask_[base + i] |= device(base + i).controller.pipelines_of_vector(vector);
        ++interrupts_;
        sc_pause();
      };
      // A NIC's event: its callback waits for the thread that drives the simulation, which stops
      // at this instant to run it.
      auto on_nic = [this](std::function<void()> callback) {
        {
          std::lock_guard lock(deferred_mu_);
          deferred_.push_back(std::move(callback));
        }
        ++nic_completions_;
        sc_pause();
      };
      // One server keeps the name it always had; the trace and the waves are node 0's.
      const std::string name = nodes == 1 ? "spyre" : "node" + std::to_string(n);
      tops_.push_back(std::make_unique<SimTop>(name.c_str(), config_, iommus, on_interrupt, n == 0 ? trace_path_ : "",
                                               n == 0 ? wave_path_ : "", network_.get(), n, on_nic));
    }
    if (network_) {
      std::vector<Nic*> nics;
      for (auto& t : tops_) nics.push_back(t->nic.get());
      for (Nic* nic : nics) nic->connect(nics);
      // One trace for the cluster (node 0's): every NIC's completions, with trace_tlps every packet.
      if (TraceWriter* trace = tops_.front()->trace.get()) {
        for (Nic* nic : nics) nic->trace_completions(*trace);
        if (config_.trace_tlps) network_->trace_packets(*trace);
      }
    }
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
  tops_.clear();
  network_.reset();
  release_kernel();  // the simulation was the kernel's only user
}

DeviceModel& NodeSimulation::device(unsigned d) {
  const unsigned per_node = config_.topology.devices;
  return tops_.at(d / per_node)->device(d % per_node);
}

Nic& NodeSimulation::nic(unsigned node) {
  if (!network_) throw std::logic_error("NodeSimulation: a single server has no NIC (network.nodes is 1)");
  return *tops_.at(node)->nic;
}

nlohmann::json NodeSimulation::server_statistics(unsigned node) {
  SimTop& t = *tops_.at(node);
  const TopologyConfig& topo = config_.topology;
  nlohmann::json uplinks = nlohmann::json::array();
  for (std::size_t k = 0; k < t.uplinks.size(); ++k) {
    PcieLink& l = *t.uplinks[k];
    const LinkCounters& c = l.counters();
    uplinks.push_back({{"switch", k},
                       {"busy_ns", {{"up", l.up_busy_ps() / 1000.0}, {"down", l.down_busy_ps() / 1000.0}}},
                       {"payload_bytes", {{"up", c.payload_up}, {"down", c.payload_down}}},
                       {"credit_stalls", c.credit_stalls},
                       {"credit_stall_ns", c.credit_stall_ps / 1000.0},
                       {"ordering_holds", t.switches[k]->ordering_holds()},
                       {"protocol_violations", l.checker().violations()}});
  }
  nlohmann::json out = {{"devices", topo.devices},
                        {"devices_per_switch", topo.devices_per_switch},
                        {"switches", t.switches.size()},
                        {"host_memory_busy_ns", t.root_complex.memory_busy_ps() / 1000.0},
                        {"uplinks", uplinks}};
  if (t.nic) {
    const Network::PortCounters& p = network_->counters(node);
    const LinkCounters& l = t.nic->link().counters();
    out["nic"] = {{"completions", t.nic->completed()},
                  {"regions", t.nic->regions()},
                  {"pcie_payload_bytes", {{"up", l.payload_up}, {"down", l.payload_down}}},
                  {"port",
                   {{"packets", p.packets},
                    {"payload_bytes", p.payload_bytes},
                    {"wire_bytes", p.wire_bytes},
                    {"busy_ns", network_->tx_busy_ps(node) / 1000.0},
                    {"credit_stalls", p.credit_stalls},
                    {"credit_stall_ns", p.credit_stall_ps / 1000.0}}}};
  }
  return out;
}

void NodeSimulation::shutdown() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

}  // namespace spyre_dma::model
