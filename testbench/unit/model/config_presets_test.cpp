// The presets: their link values (with the sources documented in presets.cpp), that each passes
// the loader's checks, and that to_json / config_from_json round-trip every one of them.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "spyre_dma/model/config_loader.hpp"

namespace spyre_dma::model {
namespace {

using nlohmann::json;

struct LinkValues {
  const char* name;
  std::uint32_t generation, lanes, mps, mrrs, rcb;
};

constexpr LinkValues kPresets[] = {
    {"spyre-gen5x16", 5, 16, 512, 4096, 64}, {"gen4x16", 4, 16, 256, 512, 64},
    {"gen3x8", 3, 8, 256, 4096, 64},         {"gen3x16", 3, 16, 256, 512, 64},
    {"h200-gen5x16", 5, 16, 256, 512, 64},   {"v100-gen3x16", 3, 16, 256, 512, 64},
    {"server-8x-gen5x16", 5, 16, 512, 4096, 64}, {"dgx-a100-gen4", 4, 16, 256, 512, 64}, {"ndr400-pair", 5, 16, 512, 4096, 64},
};

TEST(ConfigPresets, NamesInCatalogOrderDefaultFirst) {
  std::vector<std::string> expected;
  for (const auto& p : kPresets) expected.emplace_back(p.name);
  EXPECT_EQ(preset_names(), expected);
  for (const auto& info : preset_catalog()) {
    EXPECT_FALSE(info.summary.empty()) << info.name;
    EXPECT_FALSE(info.source.empty()) << info.name;
  }
}

TEST(ConfigPresets, DefaultPresetIsTheSimConfigDefaults) {
  EXPECT_EQ(preset("spyre-gen5x16"), SimConfig{});
  const SimConfig c = preset("spyre-gen5x16");
  EXPECT_EQ(c.device.read_tags, 256u);
}

TEST(ConfigPresets, LinkValues) {
  for (const auto& p : kPresets) {
    SCOPED_TRACE(p.name);
    const SimConfig c = preset(p.name);
    EXPECT_EQ(c.preset, p.name);
    EXPECT_EQ(c.link.generation, p.generation);
    EXPECT_EQ(c.link.lanes, p.lanes);
    EXPECT_EQ(c.link.mps, p.mps);
    EXPECT_EQ(c.link.mrrs, p.mrrs);
    EXPECT_EQ(c.link.rcb, p.rcb);
    // The device side is Spyre's in every preset but gen3x8, which is calibrated to the NFP6000
    // card of the pcie-bench measurements (its DMA data path and CB work differ).
    // v100-gen3x16 differs only in its read tags (the V100 copy engine's outstanding reads).
    if (std::string(p.name) == "v100-gen3x16") {
      SimConfig spyre;
      spyre.device.read_tags = 13;
      EXPECT_EQ(to_json(c)["device"], to_json(spyre)["device"]);
    } else if (std::string(p.name) != "gen3x8") {
      EXPECT_EQ(to_json(c)["device"], to_json(SimConfig{})["device"]);
    }
  }
}

TEST(ConfigPresets, Gen3x8CarriesTheNfpCalibration) {
  const SimConfig c = preset("gen3x8");
  EXPECT_DOUBLE_EQ(c.device.dram_gbps, 7.0);
  EXPECT_DOUBLE_EQ(c.link.latency_ns, 150.0);
  EXPECT_NE(to_json(c)["device"], to_json(SimConfig{})["device"]);
}

TEST(ConfigPresets, EveryPresetPassesTheChecks) {
  for (const auto& name : preset_names()) {
    SCOPED_TRACE(name);
    EXPECT_NO_THROW(validate(preset(name), name));
    EXPECT_EQ(config_from_json({{"preset", name}}, "x.json"), preset(name));
  }
}

TEST(ConfigPresets, RoundTripThroughJson) {
  for (const auto& name : preset_names()) {
    SCOPED_TRACE(name);
    const SimConfig c = preset(name);
    const json j = to_json(c);
    EXPECT_EQ(config_from_json(j, "roundtrip.json"), c);
    // Through text too, as result files store it.
    EXPECT_EQ(config_from_json(json::parse(j.dump(2)), "roundtrip.json"), c);
    EXPECT_EQ(to_json(config_from_json(j, "roundtrip.json")), j);
  }
}

TEST(ConfigPresets, RoundTripThroughAFileWithOddValues) {
  SimConfig c = preset("gen3x8");
  c.link.latency_ns = 0.1 + 0.2;  // not exactly representable in short decimal form
  c.link.lcrc_error_rate = 1e-12;
  c.device.capabilities = 0x5;
  c.seed = 0xFFFFFFFFFFFFFFFFull;
  c.fidelity = Fidelity::kBurst;
  c.trace_tlps = true;
  const std::string path = testing::TempDir() + "roundtrip_odd.json";
  std::ofstream(path) << to_json(c).dump(2);
  EXPECT_EQ(load_config(path), c);
}

TEST(ConfigPresets, EqualityNoticesEveryKindOfField) {
  const SimConfig base;
  SimConfig c = base;
  c.link.host_rx.completion_data = 64;
  EXPECT_NE(c, base);
  c = base;
  c.device.depth[2] = 2048;
  EXPECT_NE(c, base);
  c = base;
  c.fidelity = Fidelity::kBurst;
  EXPECT_NE(c, base);
  c = base;
  c.preset = "gen3x8";
  EXPECT_NE(c, base);
}

TEST(ConfigPresets, UnknownPreset) {
  try {
    preset("gen9x99");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key_path(), "preset");
    EXPECT_NE(e.message().find("unknown preset \"gen9x99\""), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace spyre_dma::model
