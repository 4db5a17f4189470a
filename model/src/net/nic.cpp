#include "net/nic.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "device/device_memory.hpp"
#include "base/rates.hpp"

namespace spyre_dma::model {

using namespace sc_core;
using pcie::Ps;

namespace {

constexpr std::uint64_t kCqeBytes = 64;
constexpr std::uint64_t kCqBytes = 4096;  // the completion queue: one page of CQEs
constexpr std::uint32_t kAethBytes = 4;  // the acknowledgement header on a read response

// The node's configuration as the NIC's HostLink sees it: the NIC's link, and as many reads in
// flight as a run needs (a NIC keeps hundreds outstanding).
SimConfig nic_view(const SimConfig& node) {
  SimConfig c = node;
  c.link.generation = node.network.nic.generation;
  c.link.lanes = node.network.nic.lanes;
  c.device.read_tags = 256;
  return c;
}

}  // namespace

Nic::Nic(sc_module_name name, const SimConfig& config, unsigned node, Network& network, RootComplex& root_complex,
         Ps beyond_ps, std::function<void(std::function<void()>)> notify)
    : sc_module(name),
      pcie("pcie"),
      config_(nic_view(config)),
      node_(node),
      network_(network),
      requester_(root_complex.attach(iommu_, [](std::uint32_t) {})),
      link_("link", config_, config_.link, beyond_ps, 0x4e1c0000u + node),
      host_(config_, requester_, link_.checker(),
            [this](tlm::tlm_generic_payload& gp, sc_time& d) { pcie->b_transport(gp, d); }),
      notify_(std::move(notify)),
      doorbell_ps_(pcie::ns_to_ps(config.host_cost.register_write_ns)),
      tx_ps_(pcie::ns_to_ps(config.network.nic.tx_ns)),
      rx_ps_(pcie::ns_to_ps(config.network.nic.rx_ns)),
      timeout_ps_(pcie::ns_to_ps(config.network.nic.timeout_us * 1000.0)),
      max_inline_(config.network.nic.max_inline_bytes),
      next_key_((node << 20) | 1),
      packet_(config.network.mtu),
      cq_(2 * kCqBytes) {
  pcie.bind(link_.device_side);
  // One page, page aligned: a CQE never crosses a 4 KiB boundary (a TLP may not).
  const auto at = reinterpret_cast<std::uintptr_t>(cq_.data());
  cq_iova_ = iommu_.map(cq_.data() + ((kCqBytes - at % kCqBytes) % kCqBytes), kCqBytes, DmaAccess::kDeviceWrites);
  SC_THREAD(run);
  SC_METHOD(deliver);
  sensitive << due_;
  dont_initialize();
}

Nic::~Nic() = default;

void Nic::add_device(DeviceMemory& memory, std::vector<PeerHop> path) {
  devices_.push_back({&memory, std::move(path)});
}

std::uint32_t Nic::register_host(void* base, std::uint64_t size) {
  Region r;
  r.base = reinterpret_cast<std::uint64_t>(base);
  r.size = size;
  r.iova = iommu_.map(base, size, DmaAccess::kBoth);
  const std::uint32_t key = next_key_++;
  regions_.emplace(key, r);
  return key;
}

std::uint32_t Nic::register_device(unsigned device, std::uint64_t base, std::uint64_t size) {
  if (device >= devices_.size()) {
    throw std::invalid_argument("NIC of node " + std::to_string(node_) + ": no device " + std::to_string(device) +
                                " on this node (it has " + std::to_string(devices_.size()) + ")");
  }
  if (!devices_[device].memory->storage().contains(base, size)) {
    throw std::invalid_argument("NIC of node " + std::to_string(node_) + ": [" + std::to_string(base) + ", +" +
                                std::to_string(size) + ") is not in device " + std::to_string(device) + "'s memory");
  }
  Region r;
  r.device = true;
  r.device_index = device;
  r.base = base;
  r.size = size;
  const std::uint32_t key = next_key_++;
  regions_.emplace(key, r);
  return key;
}

bool Nic::deregister(std::uint32_t key) {
  auto it = regions_.find(key);
  if (it == regions_.end()) return false;
  // Nothing is in flight on it between two simulation slices: the host deregisters from outside.
  if (!it->second.device) iommu_.unmap(it->second.iova);
  regions_.erase(it);
  return true;
}

const Nic::Region* Nic::region_for(std::uint32_t key, std::uint64_t addr, std::uint64_t bytes) const {
  auto it = regions_.find(key);
  if (it == regions_.end()) return nullptr;
  const Region& r = it->second;
  if (addr < r.base || bytes > r.size || addr - r.base > r.size - bytes) return nullptr;
  return &r;
}

void Nic::post(WorkRequest wr) {
  const std::uint64_t iova = iommu_.map(wr.local, wr.bytes, DmaAccess::kBoth);
  queue_.emplace_back(std::move(wr), iova);
  posted_.notify(SC_ZERO_TIME);
}

void Nic::trace_completions(TraceWriter& trace) {
  trace_ = &trace;
  const int pid = trace.process("node " + std::to_string(node_) + " NIC");
  track_ = trace.thread(pid, "completions");
}

void Nic::run() {
  for (;;) {
    while (queue_.empty()) wait(posted_);
    auto [wr, iova] = std::move(queue_.front());
    queue_.pop_front();
    // Requests enter the send pipeline in order; each is then carried as far as its wires allow.
    const Ps start = std::max(now_ps() + doorbell_ps_, pipeline_free_);
    pipeline_free_ = start;
    execute(wr, iova, start);
  }
}

Ps Nic::cross(const std::vector<PeerHop>& hops, bool towards_device, std::uint64_t addr, std::uint64_t len, Ps at) {
  const auto hop = [&](const PeerHop& h) {
    if (!h.link) at += h.ps;
    else if (len == 0) at += h.link->latency_ps();  // a read request: one header, no data to carry
    else at = h.link->carry(towards_device ? h.down : !h.down, addr, len, at);
  };
  if (towards_device) std::for_each(hops.begin(), hops.end(), hop);
  else std::for_each(hops.rbegin(), hops.rend(), hop);
  return at;
}

Ps Nic::write_region(const Region& r, std::uint64_t offset, const std::uint8_t* src, std::uint64_t len, Ps at) {
  if (!r.device) return host_.write(r.iova + offset, src, len, at, true).landed_ps;
  PeerDevice& d = devices_[r.device_index];
  const Ps there = cross(d.path, true, r.base + offset, len, at);
  tlm::tlm_generic_payload gp;
  gp.set_command(tlm::TLM_WRITE_COMMAND);
  gp.set_address(r.base + offset);
  gp.set_data_ptr(const_cast<std::uint8_t*>(src));
  gp.set_data_length(static_cast<unsigned>(len));
  gp.set_streaming_width(static_cast<unsigned>(len));
  sc_time delay = delay_until(there);
  d.memory->access(gp, delay);
  return now_ps() + to_ps(delay);
}

Ps Nic::read_region(const Region& r, std::uint64_t offset, std::uint8_t* dst, std::uint64_t len, Ps at) {
  if (!r.device) return host_.read(r.iova + offset, dst, len, at, true).done_ps;
  PeerDevice& d = devices_[r.device_index];
  const Ps asked = cross(d.path, true, r.base + offset, 0, at);
  tlm::tlm_generic_payload gp;
  gp.set_command(tlm::TLM_READ_COMMAND);
  gp.set_address(r.base + offset);
  gp.set_data_ptr(dst);
  gp.set_data_length(static_cast<unsigned>(len));
  gp.set_streaming_width(static_cast<unsigned>(len));
  sc_time delay = delay_until(asked);
  d.memory->access(gp, delay);
  return cross(d.path, false, r.base + offset, len, now_ps() + to_ps(delay));
}

Ps Nic::completion_entry(Ps at) {
  std::uint8_t cqe[kCqeBytes] = {};
  const std::uint64_t slot = (completed_ + pending_.size()) % (kCqBytes / kCqeBytes);
  return host_.write(cq_iova_ + slot * kCqeBytes, cqe, kCqeBytes, at).landed_ps;
}

void Nic::execute(WorkRequest& wr, std::uint64_t local_iova, Ps start) {
  const PacketFormat& f = network_.format();
  const std::string what = std::string(wr.op == WorkRequest::Op::kWrite ? "put" : "get") + " of " +
                           std::to_string(wr.bytes) + " bytes from node " + std::to_string(node_) + " to node " +
                           std::to_string(wr.peer);
  if (wr.peer >= nics_.size()) {
    return finish(start, wr,
                  Status(ErrorCode::kPeerUnreachable, what + ": the cluster has no such node (it has " +
                                                          std::to_string(nics_.size()) + ")"),
                  local_iova, start);
  }
  // A request or answer lost on a port that is down: the transport retries until it gives up.
  if (network_.port_down(node_) || network_.port_down(wr.peer)) {
    return finish(start + timeout_ps_, wr,
                  Status(ErrorCode::kPeerUnreachable, what + ": no answer within the transport's timeout (port down)"),
                  local_iova, start);
  }
  Nic& peer = *nics_[wr.peer];
  const Region* region = peer.region_for(wr.key, wr.remote, wr.bytes);
  const auto refused = [&](Ps request_in) {
    const Network::Delivery nak =
        network_.send(wr.peer, node_, 0, f.ack_bytes - f.header_bytes, request_in + peer.rx_ps_);
    finish(completion_entry(nak.arrived_ps + rx_ps_), wr,
           Status(ErrorCode::kRemoteAccess, what + ": the peer refused the key or the range (remote access error)"),
           local_iova, start);
  };
  const std::uint64_t mtu = network_.mtu();
  const Ps t = start + tx_ps_;
  if (wr.op == WorkRequest::Op::kWrite) {
    const bool inline_data = wr.bytes <= max_inline_;
    Ps last_in = t, landed = t;
    for (std::uint64_t off = 0; off < wr.bytes;) {
      const std::uint64_t n = std::min(mtu, wr.bytes - off);
      Ps ready = t;
      if (inline_data) {
        std::memcpy(packet_.data(), wr.local + off, n);  // came with the doorbell
      } else {
        const HostPort::Read rd = host_.read(local_iova + off, packet_.data(), n, t, true);
        ready = rd.done_ps;
      }
      const Network::Delivery d = network_.send(node_, wr.peer, n, off == 0 ? f.request_bytes : 0, ready);
      if (!region) return refused(d.arrived_ps);
      landed = std::max(landed, peer.write_region(*region, wr.remote - region->base + off, packet_.data(), n,
                                                  d.arrived_ps + peer.rx_ps_));
      last_in = d.arrived_ps;
      off += n;
    }
    if (wr.landed) {
      pending_.emplace(std::max(landed, now_ps()),
                       Done{{}, Status{}, 0, std::move(wr.landed), wr.peer, start, true, wr.bytes});
    }
    // The peer acknowledges the message once its last packet is in; the completion follows the ack.
    const Network::Delivery ack = network_.send(wr.peer, node_, 0, f.ack_bytes - f.header_bytes, last_in + peer.rx_ps_);
    return finish(completion_entry(ack.arrived_ps + rx_ps_), wr, Status{}, local_iova, start);
  }
  const Network::Delivery request = network_.send(node_, wr.peer, 0, f.request_bytes, t);
  if (!region) return refused(request.arrived_ps);
  const Ps serve = request.arrived_ps + peer.rx_ps_;
  Ps last = serve;
  for (std::uint64_t off = 0; off < wr.bytes;) {
    const std::uint64_t n = std::min(mtu, wr.bytes - off);
    const Ps ready = peer.read_region(*region, wr.remote - region->base + off, packet_.data(), n, serve);
    const bool edge = off == 0 || off + n == wr.bytes;  // first and last responses carry an AETH
    const Network::Delivery d = network_.send(wr.peer, node_, n, edge ? kAethBytes : 0, ready);
    (void)host_.write(local_iova + off, packet_.data(), n, d.arrived_ps + rx_ps_, true);
    last = d.arrived_ps + rx_ps_;
    off += n;
  }
  // Posted writes keep their order: the completion entry lands after the data.
  finish(completion_entry(last), wr, Status{}, local_iova, start);
}

void Nic::finish(Ps at, WorkRequest& wr, Status status, std::uint64_t local_iova, Ps started) {
  const Ps now = now_ps();
  at = std::max(at, now);
  pending_.emplace(at, Done{std::move(wr.done), std::move(status), local_iova, {}, wr.peer, started,
                            wr.op == WorkRequest::Op::kWrite, wr.bytes});
  due_.notify(from_ps(pending_.begin()->first - now));
}

void Nic::deliver() {
  const Ps now = now_ps();
  while (!pending_.empty() && pending_.begin()->first <= now) {
    Done d = std::move(pending_.begin()->second);
    pending_.erase(pending_.begin());
    const bool cut = network_.port_down(node_) || (d.peer < nics_.size() && network_.port_down(d.peer));
    if (d.landed) {
      if (!cut) notify_(std::move(d.landed));
      continue;
    }
    if (cut && d.status.ok()) {
      // A port went down while the request was under way: its acknowledgement never comes back,
      // and the transport gives up a timeout after the request began.
      d.status = Status(ErrorCode::kPeerUnreachable, "node " + std::to_string(node_) + " to node " +
                                                         std::to_string(d.peer) +
                                                         ": no acknowledgement within the transport's timeout (a port "
                                                         "went down mid-transfer)");
      pending_.emplace(std::max(now, d.started + timeout_ps_), std::move(d));
      continue;
    }
    if (d.unmap_iova) iommu_.unmap(d.unmap_iova);
    ++completed_;
    if (trace_) {
      trace_->instant(d.put ? "put" : "get", "nic", double(now) / 1000.0, track_,
                      {{"bytes", d.bytes},
                       {"peer", d.peer},
                       {"status", std::string(to_string(d.status.code()))},
                       {"latency_ns", double(now - d.started) / 1000.0}});
    }
    if (d.done) {
      notify_([done = std::move(d.done), status = std::move(d.status)]() mutable { done(std::move(status)); });
    }
  }
  if (!pending_.empty()) due_.notify(from_ps(pending_.begin()->first - now));
}

}  // namespace spyre_dma::model
