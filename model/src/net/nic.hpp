// The RDMA NIC of one node of a simulated cluster (NetworkConfig::nic): a PCIe endpoint on the
// node's fabric with a link of its own (a root port, or the first PCIe switch's downstream port
// when the server has switches), its own IOMMU domain at the root complex, a table of memory
// regions peers may reach with their keys, and one send queue whose work requests (RDMA writes
// and reads, in order, pipelined) it carries over the Network to the peer NICs.
//
// What one request costs is what it crosses: the doorbell over the NIC's link, the send pipeline
// (tx_ns), the reads of the source through the NIC's link and the root complex (none for data
// sent inline), each packet on the network's wires, the peer's receive pipeline (rx_ns) and its
// writes through its own link and root complex (or, into a device's memory, peer-to-peer through
// the PCIe switch and the device's link, no root complex), the acknowledgement back, and the
// completion entry written to host memory. Everything is booked ahead in simulated time when the
// request is taken; its completion runs at its simulated instant.
//
// A peer checks the key and the range of every access against its regions: a key it did not
// issue (or revoked), or a range outside the region, is refused (a NAK) and nothing is written.
// A request to or from a port that is down gets no answer and fails after timeout_us; so does one
// whose port (or its peer's) goes down before its acknowledgement is back (its data may have
// landed in part, as when a cable is pulled mid-transfer).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include "device/ports.hpp"
#include "host/root_complex.hpp"
#include "link/pcie_link.hpp"
#include "net/network.hpp"
#include "observe/trace_writer.hpp"
#include "spyre_dma/device_core/iommu.hpp"
#include "spyre_dma/model/sim_config.hpp"
#include "spyre_dma/status.hpp"

namespace spyre_dma::model {

class DeviceMemory;

// One hop of the peer-to-peer path between the NIC and a device: a link crossed (up or down), or
// a fixed forwarding time (a switch, the root complex).
struct PeerHop {
  PcieLink* link = nullptr;  // null: a fixed time
  bool down = false;
  pcie::Ps ps = 0;
};

class Nic : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(Nic);
  tlm_utils::simple_initiator_socket<Nic> pcie;  // to link.device_side

  struct WorkRequest {
    enum class Op : std::uint8_t { kWrite, kRead };
    Op op = Op::kWrite;
    std::uint8_t* local = nullptr;  // host memory of this node
    std::uint64_t bytes = 0;
    unsigned peer = 0;              // node
    std::uint64_t remote = 0;       // address in the peer's region
    std::uint32_t key = 0;
    std::function<void(Status)> done;  // at the completion's simulated instant (see notify)
    // A write's last byte is in the peer's memory (what a peer polling that memory sees first);
    // runs at that instant, before `done`. Not for a write the peer refused.
    std::function<void()> landed;
  };

  // `notify` takes each event's callback (a request's `done`, or `landed`) at the event's simulated
  // instant, on the simulation thread, to be run by the host side off that thread; the owner then
  // pauses the simulation so that the callback runs at that instant. `beyond_ps`: the unloaded
  // round trip of the switches between the NIC's link and the root complex (as DeviceModel).
  Nic(sc_core::sc_module_name name, const SimConfig& config, unsigned node, Network& network,
      RootComplex& root_complex, pcie::Ps beyond_ps, std::function<void(std::function<void()>)> notify);
  ~Nic() override;

  // The other NICs of the cluster, by node (this one included), once all are built.
  void connect(std::vector<Nic*> nics) { nics_ = std::move(nics); }
  // A device of this node the NIC reaches peer-to-peer (its memory), and the hops between them.
  void add_device(DeviceMemory& memory, std::vector<PeerHop> path);

  // Memory regions peers may reach: host memory [base, base + size) of this process, mapped
  // into the NIC's IOMMU domain, or device `device`'s memory [base, base + size). Returns the key.
  std::uint32_t register_host(void* base, std::uint64_t size);
  std::uint32_t register_device(unsigned device, std::uint64_t base, std::uint64_t size);
  // False if the key is not a live region's.
  bool deregister(std::uint32_t key);

