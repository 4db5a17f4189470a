// The device's DMA controller: one front end with a pluggable data path. The front end holds the
// BAR0 register file and applies the contract through the device core (register access, ring
// rules, doorbell order and barrier rule, CB admission, misbehaviour); it fetches and prefetches
// CBs, orders them across pipelines, runs the COMPUTE pipeline, writes RBs and MSI-X messages,
// resets, and injects the CB- and RB-level faults of FaultConfig. The bytes of each DMAI or DMAO
// CB are moved by the data path the configuration names (spyre_dma/model/data_path.hpp).
//
// Each pipeline is an SC_THREAD that runs ahead of simulated time (temporal decoupling) and books
// shared resources (link serializers, tags, DRAM) at the times it computes; it synchronises only
// when it has to wait for something the host does (a doorbell, RB ring space) or another pipeline
// (a barrier). Host-visible effects (RBs, interrupts) take effect at their own times through the
// root complex, so running ahead never shows the host anything early.
//
// Split by role: controller.cpp (construction, observation, counters), controller_registers.cpp
// (BAR0 hooks and reset), controller_pipeline.cpp (fetch, dispatch, retirement), rb_writer.cpp
// (RBs, misbehaviour, self-reset aborts), barrier.cpp (the barrier's wait in simulated time).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include "device/ports.hpp"
#include "spyre_dma/model/fault_injector.hpp"
#include "fault/misbehaviour.hpp"
#include "base/debug_hooks.hpp"
#include "spyre_dma/device_core/doorbell_order.hpp"
#include "spyre_dma/device_core/register_file.hpp"
#include "spyre_dma/device_core/rings.hpp"
#include "spyre_dma/hw/contract.hpp"
#include "spyre_dma/model/data_path.hpp"
#include "spyre_dma/model/sim_config.hpp"

namespace spyre_dma::model {

class ProtocolChecker;
class StatsRegistry;
class TraceWriter;
class StateProbe;
class LatencyHistogram;
class Gauge;

struct PipelineCounters {
  std::uint64_t cbs = 0;
  std::uint64_t error_rbs = 0;
  std::uint64_t bytes = 0;
  std::uint64_t barrier_waits = 0;
  Ps barrier_wait_ps = 0;
  std::uint64_t rb_ring_stalls = 0;
  std::uint64_t fetches = 0;
  Ps busy_ps = 0;  // sum over CBs of (end - start)
};

struct ControllerCounters {
  std::array<PipelineCounters, hw::kNumPipelines> pipe{};
  std::uint64_t tag_stalls = 0;  // read requests that waited for a free tag
  Ps tag_stall_ps = 0;
  std::uint64_t read_requests = 0;
  std::uint64_t write_tlps = 0;
  std::uint64_t interrupts = 0;
  std::uint64_t resets = 0;
};

using device_core::Reg;

class Controller : public sc_core::sc_module, private device_core::RegisterHooks {
 public:
  tlm_utils::simple_initiator_socket<Controller> pcie;    // to the link (device is master)
  tlm_utils::simple_initiator_socket<Controller> memory;  // to device memory

  // `checker` (the link's) also checks that RBs follow their data. Throws std::invalid_argument
  // for a data path this program does not have, or a configuration it cannot run.
  // `requester`: this device at the root complex (its IOMMU domain and reset epoch).
  Controller(sc_core::sc_module_name name, const SimConfig& config, RootComplex::Requester& requester,
             ProtocolChecker& checker);
  ~Controller() override;

  // BAR0 through the device core's access routine. Writes take effect at the current simulated
  // time (the device's caller schedules them).
  std::uint64_t read_register(std::uint64_t offset, unsigned width) { return regs_.read(offset, width, *this); }
  void write_register(std::uint64_t offset, std::uint64_t value, unsigned width) {
    regs_.write(offset, value, width, *this);
  }

  // The front end's counts with the data path's.
  ControllerCounters counters() const;
  const FaultInjector& faults() const noexcept { return faults_; }
  // The pipelines (bits 1 << hw::Pipeline) whose IRQ_VECTOR is `vector`: who an MSI-X message of
  // that vector speaks for.
  std::uint32_t pipelines_of_vector(std::uint32_t vector) const noexcept;
  // Arms a misbehaviour now (a test control; FaultConfig::misbehave arms one at the start).
  void arm_misbehave(const device_core::Misbehave& m) noexcept { misbehave_.arm(m); }
  const DataPath& data_path() const noexcept { return *data_path_; }
  // Latency histograms and queue occupancy into `stats`; one span per CB into `trace` (optional),
  // on tracks of a process named `label`; each pipeline's CBs queued (rung and not yet retired)
  // and the read tags in flight as levels of `probe` (optional) in `scope` (the tags in the trace
  // with its TLPs only: SimConfig::trace_tlps).
  void observe(StatsRegistry& stats, TraceWriter* trace, const std::string& label = "device",
               StateProbe* probe = nullptr, const std::string& scope = {});
  int trace_pid() const noexcept { return trace_pid_; }  // the trace's process of this device

