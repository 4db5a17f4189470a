// The `sim` backend: the SystemC model of the device behind spyre_dma::Device.
//
// Simulated time advances only inside wait_for_interrupt() (Progress::kHostDriven): the engine
// then runs its completion path in the threads that wait, never in a background poller, and a
// workload submitted from one thread gives the same RBs, memory contents and simulated timestamps
// on every run, whatever the machine's load. Register writes take effect at the current simulated
// instant plus HostCostConfig::register_write_ns; a register read first lets earlier writes land
// (PCIe: a read does not pass posted writes).
//
// SystemC has one kernel per process: one simulated server may exist at a time (a second throws
// std::logic_error); each gets a fresh simulation context. A SimDevice built from a configuration
// is device 0 of a server of its own (the other devices of a topology sit idle); a server's
// devices together come from SimNode (spyre_dma/model/sim_node.hpp). All SystemC work runs on one
// thread the server owns; the Device methods may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "spyre_dma/backend/capabilities.hpp"
#include "spyre_dma/device.hpp"
#include "spyre_dma/device_core/bar0_device.hpp"
#include "spyre_dma/model/sim_config.hpp"
#include "spyre_dma/device_core/sparse_memory.hpp"

namespace spyre_dma::model {

class NodeSimulation;

class SimDevice final : public device_core::IommuDevice,
                        public backend::MemoryBackdoor,
                        public backend::StatisticsSource,
                        public backend::SimulatedClock,
                        public backend::MisbehaveControl {
 public:
  // `trace_path`: where to write a Perfetto / chrome://tracing JSON of the run's CBs (empty: none).
  // `wave_path`: a waveform of the model's state (.vcd or .fst; empty: none): each pipeline's CBs
  // queued, read tags in flight and the link's credits in use (docs/model.md, "Waveforms").
  explicit SimDevice(SimConfig config = {}, std::string trace_path = {}, std::string wave_path = {});
  ~SimDevice() override;
  SimDevice(const SimDevice&) = delete;
  SimDevice& operator=(const SimDevice&) = delete;

  DeviceDescription describe() const override;  // backend "sim", Progress::kHostDriven
  // Runs the server's simulation until this device interrupts. A zero timeout (a poll: the
  // engine's Op::done(), Stream::query()) is one step: it also returns at the next interrupt of
  // any other device of the server, so a thread that polls every device's engine in turn lets
  // each take up its work (staging copies, new CBs) as its device asks for it.
  std::uint32_t wait_for_interrupt(std::chrono::nanoseconds timeout) override;
  // Charges bytes / HostCostConfig::staging_gbps of simulated time before the next register write.
  void host_copied(std::uint64_t bytes) override;
  // Simulated time now, or when the host's staging copies charged so far are done if later.
  std::uint64_t host_time_ns() override;

  const SimConfig& config() const noexcept;
  // Simulated time now, in ns (backend::SimulatedClock).
  double now_ns() override;
  // The statistics tree (link, controller, memories) as JSON, with the resolved configuration
  // (backend::StatisticsSource).
  nlohmann::json statistics() override;
  // Backdoor to device memory, for checks (not used by the engine); backend::MemoryBackdoor.
  device_core::SparseMemory& memory();
  void backdoor_read(std::uint64_t phys, void* dst, std::size_t bytes) override;
  const void* backdoor_view(std::uint64_t phys, std::size_t bytes, std::size_t& got) override;
  void backdoor_write(std::uint64_t phys, const void* src, std::size_t bytes) override;
  // Arms a misbehaviour at the current simulated instant, as faults.misbehave does at the start
  // (backend::MisbehaveControl).
  void arm_misbehave(const device_core::Misbehave& misbehave) override;

  // Which device of its server this is (0-based; in a SimCluster, node n's device i is
  // n x topology.devices + i).
  unsigned index() const noexcept { return index_; }

 private:
  friend class SimNode;
  friend class SimCluster;
  SimDevice(std::shared_ptr<NodeSimulation> simulation, unsigned index);

  // A read first lets earlier writes land; a write is posted (it lands after the host's cost).
  std::uint64_t bar0_read(std::uint64_t offset, unsigned width) override;
  void bar0_write(std::uint64_t offset, std::uint64_t value, unsigned width) override;
  device_core::Iommu& device_iommu() override;

  std::shared_ptr<NodeSimulation> sim_;
  unsigned index_;
};

}  // namespace spyre_dma::model
