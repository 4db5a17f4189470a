#include "sim/sim_top.hpp"

#include <cstdio>
#include <stdexcept>

#include "base/rates.hpp"
#include "spyre_dma/model/config_loader.hpp"

namespace spyre_dma::model {

using namespace sc_core;

SimTop::SimTop(sc_module_name name, const SimConfig& config, const std::vector<device_core::Iommu*>& iommus,
               std::function<void(unsigned, std::uint32_t)> on_interrupt, const std::string& trace_path,
               const std::string& wave_path, Network* network, unsigned node,
               std::function<void(std::function<void()>)> nic_notify)
    : sc_module(name),
      trace(trace_path.empty() ? nullptr : std::make_unique<TraceWriter>(trace_path, to_json(config))),
      wave(wave_path.empty() ? nullptr : std::make_unique<WaveWriter>(wave_path)),
      probe(trace || wave ? std::make_unique<StateProbe>(wave.get(), trace.get()) : nullptr),
      root_complex("root_complex", config) {
  const TopologyConfig& t = config.topology;
  if (iommus.size() != t.devices) {
    throw std::invalid_argument("SimTop: " + std::to_string(iommus.size()) + " IOMMU domains for " +
                                std::to_string(t.devices) + " devices");
  }
  // The uplinks: the devices' link parameters, at the switch part's generation, width and latency.
  LinkConfig uplink = config.link;
  uplink.generation = t.switches.generation;
  uplink.lanes = t.switches.lanes;
  uplink.latency_ns = t.switches.latency_ns;
  const pcie::Ps hop_ps = 2 * pcie::ns_to_ps(t.switches.forward_ns + t.switches.latency_ns);  // there and back
  const unsigned per_switch = t.devices_per_switch;
  const unsigned leaves = per_switch ? (t.devices + per_switch - 1) / per_switch : 0;
  const unsigned per_port = t.switches_per_root_port;
  const unsigned parents = per_port > 1 ? (leaves + per_port - 1) / per_port : 0;
  const pcie::Ps leaf_beyond = parents ? hop_ps : 0;
  for (unsigned k = 0; k < leaves + parents; ++k) {
    const bool leaf = k < leaves;
    const std::string n = "switch" + std::to_string(k);
    switches.push_back(std::make_unique<PcieSwitch>(n.c_str(), leaf ? config.link : uplink, uplink, t.switches.forward_ns));
    uplinks.push_back(std::make_unique<PcieLink>((n + "_uplink").c_str(), config, uplink, leaf ? leaf_beyond : 0,
                                                 t.devices + k, true));
    switches.back()->upstream.bind(uplinks.back()->device_side);
  }
  for (unsigned k = 0; k < leaves + parents; ++k) {
    if (k < leaves && parents) uplinks[k]->host_side.bind(switches[leaves + k / per_port]->downstream);
    else bind_root_port(*uplinks[k]);
  }
  for (unsigned i = 0; i < t.devices; ++i) {
    RootComplex::Requester& r = root_complex.attach(*iommus[i], [on_interrupt, i](std::uint32_t v) { on_interrupt(i, v); });
    const pcie::Ps beyond = per_switch ? hop_ps + leaf_beyond : 0;
    // One device keeps the names a single-device run has always had.
    const std::string label = t.devices == 1 ? "" : "device " + std::to_string(i);
    devices.push_back(std::make_unique<DeviceModel>(("device" + std::to_string(i)).c_str(), config, i, r, root_complex,
                                                    beyond, trace.get(), label, probe.get()));
    if (per_switch) devices.back()->link.host_side.bind(switches[i / per_switch]->downstream);
    else bind_root_port(devices.back()->link);
  }
  if (network) add_nic(config, *network, node, std::move(nic_notify));
  if (probe) {
    for (unsigned k = 0; k < uplinks.size(); ++k) uplinks[k]->observe(*probe, uplinks[k]->basename(), 0);
  }
  if (trace && config.trace_tlps) {
    for (unsigned k = 0; k < uplinks.size(); ++k) uplinks[k]->trace_tlps(*trace, "switch " + std::to_string(k) + " uplink");
  }
}

void SimTop::bind_root_port(PcieLink& link) {
  root_complex.add_port(link.params());
  link.host_side.bind(root_complex.socket);
}

void SimTop::add_nic(const SimConfig& config, Network& network, unsigned node,
                     std::function<void(std::function<void()>)> notify) {
  const TopologyConfig& t = config.topology;
  const unsigned per_switch = t.devices_per_switch;
  const unsigned per_port = t.switches_per_root_port;
  const unsigned leaves = per_switch ? (t.devices + per_switch - 1) / per_switch : 0;
  const bool parents = per_switch && per_port > 1;
  const pcie::Ps forward = pcie::ns_to_ps(t.switches.forward_ns);
  const pcie::Ps hop = 2 * pcie::ns_to_ps(t.switches.forward_ns + t.switches.latency_ns);
  const pcie::Ps beyond = per_switch ? hop + (parents ? hop : 0) : 0;
  nic = std::make_unique<Nic>("nic", config, node, network, root_complex, beyond, std::move(notify));
  if (per_switch) nic->link().host_side.bind(switches[0]->downstream);
  else bind_root_port(nic->link());
  // Peer-to-peer to each device: up from the NIC to the lowest point the two share (the same
  // switch, a parent switch, or the root complex), then down to the device.
  const PeerHop rc{nullptr, false, pcie::ns_to_ps(config.host.root_complex_ns)};
  for (unsigned i = 0; i < t.devices; ++i) {
    std::vector<PeerHop> path{{&nic->link(), false, 0}};
    if (!per_switch) {
      path.push_back(rc);
    } else {
      path.push_back({nullptr, false, forward});
      const unsigned leaf = i / per_switch;
      if (leaf != 0) {
        path.push_back({uplinks[0].get(), false, 0});
        if (parents && leaf / per_port == 0) {
          path.push_back({nullptr, false, forward});  // the shared parent switch
        } else {
          if (parents) {  // up through the NIC's parent switch
            path.push_back({nullptr, false, forward});
            path.push_back({uplinks[leaves].get(), false, 0});
          }
          path.push_back(rc);
          if (parents) {  // down through the device's parent switch
            path.push_back({uplinks[leaves + leaf / per_port].get(), true, 0});
            path.push_back({nullptr, false, forward});
          }
        }
        path.push_back({uplinks[leaf].get(), true, 0});
        path.push_back({nullptr, false, forward});
      }
    }
    path.push_back({&devices[i]->link, true, 0});
    nic->add_device(devices[i]->device_memory, std::move(path));
  }
}

SimTop::~SimTop() {
  root_complex.release_windows();  // before the NIC, whose IOMMU a window may pin, goes
  try {
    if (probe) probe->finish(now_ps());
    if (wave) wave->close();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spyre-dma: %s\n", e.what());
  }
}

}  // namespace spyre_dma::model
