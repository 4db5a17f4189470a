// The host side of the link: the root complex as completer of the device's requests, and the host
// memory behind the IOMMU. Reads are answered from host memory through the IOMMU (an unmapped
// IOVA is an Unsupported Request completion, never a touch of other memory); posted writes land in
// host memory. Writes the host must observe in simulated-time order (RBs, MSI-X) take effect at
// their arrival time, through a time-ordered queue, so that a host reading memory between two
// simulation slices never sees an RB "from the future".
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_target_socket.h>

#include "pcie/timing.hpp"
#include "spyre_dma/model/sim_config.hpp"
#include "spyre_dma/device_core/iommu.hpp"

namespace spyre_dma::model {

class Stats;

class RootComplex : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(RootComplex);
  tlm_utils::simple_target_socket<RootComplex> socket;

  // on_interrupt(vector) runs at the simulated instant an MSI-X message takes effect.
  RootComplex(sc_core::sc_module_name name, const SimConfig& config, device_core::Iommu& iommu,
              std::function<void(std::uint32_t)> on_interrupt);

  std::uint64_t epoch() const noexcept { return epoch_; }
  void bump_epoch() noexcept { ++epoch_; }  // a device reset: pending ordered writes are dropped
  std::uint64_t read_requests() const noexcept { return read_requests_; }
  std::uint64_t write_requests() const noexcept { return write_requests_; }
  std::uint64_t iommu_faults() const noexcept { return iommu_faults_; }

 private:
  struct Pending {
    std::uint64_t iova;
    std::vector<std::uint8_t> bytes;
    bool msi;
    std::uint32_t vector;
    std::uint64_t epoch;
  };
  void b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
  void deliver();  // SC_METHOD: applies the ordered writes that are due
  bool write_host(std::uint64_t iova, const std::uint8_t* data, std::size_t len);
  bool write_ordered(std::uint64_t iova, const std::uint8_t* data, std::size_t len);

  device_core::Iommu& iommu_;
  std::function<void(std::uint32_t)> on_interrupt_;
  pcie::Ps service_ps_;      // completer processing + memory latency per read request
  pcie::Ps interrupt_ps_;    // MSI-X write until the host's wait returns
  pcie::Serializer memory_;  // host memory bandwidth seen by DMA
  pcie::PsPerByte memory_rate_;
  std::multimap<pcie::Ps, Pending> pending_;  // equal times keep arrival order
  sc_core::sc_event due_;
  std::uint64_t epoch_ = 0;
  std::uint64_t read_requests_ = 0, write_requests_ = 0, iommu_faults_ = 0;
};

}  // namespace spyre_dma::model
