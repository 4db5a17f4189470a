// The device's DMA controller: the BAR0 register file of the contract, the three CB pipelines
// (COMPUTE, DMAI, DMAO) with CB fetch and prefetch, the DMAI read engine (MRd cut at MRRS and
// 4 KiB, a tag pool), the DMAO write engine (MWr cut at MPS and 4 KiB), XLAT and segment checks,
// the RB writer and MSI-X, and barrier ordering across pipelines.
//
// Each pipeline is an SC_THREAD that runs ahead of simulated time (temporal decoupling) and books
// shared resources (link serializers, tags, DRAM) at the times it computes; it synchronises only
// when it has to wait for something the host does (a doorbell, RB ring space) or another pipeline
// (a barrier). Host-visible effects (RBs, interrupts) take effect at their own times through the
// root complex, so running ahead never shows the host anything early.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include "fault/fault_injector.hpp"
#include "fault/misbehaviour.hpp"
#include "link/protocol_checker.hpp"
#include "pcie/timing.hpp"
#include "sim/debug_hooks.hpp"
#include "sim/tlp.hpp"
#include "spyre_dma/hw/contract.hpp"
#include "spyre_dma/model/sim_config.hpp"
#include "spyre_dma/refdev/iommu.hpp"

namespace spyre_dma::model {

class RootComplex;
class StatsRegistry;
class TraceWriter;
class LatencyHistogram;
class Gauge;
struct TraceTrack;

struct PipelineCounters {
  std::uint64_t cbs = 0;
  std::uint64_t error_rbs = 0;
  std::uint64_t bytes = 0;
  std::uint64_t barrier_waits = 0;
  pcie::Ps barrier_wait_ps = 0;
  std::uint64_t rb_ring_stalls = 0;
  std::uint64_t fetches = 0;
  pcie::Ps busy_ps = 0;  // sum over CBs of (end - start)
};

struct ControllerCounters {
  std::array<PipelineCounters, hw::kNumPipelines> pipe{};
  std::uint64_t tag_stalls = 0;  // read requests that waited for a free tag
  pcie::Ps tag_stall_ps = 0;
  std::uint64_t read_requests = 0;
  std::uint64_t write_tlps = 0;
  std::uint64_t interrupts = 0;
  std::uint64_t resets = 0;
};

class DmaController : public sc_core::sc_module {
 public:
  tlm_utils::simple_initiator_socket<DmaController> pcie;    // to the link (device is master)
  tlm_utils::simple_initiator_socket<DmaController> memory;  // to device memory

  // `checker` (the link's) also checks that RBs follow their data.
  DmaController(sc_core::sc_module_name name, const SimConfig& config, refdev::Iommu& iommu,
                RootComplex& root_complex, ProtocolChecker& checker);

  // BAR0. Writes take effect at the current simulated time (the device's caller schedules them).
  std::uint64_t read_register(std::uint64_t offset, unsigned width) const;
  void write_register(std::uint64_t offset, std::uint64_t value, unsigned width);

  const ControllerCounters& counters() const noexcept { return counters_; }
  const FaultInjector& faults() const noexcept { return faults_; }
  // FaultConfig::misbehave: how often it happened (0 or 1).
  std::uint64_t misbehaviours() const noexcept { return misbehave_.fired(); }
  // A self-reset (FaultConfig::device_reset_rate, at_cb) has stopped the device.
  bool fatal() const noexcept { return fatal_; }
  // Latency histograms and queue occupancy into `stats`; one span per CB into `trace` (optional).
  void observe(StatsRegistry& stats, TraceWriter* trace);
  // Earliest local time of any pipeline: nothing will be booked before it again.
  pcie::Ps horizon_ps() const;

