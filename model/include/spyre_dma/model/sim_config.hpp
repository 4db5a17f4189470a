// Configuration of the SystemC model: the PCIe link, the host side, the device side and how the
// simulation runs. Every field has a default (the spyre-gen5x16 preset); JSON files and presets
// override them (see config_loader.hpp and docs/model.md).
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace spyre_dma::model {

// Flow-control credits a receiver advertises (PCIe: header credits count TLPs, data credits
// count 16-byte units). 0 means infinite, as PCIe allows for completions at an endpoint.
struct Credits {
  // Enough posted credits to keep a Gen5 x16 link busy across the credit loop (about 0.4 us).
  std::uint32_t posted_header = 256;
  std::uint32_t posted_data = 4096;
  std::uint32_t nonposted_header = 128;
  std::uint32_t nonposted_data = 64;
  std::uint32_t completion_header = 0;
  std::uint32_t completion_data = 0;
};

struct LinkConfig {
  std::uint32_t generation = 5;  // 1..5: GT/s per lane and encoding follow from it
  std::uint32_t lanes = 16;      // 1, 2, 4, 8, 16
  std::uint32_t mps = 512;       // max payload size, bytes
  std::uint32_t mrrs = 4096;     // max read request size, bytes
  std::uint32_t rcb = 64;        // read completion boundary, bytes
  bool ecrc = false;
  bool addr64 = true;            // 64-bit addressing: 16 B headers for MRd/MWr
  bool dllp_overhead = true;     // charge ACK and UpdateFC DLLPs and SKP ordered sets
  double latency_ns = 150.0;     // one-way: PHY, wire and data-link latency
  Credits device_rx;             // what the device's receiver advertises (host -> device)
  Credits host_rx;               // what the root complex advertises (device -> host)
  double credit_update_ns = 200.0;  // from a TLP's arrival until its credits are back
  double lcrc_error_rate = 0.0;     // per TLP; a corrupted TLP is replayed (timing only)
  double replay_ns = 500.0;         // replay timer: extra delay of a replayed TLP
};

struct HostConfig {
  double memory_latency_ns = 90.0;      // DRAM read latency behind the root complex
  double root_complex_ns = 100.0;       // completer processing per read request
  double iommu_ns = 0.0;                // added per TLP when translation is charged
  double memory_gbps = 100.0;           // GB/s for DMA reads and staging copies, all devices together
  // Host memory's rate for the devices' posted writes, GB/s: they then share memory's time with the
  // reads and the staging copies, and a write's credits come back once it is in memory. 0: posted
  // writes are absorbed by the root complex's write buffers and take no memory time.
  double memory_write_gbps = 0.0;
  // What one root port carries between its link and the host, the completion data of reads and
  // the data of posted writes together, as a multiple of its link's raw rate in one direction (its
  // share of the root complex's internal fabric). 1.4: what the two Gen5 x16 hosts measured with
  // nvbandwidth's bidirectional copies carried both ways together (docs/model-pcie.md, "Traffic in
  // both directions"). 0: nothing beyond the link's own rate in each direction.
  double root_port_ratio = 1.4;
  // The IOMMU's translation cache, per device: the pages (iotlb_page_bytes) whose translations
  // it holds, least recently used out first; a TLP on a page it does not hold waits
  // iotlb_miss_ns for the page walk. 0 entries: no IOTLB modelled (iommu_ns is the whole cost).
  std::uint32_t iotlb_entries = 0;
  std::uint32_t iotlb_page_bytes = 4096;
  double iotlb_miss_ns = 0.0;
};

struct DeviceConfig {
  std::array<std::uint32_t, 3> depth{256, 1024, 1024};  // per pipeline, powers of two
  std::uint32_t max_cb_bytes = 64u << 20;
  std::uint32_t read_tags = 256;         // outstanding MRd requests of the DMAI read engine
  std::uint32_t cb_prefetch = 8;         // CBs fetched ahead per pipeline
  double cb_overhead_ns = 50.0;          // controller work per CB (decode, XLAT, RB build)
  double dma_engine_gbps = 0.0;          // the device's own DMA data path limit; 0: none
  double dram_gbps = 200.0;              // LPDDR5 into the on-chip ring
  double dram_latency_ns = 100.0;
  std::uint64_t memory_bytes = 128ull << 30;
  std::uint64_t usable_bytes = 112ull << 30;
  std::uint64_t capabilities = 0xF;      // hw::Capability bits
};

// Host-side engine actions in simulated time: a register write (doorbell) reaches the device
// this long after the instant the engine issued it. Never measured from the wall clock.
struct HostCostConfig {
  double register_write_ns = 100.0;
  double interrupt_ns = 500.0;  // MSI-X write until the engine's wait returns
  // The host's memcpy between user memory and staging buffers (pageable copies), in GB/s: the
  // next register write after a copy of N bytes is delayed by N / staging_gbps ns. 0: free.
  // Default: what `trace calibrate` fits to the public A100 profile in traces/data/ (its pageable
  // copies of 1 MiB and more run at 4.5 GB/s through the driver's staging on a PCIe Gen4 host,
  // docs/traces.md "Calibrate"), so that pageable copies cost what they cost on a real host.
  double staging_gbps = 4.5;
};

// The PCIe switches of a server: every switch the same part. A switch forwards TLPs cut-through,
// and its uplink is a PCIe link of its own (towards the root port, or a parent switch) with the
// framing, credits and latency of LinkConfig (mps, mrrs, rcb and credits as the devices' link).
struct SwitchConfig {
  std::uint32_t generation = 5;  // of the uplink
  std::uint32_t lanes = 16;      // of the uplink
  double latency_ns = 150.0;     // the uplink's one-way latency: PHY, wire and data-link
  double forward_ns = 110.0;     // a TLP's latency across the switch, ingress to egress port
};

// The devices of one simulated server and the PCIe tree between them and the host: a regular tree,
// so that a whole server is a few numbers. Devices are numbered from 0; consecutive devices share
// a switch; switches sit on root ports of their own, or `switches_per_root_port` of them under a
// parent switch on one root port. Every device has its own link (LinkConfig) to its switch or root
// port; they all share the root complex and host memory (HostConfig).
struct TopologyConfig {
  std::uint32_t devices = 1;                 // 1..16
  std::uint32_t devices_per_switch = 0;      // 0: no switches, each device on a root port of its own
  std::uint32_t switches_per_root_port = 1;  // > 1: those switches hang under a parent switch
  SwitchConfig switches;
};

// The NIC of each node of a simulated cluster (network.nodes > 1): an RDMA NIC (ConnectX-7
// class) on the node's PCIe fabric, with a link of its own (as LinkConfig, at this generation and
// width), that reads and writes host memory through its own IOMMU domain and device memory
// peer-to-peer. Its pipeline times are the fixed costs of a message; the rest follows from the
// PCIe and network links it crosses.
struct NicConfig {
  std::uint32_t generation = 5;      // of the NIC's PCIe link
  std::uint32_t lanes = 16;          // of the NIC's PCIe link
  double tx_ns = 459.0;              // doorbell in until the first packet leaves (WQE decode, scheduling)
  double rx_ns = 459.0;              // a packet in until its PCIe write (or reply) leaves
  std::uint32_t max_inline_bytes = 220;  // data the host writes with the doorbell (no DMA read)
  double timeout_us = 1000.0;        // no answer from the peer this long: the transfer fails
};
// The network between the nodes of a simulated cluster: each node is a server of `topology` with
// one NIC; the NICs' ports meet at one network switch, or with two nodes, back to back. Every port
// runs at gbps; each packet carries at most mtu bytes of payload plus the protocol's headers.
struct NetworkConfig {
  std::uint32_t nodes = 1;                  // 1: a single server, no network
  std::string protocol = "infiniband";      // "infiniband" or "roce_v2": the headers per packet
  double gbps = 400.0;                      // data rate of each port (after line coding)
  std::uint32_t mtu = 4096;                 // payload bytes per packet
  double latency_ns = 100.0;                // one way over one cable: PHY, FEC and wire
  std::string fabric = "switch";            // "switch", or "back_to_back" (two nodes)
  double switch_latency_ns = 130.0;         // a packet's latency through the switch (cut-through)
  std::uint32_t switch_buffer_bytes = 262144;  // per egress port: credits a sender may spend ahead
  NicConfig nic;
};

// A device that breaks the ring contract on purpose, once, at the at_cb-th CB the controller
// starts (1-based, all pipelines in execution order; 0: never). The kinds and what each does are
// those of spyre_dma/device_core/misbehave.hpp: "none", "unknown_tag", "duplicate_rb", "stale_tag",
// "garbage_status", "wrong_queue", "rb_pi_beyond_ring", "cb_ci_backwards", "stop_answering",
// "rogue_dma" (with rogue_iova / rogue_device_offset, multiples of 128 bytes, 0: keep), "drop_rb".
struct MisbehaveConfig {
  std::string kind = "none";
  std::uint64_t at_cb = 0;
  std::uint64_t rogue_iova = 0;
  std::uint64_t rogue_device_offset = 0;
};

// Faults the model injects on purpose, to exercise the error paths of the engine above it. Every
// rate is a probability per eligible event (0: never, the default, which costs nothing and changes
// no result); every draw comes from one generator seeded from SimConfig::seed, in simulation order,
// so the same configuration, workload and seed give the same faults. docs/model.md describes what
// each fault does to the CB it hits.
struct FaultConfig {
  double poisoned_rate = 0.0;             // per data TLP (DMAI CplD, DMAO MWr): poisoned (EP)
  double unsupported_request_rate = 0.0;  // per DMAI read request: completion status UR
  double completer_abort_rate = 0.0;      // per DMAI read request: completion status CA
  double dropped_completion_rate = 0.0;   // per DMAI read request: no completion at all
  double completion_timeout_ns = 50000.0; // the read engine's completion timer
  double iommu_fault_rate = 0.0;          // per host-memory CB: the IOMMU refuses the translation
  double malformed_cb_rate = 0.0;         // per CB fetched: arrives with its RSVD word corrupted
  double device_reset_rate = 0.0;         // per CB started: the device resets itself (fatal)
  // One deterministic fault at the at_cb-th CB the controller starts (1-based, all pipelines in
  // execution order; 0: none) of kind at_cb_fault: "poisoned", "unsupported_request",
  // "completer_abort", "dropped_completion", "lcrc", "iommu", "malformed_cb", "device_reset"
  // (or "none").
  std::uint64_t at_cb = 0;
  std::string at_cb_fault = "none";
  MisbehaveConfig misbehave;
};

enum class Fidelity : std::uint8_t {
  kTlp,    // every TLP is a timed transaction
  kBurst,  // the same arithmetic applied per burst
};

// Which data path the DMA controller moves CB data with (spyre_dma/model/data_path.hpp).
enum class DataPathKind : std::uint8_t {
  kSystemC,  // the model's own (model/src/device/systemc_data_path.hpp)
  kRtl,      // the verilated RTL (rtl_bridge/), registered by SpyreDma::rtl
};
// The name a data path is registered under: "systemc" or "rtl".
const char* to_string(DataPathKind kind) noexcept;

struct SimConfig {
  std::string preset = "spyre-gen5x16";
  LinkConfig link;
  HostConfig host;
  DeviceConfig device;
  HostCostConfig host_cost;
  TopologyConfig topology;
  NetworkConfig network;
  FaultConfig faults;
  Fidelity fidelity = Fidelity::kTlp;
  DataPathKind data_path = DataPathKind::kSystemC;
  std::uint64_t seed = 1;
  bool trace_tlps = false;  // include TLPs in the Perfetto trace (large)
};

}  // namespace spyre_dma::model
