#include "json_report.hpp"
#include "spyre_dma/traces/output_file.hpp"

#include <stdexcept>

namespace spyre_dma_cli {

nlohmann::json device_json(const spyre_dma::Engine& engine, const spyre_dma::DeviceDescription& device) {
  const spyre_dma::DeviceLimits& l = engine.limits();
  const spyre_dma::EngineOptions& o = engine.options();
  return {
      {"backend", device.backend},
      {"name", device.name},
      {"id", l.id},
      {"contract_version", std::to_string(l.version >> 16) + "." + std::to_string(l.version & 0xFFFF)},
      {"capabilities", l.capabilities},
      {"depth", {{"compute", l.depth[0]}, {"dmai", l.depth[1]}, {"dmao", l.depth[2]}}},
      {"ring_slots", {{"compute", l.ring_slots[0]}, {"dmai", l.ring_slots[1]}, {"dmao", l.ring_slots[2]}}},
      {"max_cb_bytes", l.max_cb_bytes},
      {"device_memory_bytes", l.device_memory_bytes},
      {"device_memory_usable", l.device_memory_usable},
      {"engine_options",
       {{"max_cb_bytes", o.max_cb_bytes},
        {"staging_buffer_bytes", o.staging_buffer_bytes},
        {"staging_buffers", o.staging_buffers}}},
  };
}

nlohmann::json results_json(const std::vector<PointResult>& results) {
  nlohmann::json out = nlohmann::json::array();
  for (const PointResult& r : results) {
    nlohmann::json& point = out.emplace_back(nlohmann::json{
        {"size_bytes", r.bytes},
        {"direction", std::string(to_string(r.direction))},
        {"host_memory", std::string(to_string(r.memory))},
        {"streams_used", r.streams_used},
        {"runs_ns", r.run_ns},
        {"median_ns", r.median_ns},
        {"gb_per_s", r.gb_per_s},
        {"bytes_staged", r.bytes_staged},
        {"verified", r.verified},
    });
    if (!r.device_median_ns.empty()) {  // several devices: gb_per_s is all of them together
      point["devices"] = r.device_median_ns.size();
      point["device_median_ns"] = r.device_median_ns;
      point["device_gb_per_s"] = r.device_gb_per_s;
    }
  }
  return out;
}

void write_json_file(const std::string& path, const nlohmann::json& doc) {
  spyre_dma::traces::write_file_atomically(path, doc.dump(2) + "\n");
}

}  // namespace spyre_dma_cli
