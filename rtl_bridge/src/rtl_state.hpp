// The state of the RTL data path's transactors, shared by its adapter (rtl_data_path.cpp) and
// its clock (rtl_clock.cpp). Verilator's headers come before SystemC's: the model is plain C++
// (--cc), and verilated.h would otherwise take SystemC's clock for its own.
#pragma once

#include <verilated.h>
#include <verilated_vcd_c.h>

#include "Vspyre_dma_core.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "rtl_data_path.hpp"
#include "wave_sink.hpp"
#include "spyre_dma/model/fault_injector.hpp"

namespace spyre_dma::rtl {

struct RtlDataPath::Impl {
  // A read request in flight: its data as the link returned it, cut into CplD TLPs.
  struct Read {
    std::vector<std::uint8_t> data;
    std::vector<model::AddressRange> cplds;  // offsets within the request
    bool error = false;                // UR or CA: one beat, no data
    std::size_t poisoned_cpl = SIZE_MAX;  // the CplD that arrives poisoned (EP), if any
    std::size_t cpl = 0;               // next CplD to present
    std::uint32_t beat = 0;            // next beat within it
  };
  // A device-memory read piece (DMAO), returned in request order.
  struct Piece {
    std::vector<std::uint8_t> data;
    Ps ready_ps = 0;
    std::uint32_t beat = 0;
  };
  // A fill or device copy the memory controller carries out burst by burst, each booked at the
  // cycle the last one's bus time ended, so traffic arriving meanwhile interleaves with it.
  struct Command {
    bool copy = false;
    std::uint64_t dst = 0, src = 0, len = 0, done_bytes = 0;
    std::uint32_t pattern = 0;
    bool backward = false;  // an overlapping copy to a higher address runs from its end
    Ps next_ps = 0;         // the next burst's earliest cycle
    Ps done_ps = 0;         // when the last booked burst is done
  };
  struct PendingCb {
    std::array<std::uint8_t, hw::kCbBytes> raw;
    Ps at_ps;
    // The model's armed fault (faults.at_cb) was waiting when the front end started this CB: its
    // first TLP (or its IOMMU check) may take it, as on the SystemC data path. A CB started
    // earlier may not, even when the RTL issues its TLPs after the fault was armed.
    bool armed = false;
  };

  const model::SimConfig& config;
  device_core::Iommu& iommu;
  model::FaultInjector& faults;
  Ps completion_timeout_ps;  // a dropped completion's tag is free again after this
  model::HostPort& host;
  model::DeviceMemoryPort& memory;
  RtlTestHooks hooks;
  Ps dram_latency_ps;  // of each device-memory access (a command's bursts follow its bus time)
  VerilatedContext context;
  std::unique_ptr<Vspyre_dma_core> core;
  std::unique_ptr<WaveSink> wave;  // where the VCD stream goes (before vcd: it outlives it)
  std::unique_ptr<VerilatedVcdC> vcd;
  sc_core::sc_event work;
  Ps t = 0;            // the clock's own time: the edge of the cycle being evaluated
  std::uint64_t cycle = 0;

  std::array<std::deque<PendingCb>, 2> cbs;
  std::array<bool, 2> taken{false, false};  // a CB was taken; the pipeline waits for cb_ready again
  // Of the CB each pipeline took last (the RTL issues a CB's ATS request and TLPs before it takes
  // the next): whether it may take the armed fault, and whether its first TLP has gone.
  std::array<bool, 2> taken_armed{false, false};
  std::array<bool, 2> first_tlp_sent{true, true};
  std::array<int, 2> ats_answer{-1, -1};  // -1: none due; else ok (1) or refused (0) this cycle
  std::array<Read, RtlDataPath::kTags> reads;
  std::multimap<std::pair<Ps, std::uint64_t>, unsigned> ready_reads;  // (ready, order) -> tag
  std::uint64_t read_order = 0;
  int current_read = -1;  // tag whose beats are being presented
  Ps rq_free_ps = 0;      // the upstream wire is busy with an MWr until then
  // MWr being assembled.
  std::vector<std::uint8_t> mwr;
  std::uint64_t mwr_addr = 0;
  std::uint32_t mwr_len = 0;
  Ps mwr_sop_ps = 0;
  bool mwr_may_take_armed = false;  // it is the first TLP of a CB that may take the armed fault
  Ps dmao_sent_ps = 0, dmao_landed_ps = 0;
  // Device memory.
  std::vector<std::uint8_t> burst;
  std::uint64_t burst_addr = 0;
  std::deque<Ps> write_acks;  // in burst order (the RTL counts them in order)
  std::multiset<Ps> command_acks;
  std::optional<Command> command;
  std::deque<Piece> pieces;
  std::uint64_t glitch = 0;

  Impl(const model::DataPathContext& c, RtlTestHooks h)
      : config(c.config), iommu(c.iommu), faults(c.faults),
        completion_timeout_ps(static_cast<Ps>(std::llround(c.config.faults.completion_timeout_ns * 1000.0))),
        host(c.host), memory(c.memory), hooks(h),
        dram_latency_ps(static_cast<Ps>(std::llround(c.config.device.dram_latency_ns * 1000.0))),
        core(std::make_unique<Vspyre_dma_core>(&context, "spyre_dma_core")) {}

  // The faults of one read request (rtl_clock.cpp), by the fault injector's one rule for them
  // (FaultInjector::read_faults), with its poisoned CplD in r.poisoned_cpl. Clears r.error.
  model::TlpFaults read_faults(Read& r);
  // Whether the TLP about to go on `pipe` (0 DMAI, 1 DMAO) may take the armed fault: the first
  // of a CB started while it was armed.
  bool first_tlp_may_take_armed(unsigned pipe) {
    const bool first = !first_tlp_sent[pipe];
    first_tlp_sent[pipe] = true;
    return first && taken_armed[pipe];
  }

  bool quiet() const {
    return core->idle && current_read < 0 && ready_reads.empty() && pieces.empty() && write_acks.empty() &&
           command_acks.empty() && ats_answer[0] < 0 && ats_answer[1] < 0 && mwr.empty() && burst.empty() &&
           !taken[0] && !taken[1] && !command && !cb_due();
  }
  bool cb_due() const {
    for (const auto& q : cbs) {
      if (!q.empty() && q.front().at_ps <= t) return true;
    }
    return false;
  }
  Ps next_cb_ps() const {
    Ps next = ~Ps{0};
    for (const auto& q : cbs) {
      if (!q.empty()) next = std::min(next, q.front().at_ps);
    }
    return next;
  }
};

}  // namespace spyre_dma::rtl
