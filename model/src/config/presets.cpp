// The named presets. Each starts from the defaults of SimConfig (spyre-gen5x16) and changes only
// what differs: the link, and for gen3x8 (the pcie-bench NFP6000 card) the latencies and the
// card's own data path calibrated against its measured DMA read latencies.
// The generated table in docs/model-config.md lists each preset's differences and sources.
#include <algorithm>
#include <string>
#include <vector>

#include "config/config_fields.hpp"
#include "spyre_dma/model/config_loader.hpp"

namespace spyre_dma::model {
namespace {

struct PresetDef {
  const char* name;
  const char* summary;
  const char* source;
  void (*apply)(SimConfig&);
};

void set_link(SimConfig& c, std::uint32_t gen, std::uint32_t lanes, std::uint32_t mps,
              std::uint32_t mrrs, std::uint32_t rcb) {
  c.link.generation = gen;
  c.link.lanes = lanes;
  c.link.mps = mps;
  c.link.mrrs = mrrs;
  c.link.rcb = rcb;
}

const std::vector<PresetDef>& defs() {
  static const std::vector<PresetDef> table = {
      // The SimConfig defaults, which are the Spyre card as lspci shows it.
      {"spyre-gen5x16", "IBM Spyre card: PCIe Gen5 x16, MPS 512, MRRS 4096, RCB 64, 256 tags",
       "lspci of a Spyre card (ibm-aiu/spyre-health-checker test data lspci_input.txt): Gen5 "
       "x16, MPS 512, MRRS 4096, RCB 64, 8-bit requester tags (256 outstanding); memory and "
       "LPDDR5 bandwidth from torch-spyre docs/source/architecture",
       [](SimConfig&) {}},
      // pcie-bench's model tabulates Gen4 x16 at MPS 256 / MRRS 512 (25.99 / 26.37 GB/s write /
      // read for large transfers); those are also the common settings of server root ports.
      {"gen4x16", "Gen4 x16 at common server settings: MPS 256, MRRS 512, RCB 64",
       "project's choice of the common server setting (root ports capping MPS at 256, firmware "
       "and Linux default MRRS 512); pcie-bench model (Neugebauer et al., SIGCOMM 2018) gives "
       "25.99 / 26.37 GB/s write / read for it",
       [](SimConfig& c) { set_link(c, 4, 16, 256, 512, 64); }},
      // The card of pcie-bench's published measurement (pcie-bench/data).
      {"gen3x8", "pcie-bench NFP6000 card on a Xeon E5: Gen3 x8, MPS 256, MRRS 4096, RCB 64",
       "pcie-bench (Neugebauer et al., SIGCOMM 2018) and its repository pcie-bench/data: "
       "Netronome NFP6000, Gen3 x8, MPS 256, MRRS 4096; large writes within 0.2% of the model, "
       "reads within 3.5%; 64 B read round trip median 546 ns",
       [](SimConfig& c) {
         set_link(c, 3, 8, 256, 4096, 64);
         // Calibrated once against lat_dma_sizes.csv (LAT_DMA_RD medians, 64..2048 B; see
         // docs/model.md): the fixed part of a read (64 B: 546 ns) is the two link crossings,
         // the root complex and a warm host cache, and the card's own CB work; the part that
         // grows with size beyond the link's serialization is the card's internal DMA data
         // path into its memory, about 7 GB/s.
         c.link.latency_ns = 150.0;
         c.host.root_complex_ns = 100.0;
         c.host.memory_latency_ns = 90.0;
         c.device.cb_overhead_ns = 20.0;
         c.device.dram_gbps = 7.0;
         c.device.dram_latency_ns = 14.0;
       }},
      {"gen3x16", "V100-class GPU card: Gen3 x16, MPS 256, MRRS 512, RCB 64",
       "project's choice: a Gen3 x16 card (NVIDIA V100 PCIe class) at the common server "
       "settings MPS 256, MRRS 512; not a measurement",
       [](SimConfig& c) { set_link(c, 3, 16, 256, 512, 64); }},
      // The link of `spyre-dma validate` on an H200 host (docs/validation.md). Only the link
      // changes: NVIDIA's H200 product brief gives PCIe Gen5 x16 (128 GB/s both directions
      // together, 63.0 GB/s raw per direction); MPS and MRRS are not published per system and
      // stay at the common server settings; tags, latencies and the device side stay at the
      // defaults. A validation run's calibration (its fitted --config) replaces these guesses.
      {"h200-gen5x16", "NVIDIA H200 host link: Gen5 x16, MPS 256, MRRS 512, RCB 64",
       "NVIDIA H200 product brief: PCIe Gen5 x16; MPS 256 / MRRS 512 are the project's choice "
       "(common server settings, not published for H200 hosts) until an lspci -vv of the host "
       "replaces them; latencies, tags and the device side are the model defaults",
       [](SimConfig& c) { set_link(c, 5, 16, 256, 512, 64); }},
      // The V100 of the bandwidthTest logs (traces/data, from microsoft/superbenchmark): Gen3
      // x16 like gen3x16, but the GPU's copy engine keeps fewer reads of host memory in flight
      // than the link needs, so H2D (the device reading host memory) plateaus at 12.4 GB/s while
      // D2H (posted writes, no tags) reaches 13.2. With MRRS 512 and the unloaded read round trip
      // of these latencies (2 x 150 ns link, 100 ns root complex, 90 ns memory, about 530 ns with
      // serialization) Little's law gives tags = 12.4 GB/s x 530 ns / 512 B = 12.8, so 13
      // outstanding requests. NVIDIA does not publish the copy engine's tag count: 13 is derived
      // from the measured plateau, not read from a specification.
      {"v100-gen3x16", "NVIDIA V100 PCIe (bandwidthTest logs): Gen3 x16, MPS 256, MRRS 512, 13 read tags",
       "microsoft/superbenchmark tests/data/cuda_memory_{h2d,d2h}_bw.log (commit ff563b66): "
       "V100-PCIE-32GB, pinned plateaus 12.4 GB/s H2D / 13.2 GB/s D2H; link as gen3x16; "
       "device.read_tags 13 derived from the H2D plateau by Little's law (not published)",
       [](SimConfig& c) {
         set_link(c, 3, 16, 256, 512, 64);
         c.device.read_tags = 13;
       }},
      // Servers: eight accelerators, two behind each PCIe switch, each switch on a root port of
      // its own. The pairs share their switch's uplink; all eight share host memory.
      {"server-8x-gen5x16",
       "8-accelerator server: 8 Spyre cards (Gen5 x16), 2 per Gen5 x16 switch, 4 switches on 4 root ports",
       "project's choice, shaped on the common 8-accelerator server (NVIDIA DGX A100 System "
       "Architecture whitepaper: four PCIe switches, two GPUs each) at Gen5; switch latency "
       "110 ns (Broadcom PEX89000 product brief: under 115 ns port to port); the devices as "
       "spyre-gen5x16",
       [](SimConfig& c) {
         c.topology.devices = 8;
         c.topology.devices_per_switch = 2;
       }},
      {"dgx-a100-gen4",
       "DGX A100-like server: 8 devices on Gen4 x16, 2 per Gen4 x16 switch, 4 switches on 4 root ports",
       "NVIDIA DGX A100 System Architecture whitepaper: eight A100s behind four PCIe Gen4 "
       "switches, two per switch, each switch on a root port of one of the two CPUs; links as "
       "gen4x16; host memory 200 GB/s is the project's choice (two 8-channel DDR4-3200 sockets "
       "peak at 409.6 GB/s); switch latency 110 ns as server-8x-gen5x16",
       [](SimConfig& c) {
         set_link(c, 4, 16, 256, 512, 64);
         c.topology.devices = 8;
         c.topology.devices_per_switch = 2;
         c.topology.switches.generation = 4;
         c.host.memory_gbps = 200.0;
       }},
      // Two nodes for RDMA, cabled NIC to NIC as perftest's published runs are: each a Spyre
      // server of one card with a ConnectX-7-class NIC (PCIe Gen5 x16) on NDR InfiniBand.
      {"ndr400-pair",
       "two nodes, NIC to NIC: NDR InfiniBand 400 Gb/s, MTU 4096, a Gen5 x16 NIC and one Spyre card each",
       "NVIDIA ConnectX-7 (MCX75310AAS-NEA: NDR 400 Gb/s, PCIe 5.0 x16); IB headers from the "
       "InfiniBand Architecture Specification Vol. 1; NIC pipeline times (network.nic.tx_ns, "
       "rx_ns) fitted to a published ib_send_lat of 1.27 us at 2 B between two such cards back "
       "to back (docs/rdma.md)",
       [](SimConfig& c) {
         c.network.nodes = 2;
         c.network.fabric = "back_to_back";
       }},
  };
  return table;
}

const PresetDef* find_def(const std::string& name) {
  for (const auto& d : defs())
    if (name == d.name) return &d;
  return nullptr;
}

}  // namespace

namespace config {

// The preset `name`, or a ConfigError naming `file` and the key "preset".
SimConfig preset_for(const std::string& name, const std::string& file) {
  const PresetDef* d = find_def(name);
  if (d == nullptr) {
    std::string known;
    std::string hint;
    std::size_t best = std::string::npos;
    for (const auto& p : defs()) {
      known += (known.empty() ? "" : ", ") + std::string(p.name);
      const auto dist = edit_distance(name, p.name);
      if (dist < best) best = dist, hint = p.name;
    }
    std::string msg = "unknown preset \"" + name + "\" (known: " + known + ")";
    if (best <= std::max<std::size_t>(2, name.size() / 3))
      msg += " (did you mean \"" + hint + "\"?)";
    throw ConfigError(file, "preset", msg);
  }
  SimConfig c;
  c.preset = d->name;
  d->apply(c);
  return c;
}

}  // namespace config

SimConfig preset(const std::string& name) { return config::preset_for(name, ""); }

std::vector<std::string> preset_names() {
  std::vector<std::string> out;
  for (const auto& d : defs()) out.emplace_back(d.name);
  return out;
}

std::vector<PresetInfo> preset_catalog() {
  std::vector<PresetInfo> out;
  for (const auto& d : defs()) out.push_back({d.name, d.summary, d.source});
  return out;
}

}  // namespace spyre_dma::model
