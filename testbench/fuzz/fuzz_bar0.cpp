// The model's BAR0 register interface, driven by a hostile or buggy host.
//
// Each input is decoded into a bounded program of host actions applied to one elaborated model
// (SimTop: root complex and IOMMU, PCIe link with its protocol checker, DMA controller, device
// memory): 32- and 64-bit register writes and reads at any BAR0 offset, advances of simulated
// time, waits for an interrupt, writes into a host buffer the device can reach (raw bytes,
// control blocks built from the input, ring set-ups). Register accesses follow SimDevice's rules:
// a write lands one register-write cost after it is issued, a read first lets earlier writes land
// and returns behind the device's posted writes.
//
// SystemC elaborates a model once per simulation context, so one model serves every input of the
// process: after each input the harness resets the device (CONTROL.RESET), lets it drain and
// zeroes the host buffer, so that each input starts from a device that reads as reset.
//
// A finding is: a sanitizer report, any exception out of the model (ProtocolError from the link's
// checker included), identification registers that read wrong, a device that is still busy long
// after a reset, or a reset that leaves state behind. Bounds per input: kMaxOps actions and
// kInputBudgetNs of simulated time.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <systemc>

#include "fuzz_support.hpp"
#include "sim/kernel.hpp"
#include "base/rates.hpp"
#include "sim/sim_top.hpp"
#include "spyre_dma/hw/contract.hpp"
#include "spyre_dma/model/sim_config.hpp"
#include "spyre_dma/device_core/iommu.hpp"

