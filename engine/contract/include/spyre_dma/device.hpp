// The seam between the engine and a device backend.
//
// A Device is what the engine sees of one accelerator, and nothing more than real hardware would
// offer through VFIO:
//   * BAR0: 32- and 64-bit register reads and writes at the offsets of spyre_dma/hw/contract.hpp;
//   * DMA mapping: host memory becomes reachable by the device only through map(), which returns an
//     IOVA; the device reaches host memory through that table alone, and an access to an IOVA that is
//     not mapped (or mapped read-only and written) is an IOMMU fault the device reports in an RB;
//   * completion signalling: the device writes RBs into host memory (the engine polls them there),
//     and raises an interrupt per pipeline when that pipeline's IRQ_ENABLE register is set.
//
// Every backend (refdev, the SystemC model, the RTL model, a real card) implements this interface,
// so everything above it is the same engine code.
//
// Threading: register access, map/unmap and wait_for_interrupt may be called from several engine
// threads at once; an implementation serialises internally where it must.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace spyre_dma {

// Which direction(s) the device may access a mapping in.
enum class DmaAccess : std::uint8_t {
  kDeviceReads = 1,   // host-to-device data, CB rings
  kDeviceWrites = 2,  // device-to-host data
  kBoth = 3,          // RB rings, staging buffers
};

// How the device's time advances; decides how the engine waits for completions.
enum class Progress : std::uint8_t {
  // The device runs by itself (its own threads or silicon). The engine's poller thread watches the
  // RB rings and sleeps in wait_for_interrupt between bursts.
  kSelfTimed,
  // The device advances only inside wait_for_interrupt (a simulator whose time must not depend on
  // wall-clock scheduling). The engine then makes progress only from threads that wait on it
  // (synchronize, event and op waits, a wait for queue space), never from a background poller, so
  // that a workload submitted from one thread gives the same simulated timestamps on every run.
  kHostDriven,
};

struct DeviceDescription {
  std::string backend;  // "refdev", "sim", "rtl", "vfio", ...
  std::string name;     // a human-readable description of the instance
  Progress progress = Progress::kSelfTimed;
  // host_time_ns() gives the host's present on the device's clock, at the cost of a clock read
  // (not a register read).
  bool host_clock = false;
  // A thread that spins waiting for the device's RBs yields its core between looks: the device's
  // work runs on this host's cores, on threads that such a spin would keep waiting (a device
  // server in another process). Otherwise it spins without yielding, for the lowest latency.
  bool spin_yields = false;
};

class Device {
 public:
  virtual ~Device() = default;
  Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  virtual DeviceDescription describe() const = 0;

  // BAR0 access. Offsets and widths follow hw::reg; a read of an unassigned offset returns 0,
  // a write to it is ignored (as on hardware). Offsets beyond BAR0 throw std::out_of_range.
  virtual std::uint32_t read32(std::uint64_t offset) = 0;
  virtual void write32(std::uint64_t offset, std::uint32_t value) = 0;
  virtual std::uint64_t read64(std::uint64_t offset) = 0;
  virtual void write64(std::uint64_t offset, std::uint64_t value) = 0;

  // Makes [host, host + bytes) reachable by the device and returns the IOVA of `host`. The IOVA
  // keeps the host address's offset within its 4 KiB page (as an IOMMU maps whole pages), but the
  // device may touch only the bytes mapped. Throws std::invalid_argument for a null pointer or zero
  // size, std::runtime_error when the IOVA space is exhausted.
  virtual std::uint64_t map(void* host, std::size_t bytes, DmaAccess access) = 0;
  // Maps at an IOVA the caller chose, as VFIO's IOMMU API does (the host picks IOVAs there): how
  // a device server maps a client's memory at the IOVAs in the client's CBs. `iova` keeps host's
  // offset within its 4 KiB page; the mapping follows map()'s rules otherwise. Throws
  // std::invalid_argument for an IOVA the device cannot use (outside its IOVA space, overlapping a
  // mapping), naming it; a backend whose IOVAs are not the host's to choose throws
  // std::logic_error (the default).
  virtual std::uint64_t map_at(void* host, std::size_t bytes, DmaAccess access, std::uint64_t iova);
  // Removes the mapping that map() or map_at() returned `iova` for. After it returns, the device can no longer
  // reach those bytes. Throws std::invalid_argument for an IOVA that map() did not return.
  virtual void unmap(std::uint64_t iova) = 0;

  // Blocks until an interrupt is raised or `timeout` elapses, and returns the bit mask of the
  // pipelines (1 << hw::Pipeline) that raised one since the previous call (0 on timeout). A
  // kHostDriven device advances its time here: up to the next interrupt, or until it has nothing
  // left to do (then it returns 0 at once).
  virtual std::uint32_t wait_for_interrupt(std::chrono::nanoseconds timeout) = 0;
  // Makes a thread blocked in wait_for_interrupt (or, if none is, the next to call it with a
  // timeout) return now, with what is pending (0 if nothing). The engine calls it when it closes,
  // so that its poller, asleep with nothing in flight, need not sleep out its timeout: the way a
  // VFIO driver writes to its own eventfd to wake its poll(). Must not block or throw. The default
  // does nothing; the waiter then returns at its timeout, which the engine keeps short.
  virtual void wake_waiter() noexcept {}

  // The engine copied `bytes` between user memory and a staging buffer on the host (pageable or
  // unaligned copies), just before its next register writes. Real devices ignore it (the copy
  // took real time already); a simulated device charges the copy's time on its own clock before
  // the next register write takes effect, so staged copies cost what they would on a real host.
  virtual void host_copied(std::uint64_t bytes) { (void)bytes; }
  // The host's present on the device's clock (the clock of the RBs' timestamps and of
  // TIMESTAMP_NS): when what the host does now reaches the device, after the host work charged so
  // far (host_copied). What an op's host times are measured with (Op::host_start_ns). Meaningful
  // only where DeviceDescription::host_clock; 0 otherwise (the default).
  virtual std::uint64_t host_time_ns() { return 0; }
};

}  // namespace spyre_dma
