#include "net/network.hpp"

#include <stdexcept>
#include <string>

#include "observe/trace_writer.hpp"
#include "base/rates.hpp"

namespace spyre_dma::model {
namespace {
constexpr std::uint32_t kCreditBytes = 64;
}  // namespace

// Header sizes from the InfiniBand Architecture Specification (Vol. 1, ch. 9: LRH 8, BTH 12,
// RETH 16, AETH 4, ICRC 4, VCRC 2) and, for RoCEv2, its Annex A17 over Ethernet II, IPv4 and UDP
// with the Ethernet frame's FCS, preamble and start delimiter (8) and minimum inter-frame gap (12).
PacketFormat packet_format(const std::string& protocol) {
  if (protocol == "infiniband") return {8 + 12 + 4 + 2, 16, 8 + 12 + 4 + 4 + 2};
  if (protocol == "roce_v2") return {14 + 20 + 8 + 12 + 4 + 4 + 20, 16, 14 + 20 + 8 + 12 + 4 + 4 + 4 + 20};
  throw std::invalid_argument("network.protocol: \"" + protocol + "\" is neither \"infiniband\" nor \"roce_v2\"");
}

Network::Port::Port(pcie::PsPerByte rate, std::uint32_t buffer_credits)
    : tx_clock(rate), egress_clock(rate), buffer(0, buffer_credits) {}

Network::Network(const NetworkConfig& config)
    : format_(packet_format(config.protocol)),
      mtu_(config.mtu),
      nodes_(config.nodes),
      switched_(config.fabric != "back_to_back"),
      latency_ps_(pcie::ns_to_ps(config.latency_ns)),
      switch_ps_(pcie::ns_to_ps(config.switch_latency_ns)) {
  const pcie::PsPerByte rate = rate_for_gbps(config.gbps / 8.0);  // Gb/s to GB/s
  for (unsigned n = 0; n < nodes_; ++n) {
    ports_.push_back(std::make_unique<Port>(rate, config.switch_buffer_bytes / kCreditBytes));
  }
}

void Network::trace_packets(TraceWriter& trace) {
  trace_ = &trace;
  trace_pid_ = trace.process("network");
  for (unsigned n = 0; n < nodes_; ++n) {
    tx_tracks_.push_back(trace.thread(trace_pid_, "node " + std::to_string(n) + " port out").tid);
    if (switched_) egress_tracks_.push_back(trace.thread(trace_pid_, "switch to node " + std::to_string(n)).tid);
  }
}

void Network::span(int track, unsigned from, unsigned to, std::uint64_t payload, pcie::Ps start, pcie::Ps length) {
  trace_->complete(payload ? "packet" : "request/ack", "net", double(start) / 1000.0, double(length) / 1000.0,
                   TraceTrack{trace_pid_, track}, {{"from", from}, {"to", to}, {"payload", payload}});
}

Network::Delivery Network::send(unsigned from, unsigned to, std::uint64_t payload, std::uint32_t extra,
                                pcie::Ps ready) {
  Port& src = *ports_.at(from);
  Port& dst = *ports_.at(to);
  const std::uint64_t wire = payload + format_.header_bytes + extra;
  src.counters.packets += 1;
  src.counters.payload_bytes += payload;
  src.counters.wire_bytes += wire;
  const pcie::Ps length = src.tx_clock.duration_ps(wire);
  Delivery d;
  if (!switched_) {
    d.sent_ps = src.tx.reserve(ready, length);
    d.arrived_ps = d.sent_ps + length + latency_ps_;
    if (trace_) span(tx_tracks_[from], from, to, payload, d.sent_ps, length);
    return d;
  }
  // The packet may leave once the egress buffer has room for it (credits come back as the
  // egress port sends packets on).
  const auto credits = static_cast<std::uint32_t>((wire + kCreditBytes - 1) / kCreditBytes);
  const pcie::CreditGrant grant = dst.buffer.acquire(ready, 0, credits);
  if (grant.at_ps > ready) {
    ++src.counters.credit_stalls;
    src.counters.credit_stall_ps += grant.at_ps - ready;
  }
  d.sent_ps = src.tx.reserve(grant.at_ps, length);
  // Cut-through: the head is at the switch one cable later and may leave switch_latency after;
  // the egress wire cannot finish before the last byte has come in.
  const pcie::Ps head_in = d.sent_ps + latency_ps_;
  const pcie::Ps egress_length = dst.egress_clock.duration_ps(wire);
  const pcie::Ps out = dst.egress.reserve(head_in + switch_ps_, egress_length);
  const pcie::Ps out_end = std::max(out + egress_length, head_in + length);
  dst.buffer.release(grant, out_end);
  d.arrived_ps = out_end + latency_ps_;
  if (trace_) {
    span(tx_tracks_[from], from, to, payload, d.sent_ps, length);
    span(egress_tracks_[to], from, to, payload, out, egress_length);
  }
  return d;
}

}  // namespace spyre_dma::model
