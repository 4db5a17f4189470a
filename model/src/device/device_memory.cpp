#include "device/device_memory.hpp"

#include <algorithm>

#include "base/rates.hpp"

namespace spyre_dma::model {

using namespace sc_core;

DeviceMemory::DeviceMemory(sc_module_name name, const DeviceConfig& config)
    : sc_module(name),
      socket("socket"),
      storage_(config.memory_bytes),
      rate_(rate_for_gbps(config.dram_gbps)),
      latency_ps_(pcie::ns_to_ps(config.dram_latency_ns)) {
  socket.register_b_transport(this, &DeviceMemory::b_transport);
  socket.register_transport_dbg(this, &DeviceMemory::transport_dbg);
}

void DeviceMemory::b_transport(tlm::tlm_generic_payload& gp, sc_time& delay) {
  const pcie::Ps t0 = now_ps() + to_ps(delay);
  const std::uint64_t addr = gp.get_address(), len = gp.get_data_length();
  if (!storage_.contains(addr, len)) {
    gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    return;
  }
  if ((++accesses_ & 63) == 0) bus_.prune(now_ps());  // nothing books the past
  const DeviceMemoryCommand* cmd = gp.get_extension<DeviceMemoryCommand>();
  // Every access takes the bus time it needs in whatever gaps the bus has from t0 on, in any
  // grain: the bus serves its requesters interleaved, and gives none of its time away. An access
  // booked after others of the same stretch of time (a data path books as far ahead as it has
  // scheduled its work) shares what they left; cut into fixed bursts each in the first gap that
  // fits, it would skip the gaps narrower than a burst between small accesses, and a fill beside
  // two links' traffic ran at a fraction of the bus that was free. A copy reads and writes: twice
  // the bus time.
  const std::uint64_t per_byte = cmd && cmd->kind == DeviceMemoryCommand::Kind::kCopy ? 2 : 1;
  const pcie::Ps end = bus_.reserve_spread(t0, rate_.ceil_ps(per_byte * len));
  if (cmd) {
    if (cmd->kind == DeviceMemoryCommand::Kind::kFill32) storage_.fill32(addr, cmd->pattern, len);
    else storage_.copy(addr, cmd->source, len);
    bytes_written_ += len;
  } else if (gp.is_read()) {
    // A null buffer: the access's time alone, its bytes moved another way (DeviceMemoryPort). It
    // is counted all the same: it is the access.
    if (gp.get_data_ptr() != nullptr) storage_.read(addr, gp.get_data_ptr(), len);
    bytes_read_ += len;
  } else {
    if (gp.get_data_ptr() != nullptr) storage_.write(addr, gp.get_data_ptr(), len);
    bytes_written_ += len;
  }
  gp.set_response_status(tlm::TLM_OK_RESPONSE);
  delay = delay_until(end + latency_ps_);
}

unsigned DeviceMemory::transport_dbg(tlm::tlm_generic_payload& gp) {
  const std::uint64_t addr = gp.get_address(), len = gp.get_data_length();
  if (!storage_.contains(addr, len)) return 0;
  if (gp.is_read()) storage_.read(addr, gp.get_data_ptr(), len);
  else storage_.write(addr, gp.get_data_ptr(), len);
  return static_cast<unsigned>(len);
}

}  // namespace spyre_dma::model
