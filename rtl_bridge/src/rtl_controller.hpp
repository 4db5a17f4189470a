// The DMA controller with its DMAI and DMAO data paths in RTL (rtl/spyre_dma_core.sv, verilated):
// a drop-in for DmaController behind the same sockets. What stays in SystemC here is the queue
// front end: the BAR0 register file, CB rings and doorbells, CB fetch and prefetch, the
// contract's format checks of each CB, barriers across pipelines, the COMPUTE pipeline, the RB
// writer and MSI-X. Each DMAI or DMAO CB is handed to the RTL, which checks, translates and moves
// the data and answers with the RB's status, error and byte count.
//
// Fault injection and the model's debug hooks are not supported on this controller: a
// configuration that asks for them is rejected at construction.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include "device/dma_controller.hpp"  // ControllerCounters, PipelineCounters
#include "fault/fault_injector.hpp"
#include "rtl_data_path.hpp"

namespace spyre_dma::model {
class StatsRegistry;
class TraceWriter;
class LatencyHistogram;
class Gauge;
}  // namespace spyre_dma::model

namespace spyre_dma::rtl {

class RtlController : public sc_core::sc_module {
 public:
  tlm_utils::simple_initiator_socket<RtlController> pcie;
  tlm_utils::simple_initiator_socket<RtlController> memory;

  // `wave`: a VCD file of the RTL's signals, or empty.
  RtlController(sc_core::sc_module_name name, const model::SimConfig& config, refdev::Iommu& iommu,
                model::RootComplex& root_complex, model::ProtocolChecker& checker, const std::string& wave);

  std::uint64_t read_register(std::uint64_t offset, unsigned width) const;
  void write_register(std::uint64_t offset, std::uint64_t value, unsigned width);

  // The front end's counts, with the data path's TLPs.
  model::ControllerCounters counters() const;
  const model::FaultInjector& faults() const noexcept { return faults_; }
  const RtlDataPath& data_path() const noexcept { return data_path_; }
  void observe(model::StatsRegistry& stats, model::TraceWriter* trace);

 private:
  struct Doorbell {
    std::uint32_t pi_end;
    std::uint64_t seq;
  };
  struct Pipe {
    hw::Pipeline id = hw::Pipeline::kDmai;
    std::uint64_t cb_base = 0, rb_base = 0;
    std::uint32_t cb_size = 0, rb_size = 0;
    std::uint32_t cb_pi = 0, cb_ci = 0, rb_pi = 0, rb_ci = 0;
    std::uint32_t irq_enable = 0, irq_vector = 0, error_status = 0, queue_control = 0;
    std::deque<Doorbell> doorbells, pruned;
    std::uint32_t retired = 0;
    std::deque<pcie::Ps> retire_ps;
    pcie::Ps last_retire_ps = 0;
    pcie::Ps local_ps = 0;
    pcie::Ps next_fetch_ps = 0;
    sc_core::sc_event kick;
  };
  struct CbResult {
    hw::RbStatus status = hw::RbStatus::kGood;
    hw::ErrorKind error = hw::ErrorKind::kNone;
    hw::CbField field = hw::CbField::kNone;
    std::uint64_t detail = 0;
    std::uint64_t bytes = 0;
    pcie::Ps done_ps = 0;
    pcie::Ps data_ps = 0;
  };

  void pipeline_thread(unsigned index);
  bool fetchable(const Pipe& p) const;
  void sync_to(pcie::Ps local);
  std::uint64_t doorbell_seq_of(const Pipe& p, std::uint32_t index) const;
  pcie::Ps wait_barrier(Pipe& p, std::uint32_t index, pcie::Ps start);
  pcie::Ps retire_time(const Pipe& q, std::uint32_t bound) const;
  CbResult execute(Pipe& p, const std::uint8_t* raw, pcie::Ps start, std::uint64_t epoch);
  bool write_rb(Pipe& p, const hw::ResponseBlock& rb, pcie::Ps at, pcie::Ps& arrival);
  std::uint32_t rb_pi_visible(const Pipe& p) const;
  pcie::Ps link_read(std::uint64_t iova, std::uint8_t* dst, std::uint64_t len, pcie::Ps at, bool& ok);
  pcie::Ps link_write(std::uint64_t iova, const std::uint8_t* src, std::uint64_t len, pcie::Ps at,
                      pcie::Ps* arrival, bool& ok);
  void reset();
  Pipe* pipe_at(std::uint64_t offset, std::uint64_t& reg);
  const Pipe* pipe_at(std::uint64_t offset, std::uint64_t& reg) const;

  const model::SimConfig& config_;
  model::RootComplex& rc_;
  model::ProtocolChecker& checker_;
  model::FaultInjector faults_;  // always disabled: its counts read zero in the statistics
  std::array<Pipe, hw::kNumPipelines> pipes_;
  sc_core::sc_event retired_;
  std::uint32_t control_ = 0;
  std::uint64_t doorbell_seq_ = 0;
  std::uint64_t epoch_ = 0;
  pcie::Ps cb_overhead_ps_;
  model::ControllerCounters counters_;
  std::array<model::LatencyHistogram*, hw::kNumPipelines> cb_latency_{};
  std::array<model::Gauge*, hw::kNumPipelines> occupancy_{};
  RtlDataPath data_path_;
};

}  // namespace spyre_dma::rtl
