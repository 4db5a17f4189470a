// The controller's ports over its TLM sockets (see ports.hpp).
#include "device/ports.hpp"

#include <optional>
#include <stdexcept>
#include <string>

#include "device/device_memory.hpp"
#include "host/root_complex.hpp"
#include "link/protocol_checker.hpp"
#include "observe/state_probe.hpp"
#include "base/tlp.hpp"

namespace spyre_dma::model {
namespace {

// MSI-X messages go to this address (outside any IOVA the IOMMU hands out).
constexpr std::uint64_t kMsiAddress = 0xFEE0'0000ull;

void describe(tlm::tlm_generic_payload& gp, tlm::tlm_command command, std::uint64_t address, std::uint8_t* data,
              std::uint64_t len) {
  gp.set_command(command);
  gp.set_address(address);
  gp.set_data_ptr(data);
  gp.set_data_length(static_cast<unsigned>(len));
  gp.set_streaming_width(static_cast<unsigned>(len));
}

}  // namespace

HostLink::HostLink(const SimConfig& config, RootComplex::Requester& requester, ProtocolChecker& checker, Transport link)
    : config_(config),
      requester_(requester),
      checker_(checker),
      link_(std::move(link)),
      completion_limit_(pcie::completion_limit(pcie::link_params(config.link))) {}

HostPort::Read HostLink::read(std::uint64_t iova, std::uint8_t* dst, std::uint64_t len, Ps at, bool burst,
                              const TlpFaults* faults) {
  const PayloadPool::Lease lease(payloads_);
  tlm::tlm_generic_payload& gp = *lease;
  TlpExtension ext;
  ext.type = pcie::TlpType::kMRd;
  ext.requester = requester_.id();
  ext.burst = burst;
  ext.tags = config_.device.read_tags;
  if (faults) {
    ext.force_replay = faults->force_replay;
    ext.drop_completion = faults->drop_completion;
    ext.inject_status = faults->status;
  }
  ScopedExtension<TlpExtension> attach(gp, ext);
  describe(gp, tlm::TLM_READ_COMMAND, iova, dst, len);
  sc_core::sc_time delay = delay_until(at);
  link_(gp, delay);
  Read r;
  r.done_ps = now_ps() + to_ps(delay);
  r.status = ext.status;
  r.completed = !ext.drop_completion;
  r.replays = ext.replays;
  r.host = ext.host;
  return r;
}

HostPort::Write HostLink::write(std::uint64_t iova, const std::uint8_t* src, std::uint64_t len, Ps at, bool burst,
                                bool ordered, const TlpFaults* faults) {
  return post(iova, src, len, at, burst, ordered, faults, std::nullopt);
}

HostPort::Write HostLink::post(std::uint64_t iova, const std::uint8_t* src, std::uint64_t len, Ps at, bool burst,
                               bool ordered, const TlpFaults* faults,
                               const std::optional<std::uint32_t>& msi_vector) {
  const PayloadPool::Lease lease(payloads_);
  tlm::tlm_generic_payload& gp = *lease;
  TlpExtension ext;
  ext.type = pcie::TlpType::kMWr;
  ext.requester = requester_.id();
  ext.burst = burst;
  ext.ordered_visible = ordered;
  ext.msi = msi_vector.has_value();
  ext.msi_vector = msi_vector.value_or(0);
  ext.epoch = requester_.epoch();
  if (faults) {
    ext.force_replay = faults->force_replay;
    ext.poisoned = faults->poisoned;
    ext.poisoned_ranges = faults->poisoned_ranges;
  }
  ScopedExtension<TlpExtension> attach(gp, ext);
  describe(gp, tlm::TLM_WRITE_COMMAND, iova, const_cast<std::uint8_t*>(src), len);
  sc_core::sc_time delay = delay_until(at);
  link_(gp, delay);
  Write w;
  w.sent_ps = now_ps() + to_ps(delay);
  w.landed_ps = ext.ready_ps;
  w.ok = gp.get_response_status() == tlm::TLM_OK_RESPONSE;
  w.replays = ext.replays;
  w.host = ext.host;
  return w;
}

void HostLink::msi(std::uint32_t vector, Ps at) {
  (void)post(kMsiAddress, reinterpret_cast<const std::uint8_t*>(&vector), sizeof vector, at, false, true, nullptr,
             vector);
}

std::uint64_t HostLink::completion_bytes(std::uint64_t addr, std::uint64_t left) const {
  return pcie::completion_step(addr, left, config_.link.rcb, completion_limit_);
}

void HostLink::tag_issued(std::uint32_t tag, Ps at) {
  checker_.tag_issued(tag, at);
  if (probe_) probe_->add(tag_level_, at, 1);
}
void HostLink::tag_retired(std::uint32_t tag, Ps at) {
  checker_.tag_retired(tag, at);
  if (probe_) probe_->add(tag_level_, at, -1);
}
void HostLink::rb_after_data(const char* pipeline, std::uint32_t tag, Ps data_ps, Ps rb_ps) {
  checker_.rb_after_data(pipeline, tag, data_ps, rb_ps);
}

Ps MemoryLink::access(tlm::tlm_command command, std::uint64_t phys, std::uint8_t* data, std::uint64_t len, Ps at,
                      const DeviceMemoryCommand* cmd) {
  const PayloadPool::Lease lease(payloads_);
  tlm::tlm_generic_payload& gp = *lease;
  describe(gp, command, phys, data, len);
  DeviceMemoryCommand copy;
  std::optional<ScopedExtension<DeviceMemoryCommand>> attach;
  if (cmd) {
    copy = *cmd;
    attach.emplace(gp, copy);
  }
  sc_core::sc_time delay = delay_until(at);
  memory_(gp, delay);
  return now_ps() + to_ps(delay);
}

Ps MemoryLink::read(std::uint64_t phys, std::uint8_t* dst, std::uint64_t len, Ps at) {
  return access(tlm::TLM_READ_COMMAND, phys, dst, len, at);
}
Ps MemoryLink::write(std::uint64_t phys, const std::uint8_t* src, std::uint64_t len, Ps at) {
  return access(tlm::TLM_WRITE_COMMAND, phys, const_cast<std::uint8_t*>(src), len, at);
}
void MemoryLink::read_functional(std::uint64_t phys, std::uint8_t* dst, std::uint64_t len) {
  const PayloadPool::Lease lease(payloads_);
  tlm::tlm_generic_payload& gp = *lease;
  describe(gp, tlm::TLM_READ_COMMAND, phys, dst, len);
  if (debug_(gp) != len) {
    throw std::logic_error("device memory: a functional read of " + std::to_string(len) + " bytes at " +
                           std::to_string(phys) + " outside the memory");
  }
}

Ps MemoryLink::fill(std::uint64_t phys, std::uint32_t pattern, std::uint64_t len, Ps at) {
  DeviceMemoryCommand cmd;
  cmd.kind = DeviceMemoryCommand::Kind::kFill32;
  cmd.pattern = pattern;
  return access(tlm::TLM_WRITE_COMMAND, phys, nullptr, len, at, &cmd);
}
Ps MemoryLink::copy(std::uint64_t dst, std::uint64_t src, std::uint64_t len, Ps at) {
  DeviceMemoryCommand cmd;
  cmd.kind = DeviceMemoryCommand::Kind::kCopy;
  cmd.source = src;
  return access(tlm::TLM_WRITE_COMMAND, dst, nullptr, len, at, &cmd);
}

}  // namespace spyre_dma::model
