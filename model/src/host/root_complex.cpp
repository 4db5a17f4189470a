#include "host/root_complex.hpp"

#include <cstring>
#include <stdexcept>

#include "base/rates.hpp"
#include "base/tlp.hpp"

namespace spyre_dma::model {

using namespace sc_core;

RootComplex::RootComplex(sc_module_name name, const SimConfig& config)
    : sc_module(name),
      socket("socket"),
      service_ps_(pcie::ns_to_ps(config.host.root_complex_ns + config.host.memory_latency_ns +
                                 config.host.iommu_ns)),
      interrupt_ps_(pcie::ns_to_ps(config.host_cost.interrupt_ns)),
      memory_(rate_for_gbps(config.host.memory_gbps),
              rate_for_gbps(config.host.memory_write_gbps > 0 ? config.host.memory_write_gbps : config.host.memory_gbps),
              std::size_t{1} << 17),
      writes_take_memory_(config.host.memory_write_gbps > 0),
      port_ratio_(config.host.root_port_ratio),
      staging_gbps_(config.host_cost.staging_gbps),
      iotlb_entries_(config.host.iotlb_entries),
      iotlb_page_(config.host.iotlb_page_bytes),
      iotlb_miss_ps_(pcie::ns_to_ps(config.host.iotlb_miss_ns)) {
  socket.register_b_transport(this, &RootComplex::b_transport);
  SC_METHOD(deliver);
  sensitive << due_;
  dont_initialize();
  SC_METHOD(release_windows);
  sensitive << windows_due_;
  dont_initialize();
}

void RootComplex::release_windows() {
  if (!windows_open_) return;
  for (Requester& r : requesters_) r.held_.release();
  windows_open_ = false;
}

std::uint8_t* RootComplex::reach(Requester& r, std::uint64_t iova, std::size_t len, bool device_writes) {
  if (!r.iommu_.retarget(r.held_, iova, len, device_writes)) return nullptr;
  if (!windows_open_) {
    windows_open_ = true;
    windows_due_.notify(SC_ZERO_TIME);
  }
  return r.held_.host();
}

RootComplex::Requester& RootComplex::attach(device_core::Iommu& iommu, std::function<void(std::uint32_t)> on_interrupt) {
  requesters_.push_back(
      Requester(static_cast<std::uint16_t>(requesters_.size()), iommu, std::move(on_interrupt),
                Iotlb(iotlb_entries_, iotlb_miss_ps_)));
  return requesters_.back();
}

pcie::Ps RootComplex::staging_copy(pcie::Ps start, std::uint64_t bytes) {
  if (staging_gbps_ <= 0 || bytes == 0) return start;
  // 1 GB/s is one byte per ns. The copy's memory traffic (each byte read once and written once)
  // is booked a piece at a time, each when the CPU gets to it, so that it spreads over the copy
  // as it does on a host instead of blocking the devices' reads in one block.
  constexpr std::uint64_t kPiece = 64u << 10;
  const double ps_per_byte = 1000.0 / staging_gbps_;
  const pcie::FairShare::Class writes = writes_take_memory_ ? pcie::FairShare::kWrite : pcie::FairShare::kRead;
  pcie::Ps end = start + pcie::ns_to_ps(static_cast<double>(bytes) / staging_gbps_);
  for (std::uint64_t at = 0; at < bytes; at += kPiece) {
    const std::uint64_t n = std::min(kPiece, bytes - at);
    const pcie::Ps earliest = start + static_cast<pcie::Ps>(static_cast<double>(at) * ps_per_byte);
    end = std::max(end, memory_.book(pcie::FairShare::kRead, earliest, n, now_ps()).end);
    end = std::max(end, memory_.book(writes, earliest, n, now_ps()).end);
  }
  return end;
}

void RootComplex::add_port(const pcie::LinkParams& link) {
  const pcie::PsPerByte rate = rate_for_gbps(port_ratio_ > 0 ? port_ratio_ * pcie::raw_bytes_per_ns(link) : 1);
  ports_.push_back(Port{pcie::FairShare(rate, rate, std::size_t{1} << 17), pcie::tlp_ps_per_byte(link)});
}

pcie::FairShare::Pass RootComplex::through_port(int port, pcie::FairShare::Class c, std::uint64_t len, pcie::Ps at,
                                                bool run) {
  if (port_ratio_ <= 0 || static_cast<std::size_t>(port) >= ports_.size()) return pcie::FairShare::Pass{at, at};
  pcie::FairShare& fabric = ports_[static_cast<std::size_t>(port)].fabric;
  if (!run || len <= kPortPiece) return fabric.book(c, at, len, now_ps());
  // A run of TLPs (burst fidelity) crosses the port as its TLPs cross the link, a piece at a
  // time: booked whole from its first TLP on, it would hold the port for the run and keep the
  // small reads booked after it (CB fetches) waiting.
  const pcie::PsPerByte link = ports_[static_cast<std::size_t>(port)].link;
  pcie::FairShare::Pass pass{0, at};
  for (std::uint64_t k = 0; k < len; k += kPortPiece) {
    const pcie::FairShare::Pass p = fabric.book(c, at + link.ceil_ps(k), std::min<std::uint64_t>(kPortPiece, len - k), now_ps());
    if (k == 0) pass.start = p.start;
    pass.end = std::max(pass.end, p.end);
  }
  return pass;
}

pcie::Ps RootComplex::port_alone_ps(int port, std::uint64_t len) const {
  if (port_ratio_ <= 0 || static_cast<std::size_t>(port) >= ports_.size()) return 0;
  return ports_[static_cast<std::size_t>(port)].fabric.alone_ps(pcie::FairShare::kRead, len);
}

pcie::Ps RootComplex::take_in(int port, std::uint64_t len, pcie::Ps arrival, pcie::Ps landed, bool run) {
  pcie::Ps in = std::max(landed, through_port(port, pcie::FairShare::kWrite, len, arrival, run).end);
  if (writes_take_memory_) in = std::max(in, memory_.book(pcie::FairShare::kWrite, arrival, len, now_ps()).end);
  return in;
}

std::vector<pcie::Ps> RootComplex::port_busy_ps() const {
  std::vector<pcie::Ps> out;
  for (const Port& p : ports_) out.push_back(p.fabric.busy_ps());
  return out;
}

void RootComplex::prune(pcie::Ps now) {
  memory_.prune(now);
  for (Port& p : ports_) p.fabric.prune(now);
  for (Requester& r : requesters_) r.posted_.prune(now);
}

pcie::Ps RootComplex::translated(Requester& r, std::uint64_t iova, std::uint64_t len, pcie::Ps at, bool run) {
  if (iotlb_entries_ == 0 || len == 0) return at;
  pcie::Ps ready = at;
  for (std::uint64_t page = iova / iotlb_page_, last = (iova + len - 1) / iotlb_page_; page <= last; ++page) {
    const pcie::Ps t = r.iotlb_.lookup(page, at);
    if (!run || page == iova / iotlb_page_) ready = std::max(ready, t);
  }
  return ready;
}

bool RootComplex::write_host(Requester& r, std::uint64_t iova, const std::uint8_t* data, std::size_t len) {
  std::uint8_t* host = reach(r, iova, len, true);
  if (!host) return false;
  std::memcpy(host, data, len);
  return true;
}

// An RB lands the way the host polls it: everything but its first word, then the first word (tag,
// status, phase) with a release store, so a host thread that sees the phase sees the whole RB.
bool RootComplex::write_ordered(Requester& r, std::uint64_t iova, const std::uint8_t* data, std::size_t len) {
  device_core::Iommu::Window w = r.iommu_.translate(iova, len, true);
  if (!w) return false;
  if (len < 8 || reinterpret_cast<std::uintptr_t>(w.host()) % 8 != 0) {
    std::memcpy(w.host(), data, len);
    return true;
  }
  std::memcpy(w.host() + 8, data + 8, len - 8);
  std::uint64_t word0;
  std::memcpy(&word0, data, 8);
  __atomic_store_n(reinterpret_cast<std::uint64_t*>(w.host()), word0, __ATOMIC_RELEASE);
  return true;
}

void RootComplex::b_transport(int port, tlm::tlm_generic_payload& gp, sc_time& delay) {
  TlpExtension* ext = gp.get_extension<TlpExtension>();
  Requester& r = requesters_.at(ext ? ext->requester : 0);
  const pcie::Ps arrival = now_ps() + to_ps(delay);
  const std::uint64_t iova = gp.get_address();
  const std::size_t len = gp.get_data_length();
  gp.set_response_status(tlm::TLM_OK_RESPONSE);
  if (gp.is_read()) {
    ++r.read_requests_;
    if ((++read_requests_ & 63) == 0) prune(now_ps());
    std::uint8_t* host = reach(r, iova, len, false);
    // Not before the posted writes its device sent before it are in.
    pcie::Ps start = arrival;
    if (const pcie::Ps behind = r.posted_.clear_at(arrival); behind > start) {
      ++r.read_holds_;
      r.read_hold_ps_ += behind - start;
      start = behind;
    }
    // Memory serves requests interleaved, a cache line at a time: a read takes whatever memory
    // time is free from its arrival on, and is served once the last of it is done. Its data
    // crosses the root port on the way out the same way, interleaved with the port's other
    // traffic (and, for a burst's run, while it streams: the run starts once its share of the
    // port's time is found).
    const pcie::Ps served =
        memory_.book(pcie::FairShare::kRead, translated(r, iova, len, start, ext && ext->burst), len, now_ps()).start;
    // A read's data is on its way once all of it but what the port passes at its full rate has
    // crossed (a burst's run streams: it starts with its first piece).
    const bool run = ext && ext->burst;
    const pcie::FairShare::Pass out = through_port(port, pcie::FairShare::kRead, len, served, run);
    const pcie::Ps crossed = run ? out.start : out.end - std::min(out.end - out.start, port_alone_ps(port, len));
    ext->ready_ps = std::max(served, crossed) + service_ps_;
    if (!host) {
      ++r.iommu_faults_;
      ext->status = CompletionStatus::kUnsupportedRequest;
      gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
      return;
    }
    if (ext->inject_status != CompletionStatus::kSuccess) {  // an injected UR or CA: no data
      ext->status = ext->inject_status;
      gp.set_response_status(tlm::TLM_GENERIC_ERROR_RESPONSE);
      return;
    }
    if (gp.get_data_ptr() != nullptr) std::memcpy(gp.get_data_ptr(), host, len);
    else ext->host = host;  // the requester moves the bytes (HostPort::read's direct form)
    ext->status = CompletionStatus::kSuccess;
    return;
  }
  ++r.write_requests_;
  const bool direct = gp.get_data_ptr() == nullptr;
  if (direct && (!ext || ext->ordered_visible || ext->msi || ext->poisoned || ext->poisoned_ranges)) {
    throw std::logic_error("root complex: a write without data must be a plain posted write");
  }
  // A write takes effect once its page is translated (an MSI-X message is not translated), and is
  // taken out of the receive buffer once it has crossed its port and memory has taken it.
  const bool msi = ext && ext->msi;
  const pcie::Ps landed = msi ? arrival : translated(r, iova, len, arrival, ext && ext->burst);
  if (ext) {
    ext->ready_ps = landed;
    // A run of TLPs (burst fidelity) comes in from its first TLP's arrival on.
    const pcie::Ps from = ext->burst && ext->first_ps ? std::min<pcie::Ps>(ext->first_ps, arrival) : arrival;
    const pcie::Ps in = msi ? landed : take_in(port, len, from, landed, ext->burst);
    ext->taken_ps = in;
    r.posted_.add(arrival, in);
  }
  if (ext && (ext->ordered_visible || ext->msi)) {
    // Checked now (the device learns of a fault through its response), applied at arrival.
    if (!ext->msi && !r.iommu_.translate(iova, len, true)) {
      ++r.iommu_faults_;
      gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
      return;
    }
    Pending p{iova, std::vector<std::uint8_t>(gp.get_data_ptr(), gp.get_data_ptr() + len), ext->msi,
              ext->msi_vector, ext->epoch, &r};
    const pcie::Ps at = ext->msi ? arrival + interrupt_ps_ : landed;
    const bool first = pending_.empty() || at < pending_.begin()->first;
    pending_.emplace(at, std::move(p));
    if (first) due_.notify(from_ps(at) - sc_time_stamp());
    return;
  }
  // Posted writes are absorbed by the root complex's write buffers: they take no read bandwidth
  // from host memory here (a burst of them booked as one block would stall unrelated reads).
  // A poisoned TLP's data is discarded: host memory keeps what it held.
  if (ext && ext->poisoned) return;
  if (ext && ext->poisoned_ranges) {
    std::uint64_t at = iova;
    bool ok = true;
    for (const pcie::Segment& s : *ext->poisoned_ranges) {
      if (s.addr > at) ok = write_host(r, at, gp.get_data_ptr() + (at - iova), s.addr - at) && ok;
      at = s.addr + s.len;
    }
    if (iova + len > at) ok = write_host(r, at, gp.get_data_ptr() + (at - iova), iova + len - at) && ok;
    if (!ok) {
      ++r.iommu_faults_;
      gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    }
    return;
  }
  if (direct) {  // the requester puts the bytes there (HostPort::write's direct form)
    ext->host = reach(r, iova, len, true);
    if (ext->host != nullptr) return;
  } else if (write_host(r, iova, gp.get_data_ptr(), len)) {
    return;
  }
  ++r.iommu_faults_;
  gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
}

void RootComplex::deliver() {
  const pcie::Ps now = now_ps();
  while (!pending_.empty() && pending_.begin()->first <= now) {
    Pending p = std::move(pending_.begin()->second);
    pending_.erase(pending_.begin());
    Requester& r = *p.requester;
    if (p.epoch != r.epoch_) continue;  // written before its device's reset: the host never sees it
    if (p.msi) {
      r.on_interrupt_(p.vector);
    } else if (!write_ordered(r, p.iova, p.bytes.data(), p.bytes.size())) {
      ++r.iommu_faults_;
    }
  }
  if (!pending_.empty()) due_.notify(from_ps(pending_.begin()->first) - sc_time_stamp());
}

}  // namespace spyre_dma::model
