// The controller's ports (spyre_dma/model/host_port.hpp) over its TLM sockets: HostLink turns a
// read or write into a TLM transaction on the PCIe link (the TLP extension carrying what PCIe
// needs), MemoryLink one into a transaction on device memory. The front end and every data path
// go through these, so each rule of the link is applied in one place.
#pragma once

#include <functional>
#include <optional>

#include <systemc>
#include <tlm>

#include "host/root_complex.hpp"
#include "base/payload_pool.hpp"
#include "spyre_dma/model/host_port.hpp"
#include "spyre_dma/model/sim_config.hpp"

namespace spyre_dma::model {

class ProtocolChecker;
struct DeviceMemoryCommand;
class StateProbe;
using Transport = std::function<void(tlm::tlm_generic_payload&, sc_core::sc_time&)>;
using DebugTransport = std::function<unsigned(tlm::tlm_generic_payload&)>;  // TLM-2.0 transport_dbg

class HostLink final : public HostPort {
 public:
  HostLink(const SimConfig& config, RootComplex::Requester& requester, ProtocolChecker& checker, Transport link);

  // (The same defaults as HostPort's, for calls through a HostLink.)
  Read read(std::uint64_t iova, std::uint8_t* dst, std::uint64_t len, Ps at, bool burst = false,
            const TlpFaults* faults = nullptr) override;
  Write write(std::uint64_t iova, const std::uint8_t* src, std::uint64_t len, Ps at, bool burst = false,
              bool ordered = false, const TlpFaults* faults = nullptr) override;
  std::uint64_t completion_bytes(std::uint64_t addr, std::uint64_t left) const override;
  void tag_issued(std::uint32_t tag, Ps at) override;
  void tag_retired(std::uint32_t tag, Ps at) override;
  void rb_after_data(const char* pipeline, std::uint32_t tag, Ps data_ps, Ps rb_ps) override;
  // The read tags in flight as `level` of `probe`.
  void observe(StateProbe* probe, int level) {
    probe_ = probe;
    tag_level_ = level;
  }
  // An MSI-X message with `vector`, as an ordered posted write at `at`.
  void msi(std::uint32_t vector, Ps at);

 private:
  // By reference: an optional passed by value is written as a byte and read back whole (a store
  // forwarding stall per TLP).
  Write post(std::uint64_t iova, const std::uint8_t* src, std::uint64_t len, Ps at, bool burst, bool ordered,
             const TlpFaults* faults, const std::optional<std::uint32_t>& msi_vector);

  const SimConfig& config_;
  RootComplex::Requester& requester_;
  ProtocolChecker& checker_;
  Transport link_;
  std::uint32_t completion_limit_;
  StateProbe* probe_ = nullptr;
  int tag_level_ = -1;
  PayloadPool payloads_;
};

class MemoryLink final : public DeviceMemoryPort {
 public:
  MemoryLink(Transport memory, DebugTransport debug) : memory_(std::move(memory)), debug_(std::move(debug)) {}
  Ps read(std::uint64_t phys, std::uint8_t* dst, std::uint64_t len, Ps at) override;
  Ps write(std::uint64_t phys, const std::uint8_t* src, std::uint64_t len, Ps at) override;
  Ps fill(std::uint64_t phys, std::uint32_t pattern, std::uint64_t len, Ps at) override;
  Ps copy(std::uint64_t dst, std::uint64_t src, std::uint64_t len, Ps at) override;
  void read_functional(std::uint64_t phys, std::uint8_t* dst, std::uint64_t len) override;

 private:
  Ps access(tlm::tlm_command command, std::uint64_t phys, std::uint8_t* data, std::uint64_t len, Ps at,
           const DeviceMemoryCommand* cmd = nullptr);

  Transport memory_;
  DebugTransport debug_;
  PayloadPool payloads_;
};

}  // namespace spyre_dma::model
