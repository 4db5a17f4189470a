// The network between the nodes of a simulated cluster (NetworkConfig): each node's NIC port, a
// cable to one switch port (or, with two nodes back to back, to the other NIC), and the switch's
// egress ports. Packets are timed on each wire they cross: a wire carries one packet at a time
// at network.gbps, each packet its payload plus the protocol's headers; the switch forwards
// cut-through (a packet leaves switch_latency_ns after its head arrived, as soon as the egress
// wire is free). An egress port's buffer is a pool of credits: a packet holds its bytes from the
// moment it leaves the sender until it has left the egress port, and a sender waits for credits
// (InfiniBand's link-level flow control; RoCE's PFC pause plays the same part), so a congested
// port holds its senders back instead of dropping packets.
//
// Like the PCIe link, it accepts bookings out of time order (each wire fills its earliest free
// gap); the same calls in the same order give the same times.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "pcie/ps.hpp"
#include "pcie/timing.hpp"
#include "spyre_dma/model/sim_config.hpp"

namespace spyre_dma::model {

class TraceWriter;

// The bytes a packet occupies on the wire beyond its payload.
struct PacketFormat {
  std::uint32_t header_bytes = 0;   // every packet: transport and link headers, CRCs, framing
  std::uint32_t request_bytes = 0;  // more on a request's first packet (RETH: address, key, length)
  std::uint32_t ack_bytes = 0;      // an acknowledgement (header and AETH)
};
// network.protocol's packet format: "infiniband" or "roce_v2" (std::invalid_argument otherwise).
PacketFormat packet_format(const std::string& protocol);

class Network {
 public:
  explicit Network(const NetworkConfig& config);

  struct Delivery {
    pcie::Ps sent_ps = 0;     // when its first byte left the sender (the sender's wire is free at + its length)
    pcie::Ps arrived_ps = 0;  // when its last byte reached the receiving NIC
  };
  // One packet of `payload` bytes (plus `extra` header bytes beyond the format's own) from node
  // `from` to node `to`, ready to leave at `ready`. Nodes are numbered from 0.
  Delivery send(unsigned from, unsigned to, std::uint64_t payload, std::uint32_t extra, pcie::Ps ready);

  const PacketFormat& format() const noexcept { return format_; }
  std::uint32_t mtu() const noexcept { return mtu_; }
  unsigned nodes() const noexcept { return nodes_; }

  // A port that is down (a pulled cable, a dead node): what it sends or should receive is lost.
  void set_port_down(unsigned node, bool down) { ports_.at(node)->down = down; }
  bool port_down(unsigned node) const { return ports_.at(node)->down; }

  // Per port: payload and wire bytes sent, time its NIC's wire was busy, credit waits.
  struct PortCounters {
    std::uint64_t packets = 0, payload_bytes = 0, wire_bytes = 0;
    std::uint64_t credit_stalls = 0;
    pcie::Ps credit_stall_ps = 0;
  };
  const PortCounters& counters(unsigned node) const { return ports_.at(node)->counters; }
  // Every packet as a span on its wires: a track per NIC's transmit wire and per switch egress port.
  void trace_packets(TraceWriter& trace);
  pcie::Ps tx_busy_ps(unsigned node) const { return ports_.at(node)->tx.busy_ps(); }

 private:
  struct Port {
    explicit Port(pcie::PsPerByte rate, std::uint32_t buffer_credits);
    pcie::WireClock tx_clock, egress_clock;
    pcie::Serializer tx;      // NIC -> switch (or the other NIC)
    pcie::Serializer egress;  // switch -> NIC
    pcie::CreditPool buffer;  // the switch's egress buffer for this port, in 64-byte credits
    PortCounters counters;
    bool down = false;
  };

  void span(int track, unsigned from, unsigned to, std::uint64_t payload, pcie::Ps start, pcie::Ps length);

  PacketFormat format_;
  TraceWriter* trace_ = nullptr;
  int trace_pid_ = 0;
  std::vector<int> tx_tracks_, egress_tracks_;
  std::uint32_t mtu_;
  unsigned nodes_;
  bool switched_;
  pcie::Ps latency_ps_, switch_ps_;
  std::vector<std::unique_ptr<Port>> ports_;
};

}  // namespace spyre_dma::model