namespace {

using namespace spyre_dma;
using namespace spyre_dma::model;
using pcie::Ps;
using spyre_dma::fuzz::finding;
using spyre_dma::fuzz::require;

constexpr std::size_t kMaxOps = 256;
constexpr Ps kPsPerNs = 1000;
constexpr Ps kInputBudgetPs = 2'000'000 * kPsPerNs;   // 2 ms of simulated time per input
constexpr Ps kResetDrainPs = 50'000'000 * kPsPerNs;   // a reset must be quiet within 50 ms
constexpr std::size_t kHostBytes = 64 << 10;          // host memory the device may reach
constexpr std::size_t kHostPage = 4096;

// The model as the harness builds it: the default preset with a small device memory and CB size,
// so that no input can make the process hold more than a few tens of MiB of device pages.
SimConfig harness_config() {
  SimConfig c;
  c.device.memory_bytes = 32ull << 20;
  c.device.usable_bytes = 32ull << 20;
  c.device.max_cb_bytes = 1u << 20;
  return c;
}

// Every register of the contract (both halves of the 64-bit ones), global and per pipeline.
std::vector<std::uint64_t> register_table() {
  using namespace hw::reg;
  std::vector<std::uint64_t> t = {kId, kVersion, kCapabilities_64, kCapabilities_64 + 4, kDepthCompute,
                                  kDepthDmai, kDepthDmao, kMaxCbBytes, kNumTags, kDeviceMemBytes_64,
                                  kDeviceMemBytes_64 + 4, kDeviceMemUsable_64, kDeviceMemUsable_64 + 4,
                                  kTimestampNs_64, kTimestampNs_64 + 4, kControl, kStatus, kFatalCause,
                                  kFatalDetail_64, kFatalDetail_64 + 4};
  for (unsigned p = 0; p < hw::kNumPipelines; ++p) {
    for (std::uint64_t r : {kCbRingBase_64, kCbRingBase_64 + 4, kCbRingSize, kCbPi, kCbCi, kRbRingBase_64,
                            kRbRingBase_64 + 4, kRbRingSize, kRbPi, kRbCi, kIrqEnable, kIrqVector, kErrorStatus,
                            kQueueControl}) {
      t.push_back(pipe(static_cast<hw::Pipeline>(p), r));
    }
  }
  return t;
}

// Reads the input front to back; zeros once it runs out.
class Input {
 public:
  Input(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  bool done() const { return pos_ >= size_; }
  std::uint64_t take(unsigned bytes) {
    std::uint64_t v = 0;
    for (unsigned i = 0; i < bytes; ++i) v |= std::uint64_t(pos_ < size_ ? data_[pos_++] : 0) << (8 * i);
    return v;
  }
  std::uint8_t byte() { return static_cast<std::uint8_t>(take(1)); }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

class Bench {
 public:
  Bench() : config_(harness_config()), registers_(register_table()) {
    host_ = static_cast<std::uint8_t*>(std::aligned_alloc(kHostPage, kHostBytes));
    if (!host_) finding("harness: no host buffer");
    std::memset(host_, 0, kHostBytes);
    fresh_kernel();
    top_ = std::make_unique<SimTop>(
        "fuzz", config_, std::vector<device_core::Iommu*>{&iommu_},
        [this](unsigned, std::uint32_t vector) {
          irq_mask_ |= 1u << (vector & 31u);
          sc_core::sc_pause();
        },
        std::string());
    iova_ = iommu_.map(host_, kHostBytes, DmaAccess::kBoth);
    require(iova_ % kHostPage == 0, "harness: the host buffer's IOVA is page aligned");
  }

  void run(Input& in) {
    budget_end_ = now() + kInputBudgetPs;
    for (std::size_t ops = 0; ops < kMaxOps && !in.done() && now() < budget_end_; ++ops) step(in);
    reset_device();
  }

 private:
  static Ps now() { return to_ps(sc_core::sc_time_stamp()); }

  // Runs the model until `done()`, nothing is left to simulate, or simulated time `limit`.
  void run_until(const std::function<bool()>& done, Ps limit) {
    while (!done() && sc_core::sc_pending_activity() && now() < limit) {
      sc_core::sc_start(from_ps(limit - now()));
    }
  }
  // Runs the model to simulated time `at` (at most to `limit`); interrupts on the way stay pending.
  void run_to(Ps at, Ps limit) {
    at = std::min(at, limit);
    while (now() < at) sc_core::sc_start(from_ps(at - now()));
  }

  std::uint64_t offset(Input& in, unsigned width) {
    const std::uint8_t sel = in.byte();
    if (sel < 0xF0) return registers_[sel % registers_.size()];
    return in.take(3) % (hw::reg::kBar0Bytes - width + 1);  // anywhere in the BAR, unaligned too
  }

  void write(std::uint64_t off, std::uint64_t value, unsigned width) {
    if (off + width > hw::reg::kBar0Bytes) finding("harness: write beyond BAR0");
    top_->device(0).post_write(off, value, width);
  }

  // As SimDevice::read_register: earlier writes land first; the completion returns behind the
  // device's posted writes, and the link's checker holds it to that.
  std::uint64_t read(std::uint64_t off, unsigned width, Ps limit) {
    DeviceModel& device = top_->device(0);
    if (device.writes_pending()) {
      device.pause_when_written();
      run_until([&] { return !device.writes_pending(); }, limit);
    }
    ProtocolChecker& checker = device.link.checker();
    const Ps sent = now();
    run_to(checker.posted_arrival_bound(LinkDirection::kUp, sent), limit);
    const std::uint64_t value = device.controller.read_register(off, width);
    checker.completion_order(LinkDirection::kUp, sent, now(), "BAR0 read completion");
    check_identity(off, width, value);
    return value;
  }

  void check_identity(std::uint64_t off, unsigned width, std::uint64_t value) {
    using namespace hw::reg;
    // A 64-bit read of a 32-bit register returns it in the low half (and the next one above).
    const std::uint64_t low = value & 0xFFFF'FFFFull;
    if (off == kId) require(low == ((std::uint64_t(hw::kPciDeviceSpyrePf) << 16) | hw::kPciVendorIbm), "ID reads the Spyre PF");
    if (off == kVersion) require(low == hw::kContractVersion, "VERSION reads the contract version");
    if (off == kNumTags) require(low == hw::kMaxTag, "NUM_TAGS reads kMaxTag");
    if (off == kMaxCbBytes) require(low == config_.device.max_cb_bytes, "MAX_CB_BYTES reads the configuration");
    if (off == kDeviceMemBytes_64 && width == 8) require(value == config_.device.memory_bytes, "DEVICE_MEM_BYTES");
    if (width == 4) require(value <= 0xFFFF'FFFFull, "a 32-bit read returns 32 bits");
  }

  // A control block for the host buffer, built from the input with fields steered towards what
  // the device can carry out (small lengths, addresses inside the host buffer and device memory,
  // a valid XLAT entry), so that inputs reach the data paths and not only the decoder.
  hw::CbBytes control_block(Input& in) {
    hw::ControlBlock cb;
    const std::uint8_t kind = in.byte();
    cb.tag = static_cast<std::uint32_t>(in.take(2)) % (hw::kMaxTag + 1);
    const std::uint8_t flags = in.byte();
    cb.barrier = flags & 1;
    cb.interrupt = flags & 2;
    const std::uint32_t length = 1 + in.byte() % 64;                       // flits
    const std::uint64_t host_flit = in.take(2) % (kHostBytes / hw::kFlitBytes);
    hw::DeviceVa va{static_cast<std::uint8_t>(in.byte() % hw::kNumXlatEntries),
                    static_cast<std::uint32_t>(in.take(2))};
    hw::DmaSection s;
    s.device = va;
    s.length_flits = length;
    s.last_flit_bytes = (flags & 4) ? static_cast<std::uint8_t>(in.byte() % hw::kFlitBytes) : 0;
    s.host_iova_flits = iova_ / hw::kFlitBytes + host_flit;
    s.fill_pattern = static_cast<std::uint32_t>(in.take(4));
    s.source = {va.segment, static_cast<std::uint32_t>(in.take(2))};
    switch (kind % 6) {
      case 0: s.type = hw::DmaType::kImmediate; cb.dmi = s; break;
      case 1: s.type = hw::DmaType::kMemoryFill; cb.dmi = s; break;
      case 2: s.type = hw::DmaType::kDeviceCopy; cb.dmi = s; break;
      case 3: s.type = hw::DmaType::kImmediate; cb.dmo = s; break;
      case 4:
        cb.cmpt.type = hw::ComputeType::kTimed;
        cb.cmpt.duration_ns = in.take(2);
        break;
      default: {  // a raw CB straight from the input: the device's decoder sees anything
        hw::CbBytes raw{};
        for (auto& b : raw) b = in.byte();
        return raw;
      }
    }
    // One entry covers the section's segment; its physical base lies inside device memory.
    const std::uint64_t memory_flits = config_.device.memory_bytes / hw::kFlitBytes;
    hw::XlatEntry& e = cb.xlat[va.segment];
    e.mode = (flags & 8) ? hw::XlatMode::kReadOnly : hw::XlatMode::kReadWrite;
    e.base_flits = in.take(2) % memory_flits;
    e.length_flits = static_cast<std::uint32_t>(in.take(3) % (hw::kSegmentFlits + 1));
    return hw::encode(cb);
  }

  void setup_rings(Input& in) {
    using namespace hw::reg;
    const auto p = static_cast<hw::Pipeline>(in.byte() % hw::kNumPipelines);
    const std::uint64_t pages = kHostBytes / kHostPage;
    const std::uint64_t cb_base = iova_ + (in.byte() % pages) * kHostPage;
    const std::uint64_t rb_base = iova_ + (in.byte() % pages) * kHostPage;
    const std::uint32_t cb_size = 1u << (in.byte() % 6);
    const std::uint32_t rb_size = 1u << (in.byte() % 7);
    const std::uint8_t flags = in.byte();
    write(pipe(p, kCbRingBase_64), cb_base, 8);
    write(pipe(p, kCbRingSize), cb_size, 4);
    write(pipe(p, kRbRingBase_64), rb_base, 8);
    write(pipe(p, kRbRingSize), rb_size, 4);
    write(pipe(p, kIrqEnable), flags & 1, 4);
    write(pipe(p, kIrqVector), static_cast<std::uint32_t>(p), 4);
    write(pipe(p, kQueueControl), hw::kQueueEnable, 4);
    write(kControl, hw::kControlEnable, 4);
  }

  void step(Input& in) {
    switch (in.byte() % 9) {
      case 0: { const std::uint64_t o = offset(in, 4); write(o, in.take(4), 4); break; }
      case 1: { const std::uint64_t o = offset(in, 8); write(o, in.take(8), 8); break; }
      case 2: read(offset(in, 4), 4, budget_end_); break;
      case 3: read(offset(in, 8), 8, budget_end_); break;
      case 4: run_to(now() + in.take(2) * 16 * kPsPerNs, budget_end_); break;
      case 5: {  // the engine's wait_for_interrupt(), with a timeout
        const Ps limit = std::min(budget_end_, now() + (1 + in.take(2)) * kPsPerNs * 16);
        run_until([&] { return irq_mask_ != 0; }, limit);
        irq_mask_ = 0;
        break;
      }
      case 6: {  // raw bytes into host memory (CBs, RB slots, data)
        const std::size_t at = in.take(2) % kHostBytes;
        const std::size_t n = std::min<std::size_t>(1 + in.byte() % 128, kHostBytes - at);
        for (std::size_t i = 0; i < n; ++i) host_[at + i] = in.byte();
        break;
      }
      case 7: {  // a CB into a slot of the host buffer
        const std::size_t slot = in.take(2) % (kHostBytes / hw::kCbBytes);
        const hw::CbBytes cb = control_block(in);
        std::memcpy(host_ + slot * hw::kCbBytes, cb.data(), cb.size());
        break;
      }
      default: setup_rings(in); break;
    }
  }

  // CONTROL.RESET, then the device must settle: no activity left well within kResetDrainPs, every
  // index and the status back at zero.
  void reset_device() {
    using namespace hw::reg;
    write(kControl, hw::kControlReset, 4);
    const Ps limit = now() + kResetDrainPs;
    top_->device(0).pause_when_written();
    run_until([] { return false; }, limit);
    if (sc_core::sc_pending_activity()) finding("the device is still busy 50 ms of simulated time after CONTROL.RESET");
    require(read(kStatus, 4, limit) == 0, "STATUS reads 0 after a reset (not enabled, not fatal)");
    for (unsigned i = 0; i < hw::kNumPipelines; ++i) {
      const auto p = static_cast<hw::Pipeline>(i);
      require(read(pipe(p, kCbPi), 4, limit) == 0 && read(pipe(p, kCbCi), 4, limit) == 0 &&
                  read(pipe(p, kRbPi), 4, limit) == 0 && read(pipe(p, kRbCi), 4, limit) == 0,
              "ring indices read 0 after a reset");
      require(read(pipe(p, kQueueControl), 4, limit) == 0 && read(pipe(p, kErrorStatus), 4, limit) == 0,
              "queue control and error status read 0 after a reset");
    }
    irq_mask_ = 0;
    std::memset(host_, 0, kHostBytes);
  }

  SimConfig config_;
  std::vector<std::uint64_t> registers_;
  device_core::Iommu iommu_;
  std::uint8_t* host_ = nullptr;  // freed with the process: the model may refer to it to the end
  std::uint64_t iova_ = 0;
  std::unique_ptr<SimTop> top_;
  std::uint32_t irq_mask_ = 0;
  Ps budget_end_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // Built on first use and kept for the process (a SystemC model elaborates once per context).
  static Bench* bench = new Bench();
  Input in(data, size);
  try {
    bench->run(in);
  } catch (const std::exception& e) {
    finding(std::string("the model threw ") + typeid(e).name() + ": " + e.what());
  }
  return 0;
}