 private:
  // A fetched CB as the pipeline carries it to its RB.
  struct Retirement {
    hw::ResponseBlock rb;
    Ps start = 0;
    CbExecution run;
    bool interrupt = false;  // the CB's INTERRUPT bit: signal after its RB whatever IRQ_ENABLE says
    bool misbehave = false;
    bool faulted = false;
  };

  struct PipelineState {
    hw::Pipeline id = hw::Pipeline::kDmai;
    std::uint32_t retired = 0;       // CBs retired (free-running, like the indices)
    std::deque<Ps> retire_ps;        // retire time of CB (retired - retire_ps.size() + i)
    // When each RB written lands (the newest ones): RB_PI counts RBs, not retired CBs, and the
    // two differ for a misbehaving device (two RBs for one CB, or none).
    std::deque<Ps> rb_landed_ps;
    Ps last_retire_ps = 0;
    Ps local_ps = 0;                 // how far this pipeline has scheduled itself
    Ps next_fetch_ps = 0;
    sc_core::sc_event kick;          // doorbell, enable, RB space, reset
    bool in_batch = false;           // holds fetched CBs it has not retired
    // CBs the data path still holds (`pending`), or answered CBs behind them, in CB order; they
    // may outlive their batch. Stopped by the epoch and self-reset count they were fetched in.
    std::deque<Retirement> draining;
    std::uint64_t draining_epoch = 0, draining_aborts = 0;
    std::uint32_t last_tag = 0;      // of the last CB answered (misbehave stale_tag)
    // misbehave rb_pi_beyond_ring / cb_ci_backwards broke the indices in epoch broken_epoch - 1:
    // the pipeline fetches nothing more until a reset moves the epoch on.
    std::uint64_t broken_epoch = 0;
  };
  // RegisterHooks (controller_registers.cpp).
  std::uint64_t clock_ns() override;
  Condition condition() override;
  std::uint64_t visible(Reg r, hw::Pipeline p, std::uint64_t stored) override;
  void reset() override;
  void doorbell(hw::Pipeline p, std::uint32_t new_pi) override;
  void stored(Reg r, hw::Pipeline p) override;
  bool frozen() override { return stopped_answering(); }

  // Registers as the pipelines read them.
  std::uint32_t index(Reg r, const PipelineState& p) const noexcept {
    return static_cast<std::uint32_t>(regs_.get(r, p.id));
  }
  void set_index(Reg r, const PipelineState& p, std::uint32_t v) noexcept { regs_.set(r, p.id, v); }
  std::uint32_t depth(const PipelineState& p) const noexcept { return config_.device.depth[static_cast<unsigned>(p.id)]; }
  void queue_fault(const PipelineState& p) noexcept { regs_.set(Reg::kErrorStatus, p.id, device_core::kQueueFaultStatus); }

  // The pipelines (controller_pipeline.cpp).
  void pipeline_thread(unsigned index);
  bool fetchable(const PipelineState& p) const;
  void sync_to(Ps local);
  CbExecution execute(PipelineState& p, const std::uint8_t* raw, Ps start);
  // Writes the CB's RB(s) and books its retirement; false when the pipeline stops here.
  bool retire(PipelineState& p, Retirement& r, const std::function<bool()>& stopped);
  // Retires the draining CBs in order: every one (waiting for the data path's answers), or
  // (`answered_only`) those whose answers are in. False when the pipeline stops meanwhile.
  bool retire_draining(PipelineState& p, bool answered_only);
  // The pipeline stopped: takes the data path's answers for its draining CBs and, after a
  // self-reset, answers them with Abend RBs (before the rest of their batch).
  void abort_draining(PipelineState& p);
  // Books a retirement; `observed`: into the latency histogram, occupancy, trace, bytes and busy
  // time too (an Abend RB of a self-reset is counted, not observed). `rb_written`: false for a CB
  // whose RB was never written (the trace shows no RB for it).
  void count_retired(PipelineState& p, const Retirement& r, Ps arrival, bool observed = true, bool rb_written = true);

  // Barriers (barrier.cpp).
  Ps wait_barrier(PipelineState& p, std::uint32_t index, Ps start);
  Ps retire_time(const PipelineState& q, std::uint32_t bound) const;

