// What a data path of the DMA controller reaches, and how: host memory over the PCIe link, one
// TLP (or, in burst fidelity, one run of TLPs) per call, and device memory. The controller's
// front end (CB fetch, RB writes, MSI-X) and every data path (the SystemC one, the verilated RTL)
// go through the same ports, so the link's rules (request splitting at the completer, credits,
// ordering, the protocol checker, the root complex's IOMMU check) are applied once.
//
// Calls are made from SystemC processes at simulated time `at` (which may lie ahead of the kernel's
// time: the model decouples its processes in time); results carry the times things happened.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "spyre_dma/model/address_range.hpp"
#include "spyre_dma/model/sim_time.hpp"

namespace spyre_dma::model {

enum class CompletionStatus : std::uint8_t { kSuccess, kUnsupportedRequest, kCompleterAbort };

// Faults a requester asks the link and the completer to inject into one call (FaultConfig), and
// what the link charged.
struct TlpFaults {
  bool force_replay = false;     // the first TLP arrives with a bad LCRC and is replayed
  bool drop_completion = false;  // read: no completion ever comes back
  CompletionStatus status = CompletionStatus::kSuccess;  // read: the completer answers so
  bool poisoned = false;         // write: poisoned (EP); the root complex drops its data
  const std::vector<AddressRange>* poisoned_ranges = nullptr;  // burst write: its poisoned TLPs
};

class HostPort {
 public:
  struct Read {
    Ps done_ps = 0;  // when the last completion arrived (for a dropped one: when it was due)
    CompletionStatus status = CompletionStatus::kSuccess;
    bool completed = true;  // false: a completion was dropped
    std::uint32_t replays = 0;
    const std::uint8_t* host = nullptr;  // read without dst: where the bytes lie (see read())
    bool ok() const { return status == CompletionStatus::kSuccess && completed; }
  };
  struct Write {
    Ps sent_ps = 0;    // when it has left the device (the wire is free again)
    Ps landed_ps = 0;  // when it reached host memory
    bool ok = true;    // false: the root complex refused it (IOMMU)
    std::uint32_t replays = 0;
    std::uint8_t* host = nullptr;  // write without src: where the bytes go (see write())
  };
  // A memory read of [iova, iova + len) into dst, requested at `at`: one MRd, or with `burst` the
  // run of MRds of burst fidelity (device.read_tags of them in flight).
  // The direct form, dst null: the same transaction, checks and times, but the bytes stay where
  // they are, and Read::host says where that is in host memory (null where the root complex
  // refused the read), for the caller to move them itself, once, rather than through a buffer. The
  // pointer holds until the calling process next waits (the IOMMU keeps the mapping that long).
  virtual Read read(std::uint64_t iova, std::uint8_t* dst, std::uint64_t len, Ps at, bool burst = false,
                    const TlpFaults* faults = nullptr) = 0;
  // A posted write of [iova, iova + len) from src at `at` (one MWr, or the run of burst fidelity).
  // `ordered`: the host sees its effect only at its arrival (RBs), and a device reset since it was
  // issued drops it.
  // The direct form, src null, for a plain write (neither ordered nor poisoned): Write::host says
  // where the bytes go in host memory (null where the root complex refused the write), and the
  // caller puts them there before its process next waits.
  virtual Write write(std::uint64_t iova, const std::uint8_t* src, std::uint64_t len, Ps at, bool burst = false,
                      bool ordered = false, const TlpFaults* faults = nullptr) = 0;
  // The length of the completion (CplD) that answers a read's bytes from `addr` on, `left` of them
  // still to come: how the completer cuts a read (RCB and the completion size limit).
  virtual std::uint64_t completion_bytes(std::uint64_t addr, std::uint64_t left) const = 0;
  // The link's protocol checker: a read tag is in flight from `at`, free again at `at`; the RB of
  // CB `tag` on `pipeline` left (DMAI) or landed (DMAO) at `rb_ps`, its data done at `data_ps`.
  virtual void tag_issued(std::uint32_t tag, Ps at) = 0;
  virtual void tag_retired(std::uint32_t tag, Ps at) = 0;
  virtual void rb_after_data(const char* pipeline, std::uint32_t tag, Ps data_ps, Ps rb_ps) = 0;

 protected:
  ~HostPort() = default;
};

// The grain in which the RTL's memory controller runs a fill or a device copy: one burst after
// the other, each booked when the last is over. (Device memory's bus itself serves any access in
// whatever gaps it has, DeviceMemory.)
inline constexpr std::uint64_t kMemoryBurstBytes = 1024;

// A D2H reads device memory one MWr's piece at a time into the DMAO engine's read buffer, and a
// piece leaves it once its MWr is sent: at most this many pieces and bytes are read and not yet
// sent. 8 KiB covers the memory's latency at a Gen5 x16 link's rate; 64 pieces let MPS 128 fill it.
// The RTL is verilated with these two as its OUTSTANDING and READ_BUFFER parameters
// (rtl_bridge/CMakeLists.txt reads them here: keep each `constexpr <type> <name> = <number>;`).
inline constexpr std::size_t kDeviceReadsInFlight = 64;
inline constexpr std::uint64_t kDeviceReadBufferBytes = 8192;

// Device memory behind the controller: each call returns when the access is done. A read or write
// with a null buffer takes the access's time and moves no bytes: they move another way (HostPort's
// direct forms, read_functional), or not at all (a refused read's, which no device memory
// receives).
class DeviceMemoryPort {
 public:
  virtual Ps read(std::uint64_t phys, std::uint8_t* dst, std::uint64_t len, Ps at) = 0;
  virtual Ps write(std::uint64_t phys, const std::uint8_t* src, std::uint64_t len, Ps at) = 0;
  virtual Ps fill(std::uint64_t phys, std::uint32_t pattern, std::uint64_t len, Ps at) = 0;
  virtual Ps copy(std::uint64_t dst, std::uint64_t src, std::uint64_t len, Ps at) = 0;
  // A functional read: the bytes device memory holds now, taking no time. It moves the data of a
  // read booked with a null buffer in the same process step, once its destination is known.
  virtual void read_functional(std::uint64_t phys, std::uint8_t* dst, std::uint64_t len) = 0;

 protected:
  ~DeviceMemoryPort() = default;
};

}  // namespace spyre_dma::model
