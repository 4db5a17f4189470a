// The host side of the links: the root complex as completer of the devices' requests, and the host
// memory behind the IOMMU. Every device is a requester with an IOMMU domain, MSI-X target and
// reset epoch of its own; they share host memory's bandwidth, with the CPU's staging copies.
// Reads are answered from host memory through the IOMMU (an unmapped IOVA is an Unsupported
// Request completion, never a touch of other memory); posted writes land in host memory. Writes
// the host must observe in simulated-time order (RBs, MSI-X) take effect at their arrival time,
// through a time-ordered queue, so that a host reading memory between two simulation slices never
// sees an RB "from the future".
//
// Reads and writes at once (docs/model-pcie.md, "Traffic in both directions"): a posted write is
// taken out of the receive buffer (its credits start back) once it has crossed its root port and,
// with host.memory_write_gbps, once host memory has taken it; a read request is served only after
// the posted writes its device sent before it are in (PCIe ordering, pcie/posted_order.hpp), and
// its completion data crosses the root port too. A root port carries both directions' data
// together, host.root_port_ratio times its link's raw rate; host memory serves the reads (the
// devices' and the staging copies') and the writes. Both serve reads and writes in turn
// (pcie::FairShare).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/multi_passthrough_target_socket.h>

#include "host/iotlb.hpp"
#include "pcie/fair_share.hpp"
#include "pcie/posted_order.hpp"
#include "pcie/timing.hpp"
#include "spyre_dma/model/sim_config.hpp"
#include "spyre_dma/device_core/iommu.hpp"

namespace spyre_dma::model {

class Stats;

class RootComplex : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(RootComplex);
  // Every root port's link binds here (a device's own, or a switch's uplink).
  tlm_utils::multi_passthrough_target_socket<RootComplex> socket;

  // One device as the root complex sees it (its requests carry its id).
  class Requester {
   public:
    std::uint16_t id() const noexcept { return id_; }
    std::uint64_t epoch() const noexcept { return epoch_; }
    void bump_epoch() noexcept { ++epoch_; }  // a device reset: its pending ordered writes are dropped
    device_core::Iommu& iommu() noexcept { return iommu_; }
    std::uint64_t read_requests() const noexcept { return read_requests_; }
    std::uint64_t write_requests() const noexcept { return write_requests_; }
    std::uint64_t iommu_faults() const noexcept { return iommu_faults_; }
    // Read requests that waited for a posted write of this device to be in, and how long.
    std::uint64_t read_holds() const noexcept { return read_holds_; }
    pcie::Ps read_hold_ps() const noexcept { return read_hold_ps_; }
    const Iotlb& iotlb() const noexcept { return iotlb_; }

   private:
    friend class RootComplex;
    Requester(std::uint16_t id, device_core::Iommu& iommu, std::function<void(std::uint32_t)> on_interrupt,
              Iotlb iotlb)
        : id_(id), iommu_(iommu), on_interrupt_(std::move(on_interrupt)), iotlb_(std::move(iotlb)) {}
    std::uint16_t id_;
    device_core::Iommu& iommu_;
    std::function<void(std::uint32_t)> on_interrupt_;
    Iotlb iotlb_;
    std::uint64_t epoch_ = 0;
    std::uint64_t read_requests_ = 0, write_requests_ = 0, iommu_faults_ = 0;
    std::uint64_t read_holds_ = 0;
    pcie::Ps read_hold_ps_ = 0;
    pcie::PostedOrder posted_;  // its posted writes: when each arrived, and when it was in
    device_core::Iommu::Window held_;  // the mapping its data TLPs went through, until release_windows()
  };

  RootComplex(sc_core::sc_module_name name, const SimConfig& config);

  // A device behind this root complex, with its IOMMU domain; on_interrupt(vector) runs at the
  // simulated instant one of its MSI-X messages takes effect. The reference stays valid.
  Requester& attach(device_core::Iommu& iommu, std::function<void(std::uint32_t)> on_interrupt);
  // The root port the next link bound to `socket` is on, and that link's parameters (its raw rate
  // sets the port's, host.root_port_ratio). Call once per binding, in binding order.
  void add_port(const pcie::LinkParams& link);