  // Queues a work request at the current simulated instant (the host's doorbell).
  void post(WorkRequest wr);
  // Each completion as an instant on a track of this NIC in `trace` (op, bytes, peer, status, and
  // the time since the request entered the send pipeline).
  void trace_completions(TraceWriter& trace);

  unsigned node() const noexcept { return node_; }
  PcieLink& link() noexcept { return link_; }
  device_core::Iommu& iommu() noexcept { return iommu_; }
  std::uint64_t completed() const noexcept { return completed_; }
  std::size_t regions() const noexcept { return regions_.size(); }

 private:
  struct Region {
    bool device = false;
    unsigned device_index = 0;
    std::uint64_t base = 0, size = 0;
    std::uint64_t iova = 0;  // host: the mapping in the NIC's domain
  };
  struct Done {
    std::function<void(Status)> done;
    Status status;
    std::uint64_t unmap_iova = 0;  // the request's local buffer, mapped for it (0: none)
    std::function<void()> landed;  // instead: a write's data in the peer's memory (WorkRequest::landed)
    unsigned peer = 0;
    pcie::Ps started = 0;          // when the request entered the send pipeline
    bool put = true;
    std::uint64_t bytes = 0;
  };
  void run();      // SC_THREAD: takes the send queue's requests in order
  void deliver();  // SC_METHOD: runs the completions that are due
  void execute(WorkRequest& wr, std::uint64_t local_iova, pcie::Ps start);
  void finish(pcie::Ps at, WorkRequest& wr, Status status, std::uint64_t local_iova, pcie::Ps started);
  // The region `key` opens, if [addr, addr + bytes) lies inside it.
  const Region* region_for(std::uint32_t key, std::uint64_t addr, std::uint64_t bytes) const;
  // This NIC's access to one of its regions, as a responder: returns when the data is there
  // (write) or has been read into `buf` (read).
  pcie::Ps write_region(const Region& r, std::uint64_t offset, const std::uint8_t* src, std::uint64_t len,
                        pcie::Ps at);
  pcie::Ps read_region(const Region& r, std::uint64_t offset, std::uint8_t* dst, std::uint64_t len, pcie::Ps at);
  pcie::Ps cross(const std::vector<PeerHop>& hops, bool towards_device, std::uint64_t addr, std::uint64_t len,
                 pcie::Ps at);
  pcie::Ps completion_entry(pcie::Ps at);  // the CQE's write into host memory: when it has landed

  SimConfig config_;  // the node's, with the NIC's link: what its HostLink sees
  unsigned node_;
  Network& network_;
  device_core::Iommu iommu_;
  RootComplex::Requester& requester_;
  PcieLink link_;
  HostLink host_;
  std::function<void(std::function<void()>)> notify_;
  std::vector<Nic*> nics_;
  struct PeerDevice {
    DeviceMemory* memory;
    std::vector<PeerHop> path;  // NIC to device
  };
  std::vector<PeerDevice> devices_;
  pcie::Ps doorbell_ps_, tx_ps_, rx_ps_, timeout_ps_;
  std::uint32_t max_inline_;
  std::map<std::uint32_t, Region> regions_;
  std::uint32_t next_key_;
  std::deque<std::pair<WorkRequest, std::uint64_t>> queue_;  // with the local buffer's IOVA
  sc_core::sc_event posted_;
  pcie::Ps pipeline_free_ = 0;  // the send pipeline takes one request at a time
  std::multimap<pcie::Ps, Done> pending_;  // equal times keep their order
  sc_core::sc_event due_;
  std::vector<std::uint8_t> packet_;     // one packet's data on its way
  std::vector<std::uint8_t> cq_;         // the completion queue in host memory (its aligned page)
  std::uint64_t cq_iova_ = 0;
  std::uint64_t completed_ = 0;
  TraceWriter* trace_ = nullptr;
  TraceTrack track_;
};

}  // namespace spyre_dma::model