 private:
  struct Doorbell {
    std::uint32_t pi_end;  // CBs below this index were handed by this doorbell or earlier
    std::uint64_t seq;     // global doorbell order (barriers)
    pcie::Ps at_ps;
  };
  struct Pipe {
    hw::Pipeline id = hw::Pipeline::kDmai;
    std::uint64_t cb_base = 0, rb_base = 0;
    std::uint32_t cb_size = 0, rb_size = 0;
    std::uint32_t cb_pi = 0, cb_ci = 0, rb_pi = 0, rb_ci = 0;
    std::uint32_t irq_enable = 0, irq_vector = 0, error_status = 0, queue_control = 0;
    std::deque<Doorbell> doorbells;  // pruned as CBs retire
    // Doorbells pruned lately (bounded like retire_ps): a barrier CB rung after one of them must
    // still wait for the CBs it handed over, whose retirement may lie in the future of the
    // pipeline that asks (the pipelines run ahead of simulated time).
    std::deque<Doorbell> pruned;
    std::uint32_t retired = 0;       // CBs retired (free-running, like the indices)
    std::deque<pcie::Ps> retire_ps;  // retire time of CB (retired - retire_ps.size() + i)
    pcie::Ps last_retire_ps = 0;
    pcie::Ps local_ps = 0;           // how far this pipeline has scheduled itself
    pcie::Ps next_fetch_ps = 0;
    sc_core::sc_event kick;          // doorbell, enable, RB space, reset
    std::vector<std::uint8_t> scratch;  // data in flight through this pipeline
    bool in_batch = false;           // holds fetched CBs it has not retired
    std::uint32_t last_tag = 0;      // of the last CB answered (misbehave stale_tag)
    // misbehave rb_pi_beyond_ring / cb_ci_backwards broke the indices in epoch broken_epoch - 1:
    // the pipeline fetches nothing more until a reset moves the epoch on.
    std::uint64_t broken_epoch = 0;
  };
  // Faults a requester asks the link and the completer to inject into one transaction, and the
  // LCRC replays the link charged it.
  struct TlpFaults {
    bool force_replay = false;
    bool drop_completion = false;
    CompletionStatus status = CompletionStatus::kSuccess;
    bool poisoned = false;
    const std::vector<pcie::Segment>* poisoned_ranges = nullptr;
    std::uint32_t replays = 0;  // out
  };
  struct CbResult {
    hw::RbStatus status = hw::RbStatus::kGood;
    hw::ErrorKind error = hw::ErrorKind::kNone;
    hw::CbField field = hw::CbField::kNone;
    std::uint64_t detail = 0;
    std::uint64_t bytes = 0;
    pcie::Ps issue_end_ps = 0;  // when the pipeline may start issuing the next CB
    pcie::Ps done_ps = 0;       // when the CB's work is complete
    // When its data was done: in device memory (DMAI), at the host (DMAO); 0: no data moved.
    pcie::Ps data_ps = 0;
    bool faulted = false;       // an injected fault (or an LCRC replay) hit the CB
    // The first failure stays: later requests of the same CB do not overwrite it.
    CbResult& fail_first(hw::ErrorKind kind, hw::CbField at, std::uint64_t value) {
      if (status == hw::RbStatus::kGood) fail(kind, at, value);
      return *this;
    }
    CbResult& fail(hw::ErrorKind kind, hw::CbField at, std::uint64_t value) {
      status = hw::RbStatus::kError;
      error = kind;
      field = at;
      detail = value;
      return *this;
    }
  };