  // The CPU copied `bytes` between user memory and a staging buffer, from `start` at
  // HostCostConfig::staging_gbps: the copy reads and writes host memory, in step with its progress,
  // so it takes host memory time from the devices' reads. Returns when the copy is done.
  pcie::Ps staging_copy(pcie::Ps start, std::uint64_t bytes);

  // Closes the IOMMU window each device's data TLPs kept open (see reach()). It runs by itself in
  // the delta cycle after the TLP that opened one, so a window never outlives the instant of
  // simulated time it was used at; whoever stops the simulation calls it as well, since a pause
  // can fall in between, and the host may unmap while the simulation waits.
  void release_windows();

  // Host memory time booked so far (DMA reads, staging copies and, with host.memory_write_gbps,
  // posted writes), in ps.
  pcie::Ps memory_busy_ps() const noexcept { return memory_.busy_ps(); }
  // Each root port's time booked so far (with host.root_port_ratio), in ps, by port.
  std::vector<pcie::Ps> port_busy_ps() const;

 private:
  struct Pending {
    std::uint64_t iova;
    std::vector<std::uint8_t> bytes;
    bool msi;
    std::uint32_t vector;
    std::uint64_t epoch;
    Requester* requester;
  };
  void b_transport(int port, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
  void deliver();  // SC_METHOD: applies the ordered writes that are due
  // The host address of a data TLP's [iova, iova + len) through r's IOMMU, or nullptr on a fault.
  // The mapping stays pinned in r's window until release_windows(), so a run of TLPs through one
  // mapping pins it once.
  std::uint8_t* reach(Requester& r, std::uint64_t iova, std::size_t len, bool device_writes);
  bool write_host(Requester& r, std::uint64_t iova, const std::uint8_t* data, std::size_t len);
  bool write_ordered(Requester& r, std::uint64_t iova, const std::uint8_t* data, std::size_t len);
  // When a transaction of [iova, iova + len) arriving at `at` is translated, through r's IOTLB.
  // A run of TLPs (burst fidelity) walks while its data moves: it waits for its first page only.
  pcie::Ps translated(Requester& r, std::uint64_t iova, std::uint64_t len, pcie::Ps at, bool run);
  // When `len` bytes that reach root port `port` at `at` are through it (host.root_port_ratio;
  // `at` itself when ports are not limited); `run`: a burst's run of TLPs, which comes at its
  // link's pace.
  pcie::FairShare::Pass through_port(int port, pcie::FairShare::Class c, std::uint64_t len, pcie::Ps at, bool run);
  pcie::Ps port_alone_ps(int port, std::uint64_t len) const;  // 0: ports not limited
  // When a posted write of `len` bytes that arrived at `arrival` and was translated at `landed`
  // has been taken in: through its port and, with host.memory_write_gbps, into host memory.
  pcie::Ps take_in(int port, std::uint64_t len, pcie::Ps arrival, pcie::Ps landed, bool run);
  void prune(pcie::Ps now);

  std::deque<Requester> requesters_;  // stable references
  pcie::Ps service_ps_;      // completer processing + memory latency per read request
  pcie::Ps interrupt_ps_;    // MSI-X write until the host's wait returns
  // Host memory bandwidth seen by DMA. Its history holds every device's reads a whole CB ahead
  // (the data paths book a CB's requests at once): with the default history a device's run would
  // push the floor past the instant another device asks for memory, and hold that one back.
  pcie::FairShare memory_;
  bool writes_take_memory_;
  // Each root port's share of the fabric (host.root_port_ratio), with the same long history.
  struct Port {
    pcie::FairShare fabric;  // its share of the fabric, reads and writes at one rate
    pcie::PsPerByte link;    // its link's TLP rate: a burst's run comes at this pace
  };
  static constexpr std::uint64_t kPortPiece = 16u << 10;
  std::deque<Port> ports_;
  double port_ratio_;
  double staging_gbps_;
  std::uint32_t iotlb_entries_;
  std::uint64_t iotlb_page_;
  pcie::Ps iotlb_miss_ps_;
  std::multimap<pcie::Ps, Pending> pending_;  // equal times keep arrival order
  sc_core::sc_event due_;
  sc_core::sc_event windows_due_;  // release_windows() in the next delta cycle
  bool windows_open_ = false;
  std::uint64_t read_requests_ = 0;
};

}  // namespace spyre_dma::model
