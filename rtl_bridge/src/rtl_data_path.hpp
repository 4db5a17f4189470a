// The verilated data path (rtl/spyre_dma_core.sv) as the DMA controller's data path "rtl"
// (spyre_dma/model/data_path.hpp): the controller's front end hands it each DMAI or DMAO CB; one
// SystemC process clocks the RTL (no SystemC ports: the model is --cc and driven by plain C++), and
// transactors turn its streams into calls on the controller's ports: requests (MRd, MWr) on the
// host port, the read data into completion beats cut as the completer cuts them, device-memory
// streams on the device memory port, ATS requests into IOMMU look-ups. A StreamChecker watches
// every stream on every cycle.
//
// Timing: the clock runs ahead of SystemC time (temporal decoupling, like the front end's
// pipelines) and skips the cycles in which nothing is in flight, jumping to the next CB. Each TLP
// is booked on the link at the cycle the RTL hands it over; a completion's beats are presented so
// that its last beat comes no earlier than the link delivered it.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>

#include <systemc>

#include "spyre_dma/hw/contract.hpp"
#include "spyre_dma/model/data_path.hpp"
#include "stream_checker.hpp"

namespace spyre_dma::rtl {

using model::Ps;

// What the RTL answered for one CB.
struct RtlAnswer {
  device_core::CbOutcome outcome;
  Ps rb_ps = 0;      // the cycle the RTL handed the RB over
  Ps end_ps = 0;     // DMAI: the cycle the CB's work was done (its RB may wait for older ones)
  Ps sent_ps = 0;    // DMAO: when the CB's last MWr left the wire (the RB queues behind it)
  Ps landed_ps = 0;  // DMAO: when the last MWr reached the host
};

// Switches of the bridge that tests use to break a transactor on purpose (the checker must fire).
struct RtlTestHooks {
  bool stall_device_writes = false;         // dw_ready low every other cycle
  bool glitch_stalled_completions = false;  // change a stalled completion's offset
  Ps hold_posted_writes_until_ps = 0;       // rq_ready (posted) low before this simulated time
};
// The hooks the next RtlDataPath starts with (process-wide, like the one SystemC kernel; tests
// set them before they open a device and clear them after). Not a configuration key.
RtlTestHooks& rtl_test_hooks();

struct RtlCounters {
  std::uint64_t cycles = 0;          // clocked cycles
  std::uint64_t skipped_cycles = 0;  // idle cycles jumped over
  std::uint64_t read_requests = 0;
  std::uint64_t write_tlps = 0;
  std::uint64_t completion_beats = 0;
  std::uint64_t memory_writes = 0;
  std::uint64_t memory_reads = 0;
};

class RtlDataPath final : public model::DataPath {
 public:
  static constexpr Ps kClockPs = 1000;           // 1 GHz
  static constexpr unsigned kDataBytes = 128;    // rtl parameter DATA_BYTES
  static constexpr unsigned kTags = 256;         // rtl parameter TAGS
  static constexpr unsigned kMaxPayload = 4096;  // rtl parameter MAX_PAYLOAD

  // `wave` (empty: none) a waveform of the RTL's signals, .vcd or .fst (wave_sink.hpp). Throws std::invalid_argument for a configuration the RTL
  // cannot run (TLP-level fault injection, burst fidelity, more read tags or a larger payload than
  // its tables, the SystemC data path's own rate limit), model::WaveError for a wave file it cannot
  // write.
  RtlDataPath(const model::DataPathContext& context, const std::string& wave);
  ~RtlDataPath() override;
  RtlDataPath(const RtlDataPath&) = delete;
  RtlDataPath& operator=(const RtlDataPath&) = delete;

  // Every CB is `pending`: execute() returns when the RTL is ready for the pipeline's next CB.
  model::CbExecution execute(hw::Pipeline pipeline, const hw::ControlBlock& cb, const std::uint8_t* raw,
                             Ps start) override;
  bool answered(hw::Pipeline pipeline) const override;
  model::CbExecution collect(hw::Pipeline pipeline) override;
  // CB fetches use tags above the RTL's table: one per pipeline, never two in flight.
  model::FetchTag fetch_tag(hw::Pipeline pipeline, Ps at) override;
  void fetch_done(hw::Pipeline pipeline, const model::FetchTag& tag, Ps at) override;
  model::DataPathCounters counters() const override;
  void add_statistics(nlohmann::json& statistics) const override;  // "rtl": cycles, checker

  const RtlCounters& rtl_counters() const noexcept { return counters_; }
  const StreamChecker& checker() const noexcept { return checker_; }

 private:
  struct Impl;
  static unsigned index(hw::Pipeline p) { return p == hw::Pipeline::kDmai ? 0 : 1; }
  struct Answers {
    std::deque<RtlAnswer> queue;
    sc_core::sc_event ready;
  };
  // The cycles at which the RTL was ready again after taking each CB (the pipeline's issue end).
  struct Taken {
    std::deque<Ps> queue;
    sc_core::sc_event ready;
  };

  void clock_thread();  // rtl_clock.cpp: the SystemC process that clocks the RTL

  model::HostPort& host_;
  std::function<void(hw::Pipeline)> on_answer_;
  std::unique_ptr<Impl> impl_;
  std::array<Answers, 2> answers_;
  std::array<Taken, 2> taken_;
  RtlCounters counters_;
  StreamChecker checker_;
};

}  // namespace spyre_dma::rtl