  void pipeline_thread(unsigned index);
  bool fetchable(const Pipe& p) const;
  void sync_to(pcie::Ps local);
  std::uint64_t doorbell_seq_of(const Pipe& p, std::uint32_t index) const;
  pcie::Ps wait_barrier(Pipe& p, std::uint32_t index, pcie::Ps start);
  pcie::Ps retire_time(const Pipe& q, std::uint32_t bound) const;
  CbResult execute(Pipe& p, const std::uint8_t* raw, pcie::Ps start);
  CbResult h2d(const hw::ControlBlock& cb, pcie::Ps start);
  CbResult d2h(const hw::ControlBlock& cb, pcie::Ps start);
  CbResult device_side(const hw::ControlBlock& cb, pcie::Ps start);
  // Every check of a host DMA section before anything moves (byte count, XLAT, device memory
  // bounds, IOMMU): the physical device address, or nullopt with the error in `r`.
  std::optional<std::uint64_t> check_host_dma(const hw::ControlBlock& cb, bool to_device, CbResult& r);
  // The device's own data-path limit (dma_engine_gbps), when configured.
  pcie::Ps through_dma_engine(pcie::Ps t, std::uint64_t bytes, pcie::Ps done);
  // `garbage_status`: STATUS goes out as refdev::kGarbageRbStatus (misbehave garbage_status).
  bool write_rb(Pipe& p, const hw::ResponseBlock& rb, pcie::Ps at, pcie::Ps& arrival,
                bool garbage_status = false);
  // The CB's RB as the misbehave kind says (or none); false when the pipeline stops here.
  bool misbehave_rb(Pipe& p, hw::ResponseBlock rb, pcie::Ps at, pcie::Ps& arrival);
  // misbehave rogue_dma: the raw CB retargeted at the configured IOVA / device offset.
  void retarget(std::uint8_t* raw) const;
  bool broken(const Pipe& p) const noexcept { return p.broken_epoch == epoch_ + 1; }
  bool stopped_answering() const noexcept { return stopped_epoch_ == epoch_ + 1; }
  // The device resets itself at `at` (an injected fault): every pipeline abandons what it fetched.
  void self_reset(pcie::Ps at, std::uint32_t tag);
  // Abend RBs (kind reset) for the CBs [from, n) of a pipeline's batch, in ring order.
  void abort_batch(Pipe& p, const std::uint8_t* batch, std::uint32_t from, std::uint32_t n, std::uint64_t epoch);
  // RB_PI as the host may see it now: RBs that have landed (a read does not pass posted writes).
  std::uint32_t rb_pi_visible(const Pipe& p) const;
  // Host memory through the link; returns when the data arrived (reads) or left (writes).
  pcie::Ps link_read(std::uint64_t iova, std::uint8_t* dst, std::uint64_t len, pcie::Ps at,
                     bool burst, bool& ok, TlpFaults* faults = nullptr);
  pcie::Ps link_write(std::uint64_t iova, const std::uint8_t* src, std::uint64_t len, pcie::Ps at,
                      bool burst, bool ordered, pcie::Ps* arrival, bool& ok, TlpFaults* faults = nullptr);
  // Injected faults of an H2D's read requests in burst fidelity (one transaction for all).
  void burst_read_faults(std::uint64_t iova, std::uint64_t bytes, pcie::Ps t, CbResult& r, TlpFaults& f);
  pcie::Ps memory_access(bool write, std::uint64_t phys, std::uint8_t* data, std::uint64_t len,
                         pcie::Ps at, const void* command = nullptr);
  void reset();
  Pipe& pipe_at(std::uint64_t offset, std::uint64_t& reg);
  const Pipe* pipe_at(std::uint64_t offset, std::uint64_t& reg) const;

  const SimConfig& config_;
  refdev::Iommu& iommu_;
  RootComplex& rc_;
  ProtocolChecker& checker_;
  DebugHooks hooks_;
  FaultInjector faults_;
  Misbehaviour misbehave_;
  std::uint64_t stopped_epoch_ = 0;  // misbehave stop_answering in epoch stopped_epoch_ - 1
  pcie::Ps completion_timeout_ps_;
  // Self-reset (fatal) state: from fatal_at_ps_ the device is resetting; once every pipeline has
  // written its Abend RBs (aborting_ empty) and they have landed (fatal_visible_ps_), STATUS
  // reads FATAL. Only CONTROL.RESET clears it.
  bool fatal_ = false;
  pcie::Ps fatal_at_ps_ = 0;
  pcie::Ps fatal_visible_ps_ = 0;
  std::uint32_t aborting_ = 0;      // pipelines (bits) still to write their Abend RBs
  std::uint32_t fatal_detail_ = 0;  // tag of the CB at which the device reset
  std::uint64_t abort_seq_ = 0;     // self-resets so far: a change stops every pipeline's batch
  std::array<Pipe, hw::kNumPipelines> pipes_;
  sc_core::sc_event retired_;  // any pipeline retired a CB (barrier waiters)
  pcie::TagPool tags_;
  pcie::Serializer dma_engine_;  // the device's own data-path limit (dma_engine_gbps)
  pcie::PsPerByte dma_engine_rate_;
  bool dma_engine_limited_ = false;
  std::uint32_t control_ = 0;
  std::uint64_t doorbell_seq_ = 0;
  std::uint64_t epoch_ = 0;
  pcie::Ps cb_overhead_ps_;
  pcie::Ps quantum_ps_;
  ControllerCounters counters_;
  struct Observed {
    LatencyHistogram* cb_latency = nullptr;
    Gauge* occupancy = nullptr;
    int track = 0;
  };
  std::array<Observed, hw::kNumPipelines> observed_{};
  TraceWriter* trace_ = nullptr;
  int trace_pid_ = 0;
  std::uint64_t start_ps_base_ = 0;
};

}  // namespace spyre_dma::model
