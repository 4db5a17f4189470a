// A minimal host driver for the differential tests: programs the DMAI and DMAO rings of a
// SimDevice, submits hand-built CBs, and collects the RBs as the device wrote them. It talks to
// the device only through BAR0, mapped host memory and interrupts, as the engine does, so the
// SystemC and the RTL data path see exactly the same stimulus.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include "spyre_dma/hw/contract.hpp"
#include "spyre_dma/model/sim_device.hpp"
#include "spyre_dma/rtl/backend.hpp"

namespace spyre_dma::rtl::test {

// The RTL data path joins the model's data paths once per program (the registry would do it for a
// program that opens backends by name; these open SimDevice directly).
inline const bool kRtlDataPathRegistered = [] {
  spyre_dma::rtl::register_data_path();
  return true;
}();

inline constexpr std::uint32_t kRingSlots = 256;

// Page-aligned host memory.
struct HostBuffer {
  explicit HostBuffer(std::size_t n)
      : bytes(n), data(static_cast<std::uint8_t*>(std::aligned_alloc(4096, (n + 4095) / 4096 * 4096))) {
    if (!data) throw std::bad_alloc();
    std::memset(data, 0, (n + 4095) / 4096 * 4096);
  }
  ~HostBuffer() { std::free(data); }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  std::size_t bytes;
  std::uint8_t* data;
};

class RingDriver {
 public:
  explicit RingDriver(model::SimDevice& dev) : dev_(dev) {
    dev_.write32(hw::reg::kControl, hw::kControlEnable);
    for (hw::Pipeline p : {hw::Pipeline::kDmai, hw::Pipeline::kDmao}) {
      Ring& r = ring(p);
      r.cbs = std::make_unique<HostBuffer>(kRingSlots * hw::kCbBytes);
      r.rbs = std::make_unique<HostBuffer>(kRingSlots * hw::kRbBytes);
      const std::uint64_t cb_iova = dev_.map(r.cbs->data, r.cbs->bytes, DmaAccess::kDeviceReads);
      r.rb_iova = dev_.map(r.rbs->data, r.rbs->bytes, DmaAccess::kBoth);
      dev_.write64(hw::reg::pipe(p, hw::reg::kCbRingBase_64), cb_iova);
      dev_.write32(hw::reg::pipe(p, hw::reg::kCbRingSize), kRingSlots);
      dev_.write64(hw::reg::pipe(p, hw::reg::kRbRingBase_64), r.rb_iova);
      dev_.write32(hw::reg::pipe(p, hw::reg::kRbRingSize), kRingSlots);
      dev_.write32(hw::reg::pipe(p, hw::reg::kIrqEnable), 1);
      dev_.write32(hw::reg::pipe(p, hw::reg::kIrqVector), static_cast<std::uint32_t>(p));
      dev_.write32(hw::reg::pipe(p, hw::reg::kQueueControl), hw::kQueueEnable);
    }
  }

  // Queues a CB (rung with the next ring()).
  void push(hw::Pipeline p, const hw::ControlBlock& cb) {
    Ring& r = ring(p);
    if (r.pi - r.consumed >= kRingSlots) throw std::logic_error("RingDriver: ring full");
    const hw::CbBytes b = hw::encode(cb);
    std::memcpy(r.cbs->data + std::size_t(r.pi % kRingSlots) * hw::kCbBytes, b.data(), b.size());
    ++r.pi;
  }
  void doorbell(hw::Pipeline p) { dev_.write32(hw::reg::pipe(p, hw::reg::kCbPi), ring(p).pi); }

  // Waits (in simulated time) until every pushed CB has its RB; returns them per pipeline.
  std::vector<hw::ResponseBlock> drain(hw::Pipeline p) {
    std::vector<hw::ResponseBlock> out;
    Ring& r = ring(p);
    for (unsigned spins = 0; r.consumed != r.pi; ++spins) {
      if (spins > 1'000'000) throw std::runtime_error("RingDriver: no RB came");
      const std::uint8_t* slot = r.rbs->data + std::size_t(r.consumed % kRingSlots) * hw::kRbBytes;
      if (hw::rb_phase(slot) != hw::expected_phase(r.consumed, kRingSlots)) {
        dev_.wait_for_interrupt(std::chrono::seconds(10));
        continue;
      }
      const hw::RbDecodeResult d = hw::decode_rb(slot);
      if (d.error) throw std::runtime_error("RingDriver: malformed RB: " + std::string(*d.error));
      out.push_back(d.rb);
      ++r.consumed;
      dev_.write32(hw::reg::pipe(p, hw::reg::kRbCi), r.consumed);
    }
    return out;
  }

 private:
  struct Ring {
    std::unique_ptr<HostBuffer> cbs, rbs;
    std::uint64_t rb_iova = 0;
    std::uint32_t pi = 0, consumed = 0;
  };
  Ring& ring(hw::Pipeline p) { return rings_[p == hw::Pipeline::kDmai ? 0 : 1]; }

  model::SimDevice& dev_;
  Ring rings_[2];
};

// A CB with one XLAT entry per segment s, mapping device VA segment s to physical base
// s * 1 GiB, read-write, 1 GiB long.
inline hw::ControlBlock cb_with_xlat(std::uint32_t tag) {
  hw::ControlBlock cb;
  cb.tag = tag;
  for (unsigned s = 0; s < hw::kNumXlatEntries; ++s) {
    cb.xlat[s].mode = hw::XlatMode::kReadWrite;
    cb.xlat[s].base_flits = (std::uint64_t(s) << 30) / hw::kFlitBytes;
    cb.xlat[s].length_flits = static_cast<std::uint32_t>((1ull << 30) / hw::kFlitBytes);
  }
  return cb;
}

inline void set_length(hw::DmaSection& s, std::uint64_t bytes) {
  s.length_flits = static_cast<std::uint32_t>(hw::flits_for(bytes));
  s.last_flit_bytes = static_cast<std::uint8_t>(bytes % hw::kFlitBytes);
}

}  // namespace spyre_dma::rtl::test
