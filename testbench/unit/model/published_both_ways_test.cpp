// The model under traffic both ways against published measurements of real systems
// (docs/validation.md, "Both directions at once"). Each system's model is calibrated on that
// system's one-way figures only, by the rule one_way_calibration() states; then the copies are
// run the way the tool ran them, and the model's figure is compared with the published one. The
// table in the document is this test's: each row's model figure is held here within 1%, so the
// document cannot drift from the model; the errors against the measurements are what they are
// (most rows miss 5%: the document says why).
//
// Sources (every figure as published, decimal GB/s):
//   * RTX 5090: github.com/wubh576/nvbandwidth_5090, myresults/result.json at 15813b80a828, four
//     GPUs, nvbandwidth v0.8 --json, 512 MiB buffers.
//   * H800: an nvbandwidth v0.2 run on eight H800 printed in a Chinese-language README of a public
//     nvbandwidth copy (the repository could not be identified; the figures are kept because they
//     are the only published all_to_host run at Gen5 besides the RTX 5090's).
//   * Tesla T4: github.com/sadcup/nvbandwidth, results/benchmark.txt at 2ee643439296, four GPUs.
//   * DCGM: github.com/NVIDIA/DCGM, nvvs/plugin_src/nvbandwidth/tests/NVBandwidthTestsInputs.cpp at
//     0d22068b8af4, one GPU (the model is not named; its one-way figures are those of Gen3 x16).
//   * A100 (a): github.com/NVIDIA/nvbandwidth/issues/53, 8x A100-SXM4-80GB, Gen4 x16, two per
//     switch ("~24.8" and "~25" one way, "~11" and "~24" both ways, as the reporter summarises).
//   * A100 (b): github.com/NVIDIA/nvbandwidth/issues/11 ("around 25-26" one way, H2D "12-13" and
//     D2H "around 24" both ways; the middle of each range is taken).
//   * nvbandwidth README.md at 66746a3bef61: eight GPUs (A100-class at Gen4, not named), H2D one
//     way and both ways.
//   * RX 7900 XTX: github.com/ROCm/legacy-rocm-build/issues/2253, rocm-bandwidth-test 2.6.0, two
//     GPUs at Gen4 x16; its bidirectional figure is the sum of both directions over the span of
//     two 64 MiB copies started together.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "spyre_dma/model/config_loader.hpp"
#include "spyre_dma/model/sim_node.hpp"
#include "spyre_dma/spyre_dma.hpp"

