// The data path of the DMA controller: the part that moves a CB's bytes. The controller's one
// front end (model/src/device/controller.hpp: BAR0, rings, CB fetch and prefetch, barriers, the RB
// writer, interrupts, reset, CB- and RB-level fault injection, misbehaviour) hands each DMAI or
// DMAO CB it admitted to the data path the configuration names ("systemc", or "rtl": the verilated
// RTL of rtl_bridge/, registered by that library), through this interface.
//
// A data path runs inside the SystemC simulation: execute() is called from the pipeline's process
// and may wait in simulated time. It reaches host memory, device memory and the IOMMU only through
// the ports of its DataPathContext.
//
// A data path answers a CB at once (the SystemC data path books the whole CB when it starts it) or
// later: one that keeps several CBs of a pipeline in flight (the RTL's DMAI engine takes the next
// CB while the last one's completions arrive) returns from execute() with `pending` set once it
// has taken the CB and the pipeline may go on, and gives the outcome through collect(), in CB
// order. The front end retires CBs in order either way.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "spyre_dma/device_core/cb_admission.hpp"
#include "spyre_dma/device_core/iommu.hpp"
#include "spyre_dma/hw/contract.hpp"
#include "spyre_dma/model/host_port.hpp"
#include "spyre_dma/model/sim_config.hpp"

namespace spyre_dma::model {

class FaultInjector;

// What became of one CB, and when.
struct CbExecution {
  device_core::CbOutcome outcome;
  Ps issue_end_ps = 0;  // when the pipeline may start issuing its next CB
  Ps done_ps = 0;       // when the CB's work is complete (its RB may follow)
  Ps data_ps = 0;       // when its data was done: in device memory (DMAI), at the host (DMAO); 0: none moved
  bool faulted = false;  // an injected fault (or an LCRC replay) hit it
  // The data path still holds the CB: only issue_end_ps is known; collect() gives the rest.
  bool pending = false;
};

// A read tag for a CB fetch: the front end fetches CBs through the data path's tag space.
struct FetchTag {
  std::uint32_t tag = 0;
  Ps at_ps = 0;  // when it is free to use
};

struct DataPathCounters {
  std::uint64_t read_requests = 0;  // MRd TLPs of CB data
  std::uint64_t write_tlps = 0;     // MWr TLPs of CB data
  std::uint64_t tag_stalls = 0;     // read requests that waited for a free tag
  Ps tag_stall_ps = 0;
};

class DataPath {
 public:
  virtual ~DataPath() = default;
  // Moves the bytes of a CB the front end admitted (decoded, on its own pipeline, DMAI or DMAO,
  // within MAX_CB_BYTES), starting no earlier than `start`: the remaining checks (XLAT, device
  // memory bounds, IOMMU), the transfer, and its outcome. `raw` is the CB as fetched.
  virtual CbExecution execute(hw::Pipeline pipeline, const hw::ControlBlock& cb, const std::uint8_t* raw,
                              Ps start) = 0;
  // The oldest pending CB of `pipeline`: whether its outcome is in, and the outcome (waiting for
  // it in simulated time when it is not). Only a data path that returns `pending` CBs overrides
  // these; collect() on one with nothing pending is a std::logic_error.
  virtual bool answered(hw::Pipeline pipeline) const {
    (void)pipeline;
    return false;
  }
  virtual CbExecution collect(hw::Pipeline pipeline);
  virtual FetchTag fetch_tag(hw::Pipeline pipeline, Ps at) = 0;
  virtual void fetch_done(hw::Pipeline pipeline, const FetchTag& tag, Ps at) = 0;
  virtual DataPathCounters counters() const = 0;
  // Its own part of the statistics tree (the RTL: cycles and its stream checker), if any.
  virtual void add_statistics(nlohmann::json& statistics) const { (void)statistics; }
};

// What a data path is built with. The references outlive it.
struct DataPathContext {
  const SimConfig& config;
  HostPort& host;
  DeviceMemoryPort& memory;
  device_core::Iommu& iommu;       // for the data path's own checks (ATS)
  // The model's TLP-level fault injection (fault_injector.hpp): each data path asks it at the
  // events it has (a host-memory CB's IOMMU check, a read request, its completions, a write), so
  // the same configuration and seed draw the same faults in the same order.
  FaultInjector& faults;
  // Called when a pending CB's outcome comes in (the front end wakes the pipeline); may be empty.
  std::function<void(hw::Pipeline)> answered = {};
};

using DataPathFactory = std::function<std::unique_ptr<DataPath>(const DataPathContext&)>;

// The data paths a configuration may name (SimConfig::data_path): "systemc" is the model's own;
// others register here, once per process (a second registration of a name replaces the first).
void register_data_path(const std::string& name, DataPathFactory factory);
// Throws std::invalid_argument naming the data paths this program has when `name` is not one.
std::unique_ptr<DataPath> make_data_path(const std::string& name, const DataPathContext& context);
std::vector<std::string> data_path_names();

}  // namespace spyre_dma::model
