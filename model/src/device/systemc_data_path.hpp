// The model's own data path ("systemc"): the DMAI read engine (MRd cut at MRRS and 4 KiB, a tag
// pool, completions into device memory), the DMAO write engine (device memory read once, MWr cut
// at MPS and 4 KiB), fills and device copies in device memory, the device's own data-path limit
// (device.dma_engine_gbps), and the TLP-level faults of FaultConfig. TLP fidelity moves every TLP
// through the host port; burst fidelity books one run of TLPs with the same arithmetic.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "spyre_dma/model/fault_injector.hpp"
#include "pcie/timing.hpp"
#include "base/debug_hooks.hpp"
#include "spyre_dma/model/data_path.hpp"

namespace spyre_dma::model {

class SystemcDataPath final : public DataPath {
 public:
  explicit SystemcDataPath(const DataPathContext& context);

  CbExecution execute(hw::Pipeline pipeline, const hw::ControlBlock& cb, const std::uint8_t* raw, Ps start) override;
  FetchTag fetch_tag(hw::Pipeline pipeline, Ps at) override;
  void fetch_done(hw::Pipeline pipeline, const FetchTag& tag, Ps at) override;
  DataPathCounters counters() const override { return counters_; }

 private:
  CbExecution device_side(const hw::ControlBlock& cb, Ps start);
  // A copy between host and device memory, checked.
  struct HostCopy {
    std::uint64_t phys = 0;   // device memory
    std::uint64_t iova = 0;   // host memory
    std::uint64_t bytes = 0;
  };
  // XLAT, device memory bounds and the IOMMU (ATS) before anything moves, then an injected IOMMU
  // fault: the copy, or nullopt with the failure in `run` (whose times start at `t`).
  std::optional<HostCopy> check_host_copy(const hw::ControlBlock& cb, Ps t, CbExecution& run);
  // The checked copy, its run started by check_host_copy.
  CbExecution h2d(const HostCopy& copy, Ps start, CbExecution run);
  CbExecution d2h(const HostCopy& copy, Ps start, CbExecution run);
  // Yields the calling SystemC thread while `at` lies more than `run_ahead` ahead of the kernel.
  void keep_pace(Ps at, Ps run_ahead = kRunAheadPs);
  // Whether keep_pace(at, run_ahead) would yield: what the thread has kept to itself must be out
  // before then.
  static bool ahead(Ps at, Ps run_ahead = kRunAheadPs) { return at > now_ps() + run_ahead; }
  static constexpr Ps kRunAheadPs = 2'000'000;  // 2 us, the controller's quantum
  // The device's own data-path limit (dma_engine_gbps), when configured.
  Ps through_dma_engine(Ps t, std::uint64_t bytes, Ps done);
  // Injected faults of an H2D's read requests in burst fidelity (one call stands for all).
  void burst_read_faults(std::uint64_t iova, std::uint64_t bytes, Ps t, CbExecution& run, TlpFaults& f);
  // TLP fidelity: the read requests of an H2D, each through a tag, into device memory.
  void h2d_requests(std::uint64_t iova, std::uint64_t phys, std::uint64_t bytes, Ps t, CbExecution& run, Ps& issue,
                    Ps& done, bool& ok);
  // TLP fidelity: the MWr of a D2H, each once its piece has been read from device memory into the
  // read buffer (kDeviceReadBufferBytes), which the MWrs sent make room in.
  void d2h_writes(std::uint64_t iova, std::uint64_t phys, std::uint64_t bytes, Ps t, CbExecution& run, Ps& sent,
                  Ps& landed, bool& ok);
  // A fill or a device copy a chunk (kPaceBytes) at a time, each chunk on the memory bus from
  // where the one before left it, booked once the kernel has reached that time; returns when the
  // last is done.
  Ps device_memory_work(const device_core::CbWork& w, Ps t);
  // 82 ns of the bus at LPDDR5's 200 GB/s: short enough that a D2H whose CB starts meanwhile is
  // not shut out for long (64 KiB put a device copy beside a D2H 5% off the RTL's time).
  static constexpr std::uint64_t kPaceBytes = 16u << 10;

  const SimConfig& config_;
  HostPort& host_;
  DeviceMemoryPort& memory_;
  device_core::Iommu& iommu_;
  FaultInjector& faults_;
  const DebugHooks hooks_;
  const device_core::FlatMemory layout_;
  const Ps completion_timeout_ps_;
  const Ps dram_latency_ps_;
  pcie::TagPool tags_;
  pcie::Serializer dma_engine_;  // the device's own data-path limit (dma_engine_gbps)
  const pcie::PsPerByte dma_engine_rate_;
  const bool dma_engine_limited_;
  // Host copies move their bytes in place, between host and device memory (HostPort's direct
  // forms), except poisoned MWrs: the root complex keeps their bytes out of host memory and
  // writes the rest, so they carry the bytes in this buffer. Grown, never shrunk.
  std::vector<std::uint8_t> poisoned_data_;
  std::uint8_t* poisoned_buffer(std::uint64_t bytes);
  DataPathCounters counters_;
};

}  // namespace spyre_dma::model
