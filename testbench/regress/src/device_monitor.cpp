#include "device_monitor.hpp"

#include <cstring>

#include <fmt/format.h>

namespace spyre_dma::regress {

DeviceMonitor::DeviceMonitor(std::shared_ptr<Device> inner, Findings& findings)
    : inner_(std::move(inner)), findings_(findings) {}

void DeviceMonitor::report(const std::string& message) { findings_.add(FindingKind::kInterface, -1, message); }

void DeviceMonitor::write32(std::uint64_t offset, std::uint32_t value) {
  // The CB ring must be observed before the device may fetch from it: a self-timed device
  // starts at once, and the engine rewrites a slot as soon as it is retired.
  observe_write(offset, value, 4);
  inner_->write32(offset, value);
}

void DeviceMonitor::write64(std::uint64_t offset, std::uint64_t value) {
  observe_write(offset, value, 8);
  inner_->write64(offset, value);
}

std::uint64_t DeviceMonitor::map(void* host, std::size_t bytes, DmaAccess access) {
  const std::uint64_t iova = inner_->map(host, bytes, access);
  std::lock_guard<std::mutex> g(mu_);
  maps_[iova] = Mapping{static_cast<std::uint8_t*>(host), bytes, access};
  return iova;
}

void DeviceMonitor::unmap(std::uint64_t iova) {
  {
    std::lock_guard<std::mutex> g(mu_);
    auto it = maps_.find(iova);
    if (it != maps_.end()) {
      const std::uint64_t hi = iova + it->second.bytes;
      for (const auto& [tag, l] : live_) {
        // A device that reset itself (STATUS fatal) has dropped every CB: the engine then
        // releases their buffers before it resets the device.
        if (l.bytes > 0 && l.iova < hi && iova < l.iova + l.bytes && !answered(l.pipe, tag) &&
            (inner_->read32(hw::reg::kStatus) & hw::kStatusFatal) == 0) {
          report(fmt::format("unmap of IOVA 0x{:x} (+{}) while CB tag {} on pipeline {} still uses 0x{:x} (+{})", iova,
                             it->second.bytes, tag, static_cast<int>(l.pipe), l.iova, l.bytes));
          break;
        }
      }
      maps_.erase(it);
    }
  }
  inner_->unmap(iova);
}

bool DeviceMonitor::answered(hw::Pipeline pipe, std::uint32_t tag) const {
  // The engine may release a CB's buffers as soon as it has read the CB's RB, before it tells the
  // device so through RB_CI: an RB in the ring for this lap (its phase bit says so) ends the CB.
  const Ring& r = rings_[static_cast<unsigned>(pipe)];
  if (r.rb_size == 0 || !hw::is_power_of_two(r.rb_size)) return false;
  const std::uint8_t* ring = host_of(r.rb_base, std::uint64_t{r.rb_size} * hw::kRbBytes);
  if (!ring) return false;
  for (std::uint32_t i = r.rb_ci; i != r.rb_ci + r.rb_size; ++i) {
    const hw::RbDecodeResult d = hw::decode_rb(ring + std::uint64_t{i & (r.rb_size - 1)} * hw::kRbBytes);
    if (d.error || d.rb.phase != hw::expected_phase(i, r.rb_size)) return false;  // not written yet
    if (d.rb.tag == tag) return true;
  }
  return false;
}

std::uint8_t* DeviceMonitor::host_of(std::uint64_t iova, std::uint64_t bytes, const Mapping** m) const {
  auto it = maps_.upper_bound(iova);
  if (it == maps_.begin()) return nullptr;
  --it;
  const std::uint64_t base = it->first;
  if (iova - base > it->second.bytes || bytes > it->second.bytes - (iova - base)) return nullptr;
  if (m) *m = &it->second;
  return it->second.host + (iova - base);
}

std::uint64_t DeviceMonitor::hash(const std::uint8_t* p, std::uint64_t n) {
  counters_.bytes_hashed += n;
  return hash_bytes(p, static_cast<std::size_t>(n));
}

void DeviceMonitor::observe_write(std::uint64_t offset, std::uint64_t value, unsigned width) {
  using namespace hw::reg;
  std::lock_guard<std::mutex> g(mu_);
  if (offset == kControl) {
    if (value & hw::kControlReset) {  // the device drops every CB: nothing is live any more
      live_.clear();
      for (Ring& r : rings_) r.cb_pi = r.rb_ci = r.retired = 0, r.fence = 0;
      ++counters_.resets;
    }
    return;
  }
  if (offset < kPipeBase || offset >= kPipeBase + hw::kNumPipelines * kPipeStride) return;
  const auto pipe = static_cast<unsigned>((offset - kPipeBase) / kPipeStride);
  const std::uint64_t reg = (offset - kPipeBase) % kPipeStride;
  Ring& r = rings_[pipe];
  const auto v32 = static_cast<std::uint32_t>(value);
  switch (reg) {
    case kCbRingBase_64: r.cb_base = width == 8 ? value : (r.cb_base & ~0xffffffffull) | v32; break;
    case kCbRingBase_64 + 4: r.cb_base = (r.cb_base & 0xffffffffull) | (std::uint64_t{v32} << 32); break;
    case kRbRingBase_64: r.rb_base = width == 8 ? value : (r.rb_base & ~0xffffffffull) | v32; break;
    case kRbRingBase_64 + 4: r.rb_base = (r.rb_base & 0xffffffffull) | (std::uint64_t{v32} << 32); break;
    case kCbRingSize: r.cb_size = v32; break;
    case kRbRingSize: r.rb_size = v32; break;
    case kCbPi: doorbell(pipe, v32); break;
    case kRbCi: consumed(pipe, v32); break;
    default: break;
  }
}

void DeviceMonitor::doorbell(unsigned pipe, std::uint32_t new_pi) {
  Ring& r = rings_[pipe];
  ++counters_.doorbells;
  ++rung_;
  if (r.cb_size == 0 || !hw::is_power_of_two(r.cb_size)) {
    r.cb_pi = new_pi;
    return;
  }
  const std::uint8_t* ring = host_of(r.cb_base, std::uint64_t{r.cb_size} * hw::kCbBytes);
  if (!ring) {
    if (new_pi != r.cb_pi) report(fmt::format("pipeline {}: doorbell with the CB ring (IOVA 0x{:x}) not mapped", pipe, r.cb_base));
    r.cb_pi = new_pi;
    return;
  }
  for (std::uint32_t i = r.cb_pi; i != new_pi; ++i) {
    const hw::CbDecodeResult d = hw::decode_cb(ring + std::uint64_t{i & (r.cb_size - 1)} * hw::kCbBytes);
    ++counters_.cbs;
    if (d.error) continue;  // the device answers a malformed CB itself; nothing of it is live host memory
    const hw::ControlBlock& cb = d.cb;
    if (cb.barrier) ++counters_.barriers;
    if (live_.count(cb.tag)) {
      report(fmt::format("pipeline {}: CB index {} reuses tag {} while its earlier CB is live", pipe, i, cb.tag));
    }
    Live l;
    l.pipe = static_cast<hw::Pipeline>(pipe);
    l.rung = rung_;
    if (cb.barrier) r.fence = rung_;
    const bool h2d = cb.dmi.type == hw::DmaType::kImmediate;
    const bool d2h = cb.dmo.type == hw::DmaType::kImmediate;
    if (h2d || d2h) {
      const hw::DmaSection& s = h2d ? cb.dmi : cb.dmo;
      l.iova = s.host_iova_flits * hw::kFlitBytes;
      l.bytes = s.byte_count();
      l.device_writes_host = d2h;
      const Mapping* m = nullptr;
      const std::uint8_t* host = host_of(l.iova, l.bytes, &m);
      const auto need = d2h ? DmaAccess::kDeviceWrites : DmaAccess::kDeviceReads;
      if (!host) {
        report(fmt::format("pipeline {}: CB tag {} points the device at unmapped host memory 0x{:x} (+{})", pipe,
                           cb.tag, l.iova, l.bytes));
      } else if ((static_cast<unsigned>(m->access) & static_cast<unsigned>(need)) == 0) {
        report(fmt::format("pipeline {}: CB tag {} needs {} access to 0x{:x} (+{}), mapped without it", pipe, cb.tag,
                           d2h ? "write" : "read", l.iova, l.bytes));
      } else if (h2d) {
        l.hash = hash(host, l.bytes);
      }
      for (const auto& [tag, o] : live_) {
        if (o.bytes == 0 || !(o.iova < l.iova + l.bytes && l.iova < o.iova + o.bytes)) continue;
        // A BARRIER CB, and every later CB of its pipeline, starts only after the CBs of other
        // pipelines rung before it have retired: sharing host memory with them is ordered.
        if (o.pipe != l.pipe && o.rung < r.fence) {
          // This H2D reads what that live D2H is still to write: its bytes change legitimately.
          if (o.device_writes_host) l.hash = 0;
          continue;
        }
        if (o.device_writes_host || l.device_writes_host) {
          report(fmt::format("pipeline {}: CB tag {} uses host 0x{:x} (+{}) that live CB tag {} also uses, one of them "
                             "writing: a buffer reused while its CB is live",
                             pipe, cb.tag, l.iova, l.bytes, tag));
          break;
        }
      }
    }
    live_[cb.tag] = l;
  }
  counters_.max_live = std::max<std::uint64_t>(counters_.max_live, live_.size());
  r.cb_pi = new_pi;
}

std::uint64_t DeviceMonitor::rb_digest() const {
  std::lock_guard<std::mutex> g(mu_);
  Digest d;
  for (const Ring& r : rings_) d.add(r.rbs.value());
  return d.value();
}

void DeviceMonitor::consumed(unsigned pipe, std::uint32_t new_ci) {
  Ring& r = rings_[pipe];
  if (r.rb_size == 0 || !hw::is_power_of_two(r.rb_size)) {
    r.rb_ci = new_ci;
    return;
  }
  const std::uint8_t* ring = host_of(r.rb_base, std::uint64_t{r.rb_size} * hw::kRbBytes);
  if (!ring) {
    r.rb_ci = new_ci;
    return;
  }
  for (std::uint32_t i = r.rb_ci; i != new_ci; ++i) {
    const std::uint8_t* raw = ring + std::uint64_t{i & (r.rb_size - 1)} * hw::kRbBytes;
    r.rbs.add(raw, hw::kRbBytes);
    const hw::RbDecodeResult d = hw::decode_rb(raw);
    ++counters_.rbs;
    ++r.retired;
    if (d.error) continue;  // the engine counts it as a device fault; nothing to retire
    const hw::ResponseBlock& rb = d.rb;
    ++counters_.rb_status[static_cast<std::size_t>(rb.status) & 3];
    auto it = live_.find(rb.tag);
    if (it == live_.end() || static_cast<unsigned>(it->second.pipe) != pipe) {
      // A malformed CB was never tracked, so its RB finds nothing: only report tags the monitor
      // knows were never issued on this pipeline.
      if (rb.error != hw::ErrorKind::kMalformedCb) {
        report(fmt::format("pipeline {}: RB index {} for tag {}, which has no live CB on this pipeline", pipe, i,
                           rb.tag));
      }
      continue;
    }
    const Live& l = it->second;
    if (l.hash != 0 && !l.device_writes_host) {
      if (const std::uint8_t* host = host_of(l.iova, l.bytes)) {
        if (hash(host, l.bytes) != l.hash) {
          report(fmt::format("pipeline {}: host bytes 0x{:x} (+{}) of H2D CB tag {} changed while the CB was live", pipe,
                             l.iova, l.bytes, rb.tag));
        }
      }
    }
    live_.erase(it);
  }
  r.rb_ci = new_ci;
}

MonitorCounters DeviceMonitor::counters() const {
  std::lock_guard<std::mutex> g(mu_);
  return counters_;
}

std::uint64_t DeviceMonitor::live_cbs() const {
  std::lock_guard<std::mutex> g(mu_);
  return live_.size();
}

}  // namespace spyre_dma::regress
