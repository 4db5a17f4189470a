#include "host/root_complex.hpp"

#include <cstring>

#include "sim/sim_time.hpp"
#include "sim/tlp.hpp"

namespace spyre_dma::model {

using namespace sc_core;

RootComplex::RootComplex(sc_module_name name, const SimConfig& config, device_core::Iommu& iommu,
                         std::function<void(std::uint32_t)> on_interrupt)
    : sc_module(name),
      socket("socket"),
      iommu_(iommu),
      on_interrupt_(std::move(on_interrupt)),
      service_ps_(pcie::ns_to_ps(config.host.root_complex_ns + config.host.memory_latency_ns +
                                 config.host.iommu_ns)),
      interrupt_ps_(pcie::ns_to_ps(config.host_cost.interrupt_ns)),
      memory_rate_(rate_for_gbps(config.host.memory_gbps)) {
  socket.register_b_transport(this, &RootComplex::b_transport);
  SC_METHOD(deliver);
  sensitive << due_;
  dont_initialize();
}

bool RootComplex::write_host(std::uint64_t iova, const std::uint8_t* data, std::size_t len) {
  device_core::Iommu::Window w = iommu_.translate(iova, len, true);
  if (!w) return false;
  std::memcpy(w.host(), data, len);
  return true;
}

// An RB lands the way the host polls it: everything but its first word, then the first word (tag,
// status, phase) with a release store, so a host thread that sees the phase sees the whole RB.
bool RootComplex::write_ordered(std::uint64_t iova, const std::uint8_t* data, std::size_t len) {
  device_core::Iommu::Window w = iommu_.translate(iova, len, true);
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

void RootComplex::b_transport(tlm::tlm_generic_payload& gp, sc_time& delay) {
  TlpExtension* ext = gp.get_extension<TlpExtension>();
  const pcie::Ps arrival = to_ps(sc_time_stamp() + delay);
  const std::uint64_t iova = gp.get_address();
  const std::size_t len = gp.get_data_length();
  gp.set_response_status(tlm::TLM_OK_RESPONSE);
  if (gp.is_read()) {
    if ((++read_requests_ & 63) == 0) memory_.prune(to_ps(sc_time_stamp()));
    device_core::Iommu::Window w = iommu_.translate(iova, len, false);
    const pcie::Ps served = memory_.reserve(arrival, memory_rate_.ceil_ps(len));
    ext->ready_ps = served + service_ps_;
    if (!w) {
      ++iommu_faults_;
      ext->status = CompletionStatus::kUnsupportedRequest;
      gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
      return;
    }
    if (ext->inject_status != CompletionStatus::kSuccess) {  // an injected UR or CA: no data
      ext->status = ext->inject_status;
      gp.set_response_status(tlm::TLM_GENERIC_ERROR_RESPONSE);
      return;
    }
    std::memcpy(gp.get_data_ptr(), w.host(), len);
    ext->status = CompletionStatus::kSuccess;
    return;
  }
  ++write_requests_;
  if (ext && (ext->ordered_visible || ext->msi)) {
    // Checked now (the device learns of a fault through its response), applied at arrival.
    if (!ext->msi && !iommu_.translate(iova, len, true)) {
      ++iommu_faults_;
      gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
      return;
    }
    Pending p{iova, std::vector<std::uint8_t>(gp.get_data_ptr(), gp.get_data_ptr() + len), ext->msi,
              ext->msi_vector, ext->epoch};
    const pcie::Ps at = ext->msi ? arrival + interrupt_ps_ : arrival;
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
      if (s.addr > at) ok = write_host(at, gp.get_data_ptr() + (at - iova), s.addr - at) && ok;
      at = s.addr + s.len;
    }
    if (iova + len > at) ok = write_host(at, gp.get_data_ptr() + (at - iova), iova + len - at) && ok;
    if (!ok) {
      ++iommu_faults_;
      gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    }
    return;
  }
  if (!write_host(iova, gp.get_data_ptr(), len)) {
    ++iommu_faults_;
    gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
  }
}

void RootComplex::deliver() {
  const pcie::Ps now = to_ps(sc_time_stamp());
  while (!pending_.empty() && pending_.begin()->first <= now) {
    Pending p = std::move(pending_.begin()->second);
    pending_.erase(pending_.begin());
    if (p.epoch != epoch_) continue;  // written before a reset: the host never sees it
    if (p.msi) {
      on_interrupt_(p.vector);
    } else if (!write_ordered(p.iova, p.bytes.data(), p.bytes.size())) {
      ++iommu_faults_;
    }
  }
  if (!pending_.empty()) due_.notify(from_ps(pending_.begin()->first) - sc_time_stamp());
}

}  // namespace spyre_dma::model
