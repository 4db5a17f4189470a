// SimDevice: one device of a simulated server behind spyre_dma::Device; its calls go to the
// server's simulation (NodeSimulation), named by the device's index.
#include "spyre_dma/model/sim_device.hpp"

#include <string>

#include "spyre_dma/model/fault_kinds.hpp"
#include "sim/node_simulation.hpp"
#include "spyre_dma/model/config_loader.hpp"

namespace spyre_dma::model {

using namespace sc_core;

SimDevice::SimDevice(SimConfig config, std::string trace_path, std::string wave_path)
    : SimDevice(std::make_shared<NodeSimulation>(std::move(config), std::move(trace_path), std::move(wave_path)), 0) {}
SimDevice::SimDevice(std::shared_ptr<NodeSimulation> simulation, unsigned index)
    : sim_(std::move(simulation)), index_(index) {}
SimDevice::~SimDevice() = default;

DeviceDescription SimDevice::describe() const {
  const SimConfig& c = sim_->config();
  const bool rtl = c.data_path == DataPathKind::kRtl;
  return DeviceDescription{rtl ? "rtl" : "sim",
                           std::string(rtl ? "SystemC model with the RTL data path" : "SystemC model") + ", preset " + c.preset + ", PCIe Gen" + std::to_string(c.link.generation) +
                               " x" + std::to_string(c.link.lanes) +
                               (c.fidelity == Fidelity::kTlp ? ", TLP fidelity" : ", burst fidelity"),
                           Progress::kHostDriven, /*host_clock=*/true};
}

std::uint64_t SimDevice::bar0_read(std::uint64_t offset, unsigned width) { return sim_->read_register(index_, offset, width); }
void SimDevice::bar0_write(std::uint64_t offset, std::uint64_t value, unsigned width) {
  sim_->post_write(index_, offset, value, width);
}

device_core::Iommu& SimDevice::device_iommu() { return sim_->iommu(index_); }
void SimDevice::host_copied(std::uint64_t bytes) {
  if (config().host_cost.staging_gbps > 0) sim_->host_copied(index_, bytes);
}

std::uint32_t SimDevice::wait_for_interrupt(std::chrono::nanoseconds timeout) {
  return sim_->wait_for_interrupt(index_, timeout <= std::chrono::nanoseconds::zero());
}

const SimConfig& SimDevice::config() const noexcept { return sim_->config(); }

std::uint64_t SimDevice::host_time_ns() { return sim_->host_time_ns(index_); }

double SimDevice::now_ns() {
  return sim_->call([] { return sc_time_stamp().to_seconds() * 1e9; });
}

device_core::SparseMemory& SimDevice::memory() { return sim_->device(index_).device_memory.storage(); }
void SimDevice::arm_misbehave(const device_core::Misbehave& m) {
  sim_->call([&] { sim_->device(index_).controller.arm_misbehave(m); });
}
void SimDevice::backdoor_read(std::uint64_t phys, void* dst, std::size_t bytes) { memory().read(phys, dst, bytes); }
const void* SimDevice::backdoor_view(std::uint64_t phys, std::size_t bytes, std::size_t& got) {
  return memory().view(phys, bytes, got);
}
void SimDevice::backdoor_write(std::uint64_t phys, const void* src, std::size_t bytes) {
  memory().write(phys, src, bytes);
}

nlohmann::json SimDevice::statistics() {
  return sim_->call([this] {
    DeviceModel& t = sim_->device(index_);
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
                 {"dllps", {{"up", l.dllps_up}, {"down", l.dllps_down}}},
                 {"request_holds", l.request_holds},
                 {"request_hold_ns", l.request_hold_ps / 1000.0},
                 {"replays", l.replays}};
    ProtocolChecker& checker = t.link.checker();
    checker.prune(now_ps());  // checks the credit bookings up to now
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
    nlohmann::json port_busy_ns = nlohmann::json::array();  // every root port of the server
    for (const pcie::Ps ps : t.root_complex().port_busy_ps()) port_busy_ns.push_back(ps / 1000.0);
    j["root_complex"] = {{"read_requests", t.requester.read_requests()},
                         {"write_requests", t.requester.write_requests()},
                         {"iommu_faults", t.requester.iommu_faults()},
                         {"read_holds", t.requester.read_holds()},
                         {"read_hold_ns", t.requester.read_hold_ps() / 1000.0},
                         {"port_busy_ns", port_busy_ns},
                         {"iotlb", {{"hits", t.requester.iotlb().hits()}, {"misses", t.requester.iotlb().misses()}}}};
    j["device_memory"] = {{"bytes_read", t.device_memory.bytes_read()},
                          {"bytes_written", t.device_memory.bytes_written()},
                          {"bytes_resident", t.device_memory.storage().bytes_resident()}};
    t.controller.data_path().add_statistics(j);  // the RTL's clock and stream checker
    j.merge_patch(t.stats.to_json(sc_time_stamp().to_seconds() * 1e9));  // histograms, occupancy
    j["config"] = to_json(sim_->config());
    if (sim_->size() > 1) {
      j["server"] = sim_->server_statistics();
      j["server"]["device"] = index_;
    }
    return j;
  });
}

}  // namespace spyre_dma::model
