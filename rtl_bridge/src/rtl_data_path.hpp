// The verilated data path (rtl/spyre_dma_core.sv) inside the SystemC model: one SystemC process
// clocks it (no SystemC ports: the model is --cc and driven by plain C++), and transactors turn
// its streams into the model's TLM transactions: requests (MRd, MWr) into b_transport calls on
// the PCIe link, the link's read data into completion beats, device-memory ports into calls on
// DeviceMemory, ATS requests into IOMMU look-ups. A StreamChecker watches every stream on every
// cycle.
//
// Timing: the clock runs ahead of SystemC time (temporal decoupling, like the SystemC
// controller's pipelines) and skips the cycles in which nothing is in flight, jumping to the
// next CB. Each TLP is booked on the link at the cycle the RTL hands it over; a completion's
// beats are presented so that its last beat comes no earlier than the link delivered it.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>

#include <systemc>
#include <tlm>

#include "pcie/timing.hpp"
#include "spyre_dma/hw/contract.hpp"
#include "spyre_dma/model/sim_config.hpp"
#include "stream_checker.hpp"

namespace spyre_dma::refdev {
class Iommu;
}
namespace spyre_dma::model {
class ProtocolChecker;
class RootComplex;
}

namespace spyre_dma::rtl {

namespace pcie = model::pcie;
using Transport = std::function<void(tlm::tlm_generic_payload&, sc_core::sc_time&)>;

// What the RTL answered for one CB.
struct RtlResponse {
  std::uint32_t tag = 0;
  hw::RbStatus status = hw::RbStatus::kGood;
  hw::ErrorKind error = hw::ErrorKind::kNone;
  hw::CbField field = hw::CbField::kNone;
  std::uint64_t detail = 0;
  std::uint64_t bytes = 0;
  pcie::Ps rb_ps = 0;    // the cycle the RTL handed the RB over
  pcie::Ps sent_ps = 0;  // DMAO: when the CB's last MWr left the wire (the RB queues behind it)
  pcie::Ps landed_ps = 0;  // DMAO: when the last MWr reached the host
};

// Switches of the bridge that tests use to break a transactor on purpose (the checker must fire).
struct RtlTestHooks {
  bool stall_device_writes = false;  // dw_ready low every other cycle
  bool glitch_stalled_completions = false;  // change a stalled completion's offset
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

class RtlDataPath {
 public:
  static constexpr pcie::Ps kClockPs = 1000;        // 1 GHz
  static constexpr unsigned kDataBytes = 128;       // rtl parameter DATA_BYTES
  static constexpr unsigned kTags = 256;            // rtl parameter TAGS
  static constexpr unsigned kMaxPayload = 4096;     // rtl parameter MAX_PAYLOAD

  // `link` and `memory` are the controller's sockets; `wave` (empty: none) a VCD file.
  RtlDataPath(const model::SimConfig& config, refdev::Iommu& iommu, model::RootComplex& root_complex,
              model::ProtocolChecker& link_checker, Transport link, Transport memory, const std::string& wave);
  ~RtlDataPath();
  RtlDataPath(const RtlDataPath&) = delete;
  RtlDataPath& operator=(const RtlDataPath&) = delete;

  // The SystemC process that clocks the RTL (spawned by the owner during elaboration).
  void clock_thread();

  // A CB of `pipe` (DMAI or DMAO) enters the data path no earlier than `at`; its response comes
  // back through take() once response_event(pipe) fired.
  void submit(hw::Pipeline pipe, const std::uint8_t* raw, pcie::Ps at);
  bool take(hw::Pipeline pipe, RtlResponse& out);
  sc_core::sc_event& response_event(hw::Pipeline pipe) { return responses_[index(pipe)].ready; }

  const RtlCounters& counters() const noexcept { return counters_; }
  const StreamChecker& checker() const noexcept { return checker_; }

 private:
  struct Impl;
  static unsigned index(hw::Pipeline p) { return p == hw::Pipeline::kDmai ? 0 : 1; }
  struct Responses {
    std::deque<RtlResponse> queue;
    sc_core::sc_event ready;
  };

  std::unique_ptr<Impl> impl_;
  std::array<Responses, 2> responses_;
  RtlCounters counters_;
  StreamChecker checker_;
};

}  // namespace spyre_dma::rtl