namespace spyre_dma::model {
namespace {

constexpr std::uint64_t kMiB = 1ull << 20;
constexpr std::uint64_t kBytes = 16 * kMiB;  // the measured copy; nvbandwidth's others copy twice it

// A copy of one run: on which device, which way, how much, and whether it is the one measured.
struct Copy {
  unsigned device = 0;
  bool h2d = true;
  std::uint64_t bytes = kBytes;
  bool measured = false;
};

struct Result {
  double measured_gbps = 0;  // the measured copy's GB/s, device clock
  double span_gbps = 0;      // every byte over the span of every copy
};

// The copies on a server of `devices` devices, all started together (each on a stream of its
// own), registered host memory.
Result run(SimConfig config, unsigned devices, const std::vector<Copy>& copies) {
  config.topology.devices = devices;
  SimNode node(config);
  std::vector<std::unique_ptr<Engine>> engines;
  for (unsigned d = 0; d < devices; ++d) engines.push_back(Engine::open(node.device(d)));
  struct Lane {
    Stream stream;
    DeviceBuffer device;
    HostBuffer host;
    std::optional<Op> op;
  };
  std::vector<Lane> lanes;
  for (const Copy& c : copies) {
    Engine& e = *engines.at(c.device);
    lanes.push_back(Lane{e.create_stream(), e.allocate(c.bytes), e.allocate_host(c.bytes), std::nullopt});
    std::memset(lanes.back().host.data(), 0x3c, c.bytes);
  }
  for (std::size_t i = 0; i < copies.size(); ++i) {
    Lane& l = lanes[i];
    l.op = copies[i].h2d ? l.stream.copy_h2d(l.device, 0, l.host.data(), copies[i].bytes)
                         : l.stream.copy_d2h(l.host.data(), l.device, 0, copies[i].bytes);
  }
  Result r;
  std::uint64_t first = UINT64_MAX, last = 0, total = 0;
  for (std::size_t i = 0; i < copies.size(); ++i) {
    EXPECT_TRUE(lanes[i].stream.synchronize(std::chrono::seconds(120)).ok());
    const Op& op = *lanes[i].op;
    if (copies[i].measured) r.measured_gbps = double(copies[i].bytes) / double(op.device_end_ns() - op.device_start_ns());
    first = std::min(first, op.device_start_ns());
    last = std::max(last, op.device_end_ns());
    total += copies[i].bytes;
  }
  r.span_gbps = double(total) / double(last - first);
  return r;
}

double one_way(const SimConfig& c, bool h2d) { return run(c, 1, {{0, h2d, kBytes, true}}).measured_gbps; }

// The calibration on a system's one-way figures: the link of its generation and width (the
// preset), the MPS and MRRS of the pair that brings the model's one-way figures nearest the
// measured ones (MPS 256 / MRRS 512, the common server setting, or MPS 512 / MRRS 4096), then
// as many read tags as give the measured H2D figure where the link would give more (Little's
// law: a copy engine with fewer reads in flight than the link needs). Nothing of the
// bidirectional figures is used.
SimConfig one_way_calibration(const std::string& preset_name, double h2d, double d2h) {
  SimConfig best;
  double best_err = 1e9;
  for (const auto& [mps, mrrs] : {std::pair{256u, 512u}, std::pair{512u, 4096u}}) {
    SimConfig c = preset(preset_name);
    c.link.mps = mps;
    c.link.mrrs = mrrs;
    const double mh = one_way(c, true), md = one_way(c, false);
    const double err = (d2h > 0 ? std::abs(std::log(md / d2h)) : 0) + (mh < h2d ? std::log(h2d / mh) : 0);
    if (err < best_err) best_err = err, best = c;
  }
  if (one_way(best, true) > 1.01 * h2d) {
    std::uint32_t lo = 1, hi = best.device.read_tags;  // the most tags that stay at or below it
    while (lo < hi) {
      const std::uint32_t mid = (lo + hi + 1) / 2;
      SimConfig c = best;
      c.device.read_tags = mid;
      if (one_way(c, true) <= 1.005 * h2d) lo = mid;
      else hi = mid - 1;
    }
    best.device.read_tags = lo;
  }
  return best;
}

// nvbandwidth's host_to_device_bidirectional / device_to_host_bidirectional: the measured copy,
// and the other direction copying twice as much beside it on the same device.
double nvbandwidth_bidirectional(const SimConfig& c, bool measure_h2d) {
  return run(c, 1, {{0, measure_h2d, kBytes, true}, {0, !measure_h2d, 2 * kBytes, false}}).measured_gbps;
}

struct Row {
  const char* system;
  const char* preset;
  double h2d, d2h;            // measured one way (0: not published)
  double both_h2d, both_d2h;  // measured both ways, each direction's copy beside the other (0: not published)
  double model_h2d, model_d2h;  // this model's figures, held within 1% (the document's table)
};

const Row kRows[] = {
    {"RTX 5090 (Gen5 x16)", "spyre-gen5x16", 56.389, 56.974, 43.64, 43.52, 44.46, 44.26},
    {"H800 (Gen5 x16)", "spyre-gen5x16", 55.31, 55.14, 52.855, 34.44, 44.46, 44.26},
    {"Tesla T4 (Gen3 x16)", "gen3x16", 12.335, 13.14, 11.61, 11.205, 9.24, 12.54},
    {"DCGM fixture (Gen3 x16)", "gen3x16", 12.3964, 13.2001, 11.5031, 11.329, 9.24, 12.54},
    {"A100 (a) (Gen4 x16)", "gen4x16", 24.8, 25.0, 11.0, 24.0, 18.75, 25.05},
    {"A100 (b) (Gen4 x16)", "gen4x16", 25.5, 25.5, 12.5, 24.0, 18.79, 25.05},
    {"nvbandwidth README (Gen4 x16)", "gen4x16", 25.985, 0, 18.66, 0, 18.78, 0},
};

TEST(PublishedBothWays, NvbandwidthBidirectionalCopiesCalibratedOnOneWayFigures) {
  std::printf("%-30s %-36s %-17s %-17s %s\n", "system", "calibrated (one way)", "measured both", "model both",
              "error H2D / D2H");
  for (const Row& row : kRows) {
    const SimConfig c = one_way_calibration(row.preset, row.h2d, row.d2h > 0 ? row.d2h : 25.96);
    const double h2d = nvbandwidth_bidirectional(c, true);
    const double d2h = row.both_d2h > 0 ? nvbandwidth_bidirectional(c, false) : 0;
    const auto err = [](double model, double measured) { return measured > 0 ? 100 * (model / measured - 1) : 0.0; };
    char calibrated[64];
    std::snprintf(calibrated, sizeof calibrated, "MPS %u MRRS %u tags %u", c.link.mps, c.link.mrrs, c.device.read_tags);
    std::printf("%-30s %-36s %6.2f / %6.2f   %6.2f / %6.2f   %+6.1f%% / %+6.1f%%\n", row.system, calibrated,
                row.both_h2d, row.both_d2h, h2d, d2h, err(h2d, row.both_h2d), err(d2h, row.both_d2h));
    EXPECT_NEAR(h2d, row.model_h2d, 0.01 * row.model_h2d) << row.system;
    if (row.both_d2h > 0) {
      EXPECT_NEAR(d2h, row.model_d2h, 0.01 * row.model_d2h) << row.system;
    }
  }
}

TEST(PublishedBothWays, RocmBandwidthTestBidirectionalSumCalibratedOnOneWayFigures) {
  // RX 7900 XTX: 28.411 / 28.410 GB/s host to device, 29.013 / 29.016 back, one way; both ways
  // at once 48.226 / 48.102 (the sum over the span of two 64 MiB copies started together).
  const SimConfig c = one_way_calibration("gen4x16", 28.4105, 29.0145);
  const double sum = run(c, 1, {{0, true, 64 * kMiB, true}, {0, false, 64 * kMiB, false}}).span_gbps;
  std::printf("RX 7900 XTX: MPS %u MRRS %u tags %u; both ways measured 48.16, model %.2f (%+.1f%%)\n", c.link.mps,
              c.link.mrrs, c.device.read_tags, sum, 100 * (sum / 48.164 - 1));
  EXPECT_NEAR(sum, 44.43, 0.01 * 44.43);
}

// nvbandwidth's host_to_all / all_to_host testcases (and their bidirectional forms) on an N-GPU
// server: device 0's copy is measured while every other device copies twice as much the same way
// (the bidirectional forms: device 0 also the other way, every other device both ways).
double nvbandwidth_all(const SimConfig& c, unsigned n, bool measure_h2d, bool bidirectional) {
  std::vector<Copy> copies{{0, measure_h2d, kBytes, true}};
  if (bidirectional) copies.push_back({0, !measure_h2d, 2 * kBytes, false});
  for (unsigned d = 1; d < n; ++d) {
    copies.push_back({d, measure_h2d, 2 * kBytes, false});
    if (bidirectional) copies.push_back({d, !measure_h2d, 2 * kBytes, false});
  }
  return run(c, n, copies).measured_gbps;
}

struct AllRow {
  const char* system;
  unsigned gpus;
  double h2d, d2h;                // one GPU alone
  double host_to_all, all_to_host;  // one-way, every GPU at once (per GPU)
  double host_to_all_bidir, all_to_host_bidir;
  double model_host_to_all_bidir, model_all_to_host_bidir;  // held within 1%
};

const AllRow kAllRows[] = {
    // Medians of the per-GPU columns.
    {"RTX 5090 x4 (Gen5 x16)", 4, 56.389, 56.974, 56.3770, 38.1971, 23.1532, 23.2677, 26.04, 25.14},
    {"H800 x8 (Gen5 x16)", 8, 55.31, 55.14, 55.14, 45.0, 33.885, 22.67, 26.75, 25.97},
};

TEST(PublishedBothWays, NvbandwidthAllToHostAndHostToAllCalibratedOnOneWayFigures) {
  for (const AllRow& row : kAllRows) {
    SimConfig c = one_way_calibration("spyre-gen5x16", row.h2d, row.d2h);
    // Host memory from the one-way runs of every GPU at once. Reads gave every GPU its one-GPU
    // rate, so memory reads at least their sum (the data bound it from below only). Writes gave
    // less: memory's write rate is the one at which the model's all_to_host gives the measured
    // figure (bisection; the measured copy gets a little less than an even share, since the
    // others copy twice as much and keep more in flight).
    c.host.memory_gbps = row.gpus * row.host_to_all;
    double lo = 0.5 * row.gpus * row.all_to_host, hi = 1.5 * row.gpus * row.all_to_host;
    double best = hi, best_err = 1e9;  // the model's steps are not smooth: keep the best seen
    for (int k = 0; k < 10; ++k) {
      c.host.memory_write_gbps = (lo + hi) / 2;
      const double got = nvbandwidth_all(c, row.gpus, false, false);
      if (std::abs(got - row.all_to_host) < best_err) best_err = std::abs(got - row.all_to_host), best = (lo + hi) / 2;
      (got < row.all_to_host ? lo : hi) = c.host.memory_write_gbps;
    }
    c.host.memory_write_gbps = best;
    const double h2a = nvbandwidth_all(c, row.gpus, true, false), a2h = nvbandwidth_all(c, row.gpus, false, false);
    const double h2a_bi = nvbandwidth_all(c, row.gpus, true, true), a2h_bi = nvbandwidth_all(c, row.gpus, false, true);
    std::printf("%s: memory %.1f GB/s reads, %.1f writes; host_to_all %.2f (measured %.2f), all_to_host %.2f "
                "(%.2f); bidirectional host_to_all %.2f (%.2f, %+.1f%%), all_to_host %.2f (%.2f, %+.1f%%)\n",
                row.system, c.host.memory_gbps, c.host.memory_write_gbps, h2a, row.host_to_all, a2h, row.all_to_host, h2a_bi, row.host_to_all_bidir,
                100 * (h2a_bi / row.host_to_all_bidir - 1), a2h_bi, row.all_to_host_bidir,
                100 * (a2h_bi / row.all_to_host_bidir - 1));
    // The one-way runs it was calibrated on come back (within the model's one-way error).
    EXPECT_NEAR(a2h, row.all_to_host, 0.03 * row.all_to_host) << row.system;
    if (row.model_host_to_all_bidir > 0) {
      EXPECT_NEAR(h2a_bi, row.model_host_to_all_bidir, 0.01 * row.model_host_to_all_bidir) << row.system;
      EXPECT_NEAR(a2h_bi, row.model_all_to_host_bidir, 0.01 * row.model_all_to_host_bidir) << row.system;
    }
  }
}

}  // namespace
}  // namespace spyre_dma::model