  // RBs (rb_writer.cpp): the RB, then the pipeline's MSI-X message when IRQ_ENABLE or the CB's
  // `interrupt` bit asks for one. `garbage_status`: STATUS goes out as kGarbageRbStatus.
  bool write_rb(PipelineState& p, const hw::ResponseBlock& rb, Ps at, Ps& arrival, bool interrupt,
                bool garbage_status = false);
  // Waits for room in p's RB ring; false when `stopped()` meanwhile.
  bool wait_rb_room(PipelineState& p, Ps at, const std::function<bool()>& stopped);
  // The CB's RB as the misbehave kind says (or none: `wrote` false); false when the pipeline
  // stops here.
  bool misbehave_rb(PipelineState& p, const hw::ResponseBlock& rb, Ps at, Ps& arrival, bool interrupt,
                    const std::function<bool()>& stopped, bool& wrote);
  bool broken(const PipelineState& p) const noexcept { return p.broken_epoch == epoch_ + 1; }
  bool stopped_answering() const noexcept { return stopped_epoch_ == epoch_ + 1; }
  // The device resets itself at `at` (an injected fault): every pipeline abandons what it fetched.
  void self_reset(Ps at, std::uint32_t tag);
  // Abend RBs (kind reset) for the CBs [from, n) of a pipeline's batch, in ring order.
  void abort_batch(PipelineState& p, const std::uint8_t* batch, std::uint32_t from, std::uint32_t n, std::uint64_t epoch);
  // The pipeline has written the Abend RBs of a self-reset in `epoch` (STATUS may read FATAL).
  void aborted(const PipelineState& p, std::uint64_t epoch);
  // One Abend RB; false when the host reset the device meanwhile (no RB any more).
  bool abend(PipelineState& p, const device_core::CbControl& cb, std::uint64_t epoch);
  // RB_PI as the host may see it now: RBs that have landed (a read does not pass posted writes).
  std::uint32_t rb_pi_visible(const PipelineState& p) const;

  const SimConfig& config_;
  device_core::Iommu& iommu_;
  RootComplex::Requester& requester_;
  HostLink host_;
  MemoryLink device_memory_;
  DebugHooks hooks_;
  bool partial_flit_rb_dropped_ = false;  // hooks_.drop_partial_flit_rb fired (it fires once)
  FaultInjector faults_;
  Misbehaviour misbehave_;
  std::unique_ptr<DataPath> data_path_;
  device_core::RegisterFile<device_core::PlainWord> regs_;
  device_core::DoorbellOrder doorbells_;
  std::uint64_t stopped_epoch_ = 0;  // misbehave stop_answering in epoch stopped_epoch_ - 1
  // Self-reset (fatal) state: from fatal_at_ps_ the device is resetting; once every pipeline has
  // written its Abend RBs (aborting_ empty) and they have landed (fatal_visible_ps_), STATUS
  // reads FATAL. Only CONTROL.RESET clears it.
  bool fatal_ = false;
  Ps fatal_at_ps_ = 0;
  Ps fatal_visible_ps_ = 0;
  std::uint32_t aborting_ = 0;   // pipelines (bits) still to write their Abend RBs
  std::uint64_t abort_seq_ = 0;  // self-resets so far: a change stops every pipeline's batch
  std::array<PipelineState, hw::kNumPipelines> pipes_;
  sc_core::sc_event retired_;  // any pipeline retired a CB (barrier waiters)
  std::uint64_t epoch_ = 0;
  Ps cb_overhead_ps_;
  Ps quantum_ps_;
  ControllerCounters counters_;  // the front end's own
  struct Observed {
    LatencyHistogram* cb_latency = nullptr;
    Gauge* occupancy = nullptr;
    // The trace: CBs of a pipeline overlap (one is issued while the last one's data still moves),
    // and a viewer nests what shares a track, so each CB goes to the first of the pipeline's slot
    // tracks that is free by its start (tid, end of its last CB). Its RB is an instant on the
    // pipeline's RB track, with a flow from the CB.
    std::vector<std::pair<int, Ps>> slots;
    int rb_track = 0;
    int queue_level = -1;  // of probe_
  };
  // The slot track of `p` for a CB over [start, end) (a new track when none is free).
  int trace_slot(PipelineState& p, Ps start, Ps end);
  std::array<Observed, hw::kNumPipelines> observed_{};
  TraceWriter* trace_ = nullptr;
  int trace_pid_ = 0;
  StateProbe* probe_ = nullptr;
};

}  // namespace spyre_dma::model
