// Speed of the RTL data path (a measurement, not a test; nothing is asserted):
//   1. the verilated data path alone, clocked by a plain loop against an ideal environment
//      (completions and device memory answer at once): RTL cycles per wall second;
//   2. the whole model on the same workload (H2D then D2H of --mib MiB in 4 MiB CBs) with the
//      SystemC and with the RTL data path: wall seconds of each, their ratio, and the RTL run's
//      clocked cycles per wall second.
// Run it pinned to one core: taskset -c 0 build/default/rtl_bridge/rtl_speed
#include <verilated.h>

#include "Vspyre_dma_core.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>

#include "ring_driver.hpp"
#include "spyre_dma/model/config_loader.hpp"

namespace {

using namespace spyre_dma;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// 1. The data path alone: a stream of 4 MiB H2D CBs, every MRd answered by its completion beats
// on the next cycles, every device-memory burst acknowledged at once.
double core_cycles_per_second(std::uint64_t cycles) {
  VerilatedContext ctx;
  Vspyre_dma_core core(&ctx);
  const auto edge = [&] {
    core.clk = 0;
    core.eval();
    core.clk = 1;
    core.eval();
  };
  core.rst_n = 0;
  edge();
  core.rst_n = 1;
  const std::uint64_t regs[] = {128ull << 30, 64u << 20, 512, 4096, 256, 0};
  for (unsigned a = 0; a < 6; ++a) core.cfg_valid = 1, core.cfg_addr = static_cast<CData>(a), core.cfg_data = regs[a], edge();
  core.cfg_valid = 0;
  for (int i = 0; i < 300; ++i) edge();
  hw::ControlBlock cb = rtl::test::cb_with_xlat(1);
  cb.dmi.type = hw::DmaType::kImmediate;
  rtl::test::set_length(cb.dmi, 4u << 20);
  cb.dmi.host_iova_flits = 0x1000'0000 / hw::kFlitBytes;
  const hw::CbBytes raw = hw::encode(cb);
  std::memcpy(core.dmai_cb_data.m_storage, raw.data(), raw.size());
  struct Beat { unsigned tag, offset, bytes; bool eop; };
  std::deque<Beat> beats;
  bool ats = false;
  unsigned acks = 0;
  const auto t0 = Clock::now();
  for (std::uint64_t c = 0; c < cycles; ++c) {
    core.dmai_cb_valid = 1;
    core.dmai_ats_ready = 1;
    core.dmai_ats_rsp_valid = ats;
    core.dmai_ats_rsp_ok = 1;
    core.rq_ready = 1;
    core.rq_np_ready = 1;
    core.rc_valid = !beats.empty();
    if (!beats.empty()) {
      core.rc_tag = static_cast<CData>(beats.front().tag);
      core.rc_offset = static_cast<SData>(beats.front().offset);
      core.rc_bytes = static_cast<CData>(beats.front().bytes);
      core.rc_eop = beats.front().eop;
      core.rc_status = 0;
      core.rc_poisoned = 0;
    }
    core.dw_ready = 1;
    core.dw_ack = acks > 0;
    core.rb_ready = 1;
    core.clk = 0;
    core.eval();
    const bool mrd = core.rq_valid && core.rq_np_ready;
    const unsigned tag = core.rq_tag, len = core.rq_len;
    const bool cpl = core.rc_valid && core.rc_ready;
    const bool burst = core.dw_valid && core.dw_ready && core.dw_last;
    ats = core.dmai_ats_valid && core.dmai_ats_ready;
    core.clk = 1;
    core.eval();
    if (core.dw_ack) --acks;
    if (cpl) beats.pop_front();
    if (burst) ++acks;
    if (mrd) {
      for (unsigned off = 0; off < len; off += 128) beats.push_back({tag, off, std::min(128u, len - off), (off + 128) % 512 == 0 || off + 128 >= len});
    }
  }
  return double(cycles) / seconds_since(t0);
}

// 2. The whole model: wall seconds for H2D then D2H of `bytes`.
struct Run {
  double wall_s = 0;
  std::uint64_t rtl_cycles = 0;
};
Run model_run(model::DataPathKind data_path, std::uint64_t bytes) {
  model::SimConfig config = model::preset("spyre-gen5x16");
  config.data_path = data_path;
  model::SimDevice dev(config);
  rtl::test::HostBuffer host(bytes);
  const std::uint64_t iova = dev.map(host.data, host.bytes, DmaAccess::kBoth);
  rtl::test::RingDriver ring(dev);
  const auto t0 = Clock::now();
  std::uint32_t tag = 1;
  for (hw::Pipeline p : {hw::Pipeline::kDmai, hw::Pipeline::kDmao}) {
    for (std::uint64_t off = 0; off < bytes; off += 4u << 20) {
      hw::ControlBlock cb = rtl::test::cb_with_xlat(tag++);
      hw::DmaSection& s = p == hw::Pipeline::kDmai ? cb.dmi : cb.dmo;
      s.type = hw::DmaType::kImmediate;
      rtl::test::set_length(s, 4u << 20);
      s.host_iova_flits = (iova + off) / hw::kFlitBytes;
      s.device = hw::DeviceVa{0, static_cast<std::uint32_t>(off / hw::kFlitBytes)};
      ring.push(p, cb);
      if ((tag & 63) == 0) ring.doorbell(p), ring.drain(p);
    }
    ring.doorbell(p);
    ring.drain(p);
  }
  Run r;
  r.wall_s = seconds_since(t0);
  const nlohmann::json stats = dev.statistics();
  if (stats.contains("rtl")) r.rtl_cycles = stats["rtl"]["cycles"].get<std::uint64_t>();
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const std::uint64_t mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 256;
  const double core = core_cycles_per_second(20'000'000);
  std::printf("data path alone: %.2f M RTL cycles per wall second\n", core / 1e6);
  const Run sim = model_run(model::DataPathKind::kSystemC, mib << 20);
  const Run rtl = model_run(model::DataPathKind::kRtl, mib << 20);
  std::printf("model, H2D + D2H of %llu MiB: systemc %.3f s, rtl %.3f s wall (rtl/systemc %.2f); "
              "rtl clocked %llu cycles, %.2f M cycles per wall second\n",
              static_cast<unsigned long long>(mib), sim.wall_s, rtl.wall_s, rtl.wall_s / sim.wall_s,
              static_cast<unsigned long long>(rtl.rtl_cycles), double(rtl.rtl_cycles) / rtl.wall_s / 1e6);
  return 0;
}
