// The device's LPDDR5 behind the on-chip ring: sparse storage (a 128 GB device costs only what is
// touched) with a bandwidth and a latency. A TLM target: reads, writes and commands (fill, copy)
// arrive with the time the data path hands them over and return with the time the data is read or
// written. One bus carries them all, booked in time (pcie::Serializer, each in the gaps it finds).
#pragma once

#include <cstdint>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_target_socket.h>

#include "pcie/timing.hpp"
#include "spyre_dma/model/host_port.hpp"
#include "spyre_dma/model/sim_config.hpp"
#include "spyre_dma/device_core/sparse_memory.hpp"

namespace spyre_dma::model {

// Commands beyond plain read/write, carried in the payload's byte-enable-free "command" space.
struct DeviceMemoryCommand : tlm::tlm_extension<DeviceMemoryCommand> {
  enum class Kind : std::uint8_t { kFill32, kCopy } kind = Kind::kFill32;
  std::uint32_t pattern = 0;   // kFill32
  std::uint64_t source = 0;    // kCopy: physical source address
  tlm::tlm_extension_base* clone() const override { return new DeviceMemoryCommand(*this); }
  void copy_from(const tlm::tlm_extension_base& o) override {
    *this = static_cast<const DeviceMemoryCommand&>(o);
  }
};

class DeviceMemory : public sc_core::sc_module {
 public:

  tlm_utils::simple_target_socket<DeviceMemory> socket;

  DeviceMemory(sc_core::sc_module_name name, const DeviceConfig& config);

  device_core::SparseMemory& storage() noexcept { return storage_; }
  std::uint64_t bytes_read() const noexcept { return bytes_read_; }
  std::uint64_t bytes_written() const noexcept { return bytes_written_; }
  void prune(pcie::Ps ps) { bus_.prune(ps); }
  // An access that comes from outside the device (a peer's write or read through the device's
  // BAR), as one through the socket.
  void access(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) { b_transport(gp, delay); }

 private:
  void b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
  // Untimed and uncounted (the access that moves these bytes was booked and counted with a null
  // buffer): the bytes as they are now.
  unsigned transport_dbg(tlm::tlm_generic_payload& gp);

  device_core::SparseMemory storage_;
  pcie::Serializer bus_;
  pcie::PsPerByte rate_;
  pcie::Ps latency_ps_;
  std::uint64_t bytes_read_ = 0, bytes_written_ = 0;
  std::uint64_t accesses_ = 0;
};

}  // namespace spyre_dma::model
