#include "fit_bounds.hpp"

#include <functional>
#include <map>

#include "spyre_dma/model/link_rates.hpp"
#include "spyre_dma/traces/calibrate.hpp"

namespace spyre_dma::traces::detail {

std::optional<PhysicalBounds> physical_bounds(const std::string& key, const spyre_dma::model::SimConfig& base) {
  // One table: every key a fit may move, the range its physics allows, and why.
  static const std::map<std::string, std::function<PhysicalBounds(const spyre_dma::model::SimConfig&)>> kTable = {
      {"device.dma_engine_gbps",
       [](const spyre_dma::model::SimConfig& c) {
         return PhysicalBounds{0.1, spyre_dma::model::raw_gbps(c.link),
                               "the device's own data path: above its link's raw rate in one direction the link, not "
                               "the path, sets what a copy runs at, so no trace can ask for more"};
       }},
      {"device.dram_gbps",
       [](const spyre_dma::model::SimConfig&) {
         return PhysicalBounds{1, 10000,
                               "device memory: from one LPDDR channel (a few GB/s) to the fastest HBM stacks (about "
                               "8 TB/s on an eight-stack GPU)"};
       }},
      {"device.dram_latency_ns",
       [](const spyre_dma::model::SimConfig&) {
         return PhysicalBounds{10, 1000, "device memory's access latency: tens to hundreds of ns for DRAM"};
       }},
      {"device.cb_overhead_ns",
       [](const spyre_dma::model::SimConfig&) {
         return PhysicalBounds{0, 5000,
                               "the device's own work per CB or copy command (decode, address translation, response): "
                               "tens to hundreds of ns for a DMA controller; a GPU copy engine's per-copy cost was "
                               "fitted at 2.3 us on a V100 (docs/traces.md)"};
       }},
      {"device.read_tags",
       [](const spyre_dma::model::SimConfig&) {
         return PhysicalBounds{1, 768, "outstanding read requests: PCIe's 10-bit tags allow 768"};
       }},
      {"link.latency_ns",
       [](const spyre_dma::model::SimConfig&) {
         return PhysicalBounds{40, 1000,
                               "one way across one PCIe hop (PHY, wire, data-link layer): a 64-byte read's 546 ns round "
                               "trip on pcie-bench's Gen3 card holds two of them with the root complex and memory "
                               "(about 150 ns each); 40 ns for a short link without retimers, 1 us through retimers"};
       }},
      {"link.credit_update_ns",
       [](const spyre_dma::model::SimConfig&) {
         return PhysicalBounds{0, 5000, "a receiver's UpdateFC interval and the latency back: at most a few us"};
       }},
      {"host.memory_gbps",
       [](const spyre_dma::model::SimConfig&) {
         return PhysicalBounds{1, 2000, "host DRAM: from one DDR channel to a two-socket server's about 1 TB/s"};
       }},
      {"host.memory_write_gbps",
       [](const spyre_dma::model::SimConfig&) {
         return PhysicalBounds{1, 2000, "host DRAM's write rate: as its read rate, and no faster"};
       }},
      {"host.memory_latency_ns",
       [](const spyre_dma::model::SimConfig&) {
         return PhysicalBounds{30, 500, "host DRAM's load latency: 60-150 ns local, up to about 300 ns across sockets"};
       }},
      {"host.root_complex_ns",
       [](const spyre_dma::model::SimConfig&) {
         return PhysicalBounds{0, 2000, "the root complex's handling of one read request: tens to hundreds of ns"};
       }},
      {"host.root_port_ratio",
       [](const spyre_dma::model::SimConfig&) {
         return PhysicalBounds{1, 2, "a root port carries at least one direction of its link and at most both"};
       }},
      {"host_cost.staging_gbps",
       [](const spyre_dma::model::SimConfig&) {
         return PhysicalBounds{0.5, 50,
                               "one CPU thread's memcpy between user memory and a staging buffer: about 2-20 GB/s on "
                               "current servers (the A100 profile's driver staged at 4.5)"};
       }},
      {kStagingPieceKey,
       [](const spyre_dma::model::SimConfig&) {
         return PhysicalBounds{4096, 64.0 * 1048576,
                               "a driver's staging piece: at least a page, at most what it keeps pinned (64 MiB)"};
       }},
  };
  const auto it = kTable.find(key);
  if (it == kTable.end()) return std::nullopt;
  return it->second(base);
}

}  // namespace spyre_dma::traces::detail
