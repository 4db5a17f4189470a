// Construction, observation and counters of the DMA controller (see controller.hpp).
#define SC_INCLUDE_DYNAMIC_PROCESSES  // sc_spawn, for the pipelines' threads
#include "device/controller.hpp"

#include "host/root_complex.hpp"
#include "link/protocol_checker.hpp"
#include "observe/state_probe.hpp"
#include "observe/trace_writer.hpp"
#include "spyre_dma/model/stats.hpp"
#include "base/rates.hpp"

namespace spyre_dma::model {

using namespace sc_core;

namespace {
device_core::DeviceIdentity identity(const DeviceConfig& d) {
  device_core::DeviceIdentity id;
  id.capabilities = d.capabilities;
  id.depth = d.depth;
  id.max_cb_bytes = d.max_cb_bytes;
  id.memory_bytes = d.memory_bytes;
  id.usable_bytes = d.usable_bytes;
  return id;
}
}  // namespace

Controller::Controller(sc_module_name name, const SimConfig& config, RootComplex::Requester& requester,
                       ProtocolChecker& checker)
    : sc_module(name),
      pcie("pcie"),
      memory("memory"),
      config_(config),
      iommu_(requester.iommu()),
      requester_(requester),
      host_(config, requester, checker,
            [this](tlm::tlm_generic_payload& gp, sc_time& d) { pcie->b_transport(gp, d); }),
      device_memory_([this](tlm::tlm_generic_payload& gp, sc_time& d) { memory->b_transport(gp, d); },
                     [this](tlm::tlm_generic_payload& gp) { return memory->transport_dbg(gp); }),
      hooks_(debug_hooks()),
      faults_(config.faults, config.seed),
      misbehave_(config.faults.misbehave),
      regs_(identity(config.device)),
      doorbells_(config.device.depth),
      cb_overhead_ps_(pcie::ns_to_ps(config.device.cb_overhead_ns)),
      quantum_ps_(2'000'000) {  // 2 us of run-ahead before a pipeline yields: keeps calendars short
  // A data path that answers a CB later wakes the pipeline (waiting for a doorbell) to retire it.
  data_path_ = make_data_path(to_string(config.data_path),
                              DataPathContext{config, host_, device_memory_, iommu_, faults_, [this](hw::Pipeline p) {
                                                pipes_[static_cast<unsigned>(p)].kick.notify(SC_ZERO_TIME);
                                              }});
  for (unsigned i = 0; i < hw::kNumPipelines; ++i) {
    pipes_[i].id = static_cast<hw::Pipeline>(i);
    sc_spawn([this, i] { pipeline_thread(i); }, sc_gen_unique_name("pipeline"));
  }
}

Controller::~Controller() = default;

void Controller::observe(StatsRegistry& stats, TraceWriter* trace, const std::string& label, StateProbe* probe,
                         const std::string& scope) {
  trace_ = trace;
  probe_ = probe;
  if (trace_) trace_pid_ = trace_->process(label);
  for (unsigned i = 0; i < hw::kNumPipelines; ++i) {
    const std::string name(hw::to_string(static_cast<hw::Pipeline>(i)));
    observed_[i].cb_latency = &stats.histogram("controller.pipelines." + name + ".cb_latency_ns");
    observed_[i].occupancy = &stats.gauge("controller.pipelines." + name + ".queue_occupancy");
    if (trace_) {
      observed_[i].slots.push_back({trace_->thread(trace_pid_, name + " slot 0").tid, 0});
      observed_[i].rb_track = trace_->thread(trace_pid_, name + " RBs").tid;
    }
    if (probe_) {
      observed_[i].queue_level =
          probe_->level(scope + "." + name, "cbs_queued", trace_pid_, name + " queue", "CBs queued");
    }
  }
  // Tags change with every read request: in the trace only with its TLPs (trace_tlps).
  if (probe_) {
    host_.observe(probe_, probe_->level(scope, "read_tags", trace_pid_, config_.trace_tlps ? "read tags" : "", "in flight"));
  }
}

int Controller::trace_slot(PipelineState& p, Ps start, Ps end) {
  std::vector<std::pair<int, Ps>>& slots = observed_[static_cast<unsigned>(p.id)].slots;
  for (auto& [tid, busy_until] : slots) {
    if (busy_until <= start) {
      busy_until = end;
      return tid;
    }
  }
  const std::string name = std::string(hw::to_string(p.id)) + " slot " + std::to_string(slots.size());
  slots.push_back({trace_->thread(trace_pid_, name).tid, end});
  return slots.back().first;
}

ControllerCounters Controller::counters() const {
  ControllerCounters c = counters_;
  const DataPathCounters d = data_path_->counters();
  c.read_requests += d.read_requests;
  c.write_tlps += d.write_tlps;
  c.tag_stalls += d.tag_stalls;
  c.tag_stall_ps += d.tag_stall_ps;
  return c;
}

}  // namespace spyre_dma::model
