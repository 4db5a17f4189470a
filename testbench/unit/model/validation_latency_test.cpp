// DMA read latency of the model against a real card: the NFP6000 (PCIe Gen3 x8, MPS 256,
// Xeon E5-2630v4 host, IOMMU off, warm host cache) of the pcie-bench data set (Neugebauer et al.,
// SIGCOMM 2018; pcie-bench/data, nfp6000-1.2GHz_bdw-Xeon-E5-2630v4-dell-t430-s0-s0-s0,
// lat_dma_sizes.csv, LAT_DMA_RD medians). The gen3x8 link with latencies calibrated once
// (docs/model.md, "Calibration against the NFP6000") gives each simulated median within 10%.
#include <gtest/gtest.h>

#include "spyre_dma/model/config_loader.hpp"
#include "spyre_dma/model/sim_device.hpp"
#include "spyre_dma/spyre_dma.hpp"

namespace spyre_dma::model {
namespace {

struct Measured {
  std::uint32_t bytes;
  double median_ns;
};
// LAT_DMA_RD, column Med(ns), copied from the file named above.
const Measured kNfpReadLatency[] = {
    {64, 546.67}, {128, 573.33}, {256, 626.67}, {512, 706.67}, {768, 773.33},
    {1024, 853.33}, {1280, 920.0}, {1520, 986.67}, {2048, 1133.33},
};

TEST(NfpValidation, DmaReadLatencyMediansWithinTenPercent) {
  SimConfig config = preset("gen3x8");
  auto dev = std::make_shared<SimDevice>(config);
  auto engine = Engine::open(dev);
  auto stream = engine->create_stream();
  auto buf = engine->allocate(1 << 20);
  auto host = engine->allocate_host(1 << 20);
  for (const Measured& m : kNfpReadLatency) {
    // One read at a time, so nothing queues behind anything: the unloaded latency.
    Op op = stream.copy_h2d(buf, 0, host.data(), m.bytes);
    ASSERT_TRUE(op.wait(std::chrono::seconds(10)).ok());
    const double sim_ns = double(op.device_end_ns() - op.device_start_ns());
    EXPECT_NEAR(sim_ns / m.median_ns, 1.0, 0.10) << m.bytes << " B: simulated " << sim_ns
                                                 << " ns, measured " << m.median_ns << " ns";
  }
}

}  // namespace
}  // namespace spyre_dma::model
