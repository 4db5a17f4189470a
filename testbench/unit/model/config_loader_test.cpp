// Loading configurations: presets as bases, overrides, and every class of error with the file,
// key path, value and allowed range in its message.
#include "spyre_dma/model/config_loader.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace spyre_dma::model {
namespace {

using nlohmann::json;

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = testing::TempDir() + name;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  return path;
}

// The ConfigError that loading `text` from a file `name` raises.
ConfigError load_error(const std::string& name, const std::string& text) {
  const std::string path = write_file(name, text);
  try {
    load_config(path);
  } catch (const ConfigError& e) {
    return e;
  }
  ADD_FAILURE() << "no ConfigError for " << text;
  return ConfigError("", "", "");
}

ConfigError json_error(const json& j, const std::string& source = "spyre.json") {
  try {
    config_from_json(j, source);
  } catch (const ConfigError& e) {
    return e;
  }
  ADD_FAILURE() << "no ConfigError for " << j.dump();
  return ConfigError("", "", "");
}

TEST(ConfigLoader, EmptyObjectIsTheDefaultPreset) {
  const SimConfig c = config_from_json(json::object(), "empty.json");
  EXPECT_EQ(c, SimConfig{});
  EXPECT_EQ(c.preset, "spyre-gen5x16");
}

TEST(ConfigLoader, OverridesKeepEverythingElseFromThePreset) {
  const std::string path = write_file("override.json", R"({
    // comments are allowed
    "preset": "gen4x16",
    "link": { "mrrs": 1024, "device_rx": { "posted_header": 64 } },
    "device": { "depth": { "dmai": 512 }, "read_tags": 128 },
    "fidelity": "burst",
    "seed": 18446744073709551615
  })");
  const SimConfig c = load_config(path);
  SimConfig expected = preset("gen4x16");
  expected.link.mrrs = 1024;
  expected.link.device_rx.posted_header = 64;
  expected.device.depth[1] = 512;
  expected.device.read_tags = 128;
  expected.fidelity = Fidelity::kBurst;
  expected.seed = 18446744073709551615ull;
  EXPECT_EQ(c, expected);
  EXPECT_EQ(c.preset, "gen4x16");
  EXPECT_EQ(c.link.generation, 4u);
  EXPECT_EQ(c.link.mps, 256u);
  EXPECT_EQ(c.device.depth[0], 256u);  // untouched pipelines keep the preset's depth
}

// Found by fuzzing: a number beyond a double is nlohmann's out_of_range, not a parse_error.
TEST(ConfigLoader, NumberBeyondADoubleIsAConfigError) {
  const ConfigError e = load_error("big.json", R"({"link": {"latency_ns": 1e999}})");
  EXPECT_NE(e.file().find("big.json"), std::string::npos);
  EXPECT_NE(e.message().find("invalid JSON"), std::string::npos) << e.what();
}

TEST(ConfigLoader, DoublesAcceptIntegers) {
  const SimConfig c = config_from_json({{"link", {{"latency_ns", 200}}}}, "x.json");
  EXPECT_DOUBLE_EQ(c.link.latency_ns, 200.0);
}

TEST(ConfigLoader, UnknownNestedKeyNamesFileAndPathWithHint) {
  const ConfigError e = load_error("spyre.json", R"({"link": {"mpss": 256}})");
  EXPECT_EQ(e.key_path(), "link.mpss");
  EXPECT_NE(e.file().find("spyre.json"), std::string::npos);
  EXPECT_NE(
      std::string(e.what()).find("spyre.json: link.mpss: unknown key (did you mean link.mps?)"),
      std::string::npos)
      << e.what();
}

TEST(ConfigLoader, UnknownKeys) {
  EXPECT_EQ(json_error({{"device", {{"depth", {{"dmaa", 8}}}}}}).key_path(), "device.depth.dmaa");
  EXPECT_NE(std::string(json_error({{"device", {{"depth", {{"dmaa", 8}}}}}}).what())
                .find("did you mean device.depth.dmai?"),
            std::string::npos);
  // The right key at the wrong level.
  const ConfigError e = json_error({{"mps", 256}});
  EXPECT_EQ(e.key_path(), "mps");
  EXPECT_NE(std::string(e.what()).find("did you mean link.mps?"), std::string::npos) << e.what();
  // Nothing close: no hint.
  const ConfigError far = json_error({{"link", {{"zzzzzzzz", 1}}}});
  EXPECT_EQ(std::string(far.what()), "spyre.json: link.zzzzzzzz: unknown key");
}

TEST(ConfigLoader, WrongTypes) {
  struct Case {
    json j;
    const char* key;
    const char* text;
  };
  const Case cases[] = {
      {{{"link", {{"mps", "512"}}}},
       "link.mps",
       "expected an unsigned integer, got string \"512\""},
      {{{"link", {{"mps", 512.5}}}}, "link.mps", "expected an integer, got 512.5"},
      {{{"link", {{"ecrc", 1}}}}, "link.ecrc", "expected true or false, got 1"},
      {{{"link", {{"latency_ns", "fast"}}}},
       "link.latency_ns",
       "expected a number, got string \"fast\""},
      {{{"link", 5}}, "link", "expected an object, got 5"},
      {{{"link", {{"device_rx", json::array()}}}},
       "link.device_rx",
       "expected an object, got an array"},
      {{{"fidelity", 1}}, "fidelity", "expected a string, got 1"},
      {{{"preset", true}}, "preset", "expected a string, got true"},
  };
  for (const auto& c : cases) {
    const ConfigError e = json_error(c.j);
    EXPECT_EQ(e.key_path(), c.key);
    EXPECT_EQ(e.message(), c.text);
    EXPECT_EQ(std::string(e.what()), std::string("spyre.json: ") + c.key + ": " + c.text);
  }
}

TEST(ConfigLoader, OutOfRangeNamesValueAndAllowedRange) {
  struct Case {
    json j;
    const char* key;
    const char* text;
  };
  const Case cases[] = {
      {{{"link", {{"mps", 500}}}},
       "link.mps",
       "500 is out of range (allowed: 128..4096, power of two)"},
      {{{"link", {{"mps", 8192}}}},
       "link.mps",
       "8192 is out of range (allowed: 128..4096, power of two)"},
      {{{"link", {{"mrrs", 64}}}},
       "link.mrrs",
       "64 is out of range (allowed: 128..4096, power of two)"},
      {{{"link", {{"rcb", 32}}}}, "link.rcb", "32 is out of range (allowed: one of 64, 128)"},
      {{{"link", {{"generation", 6}}}}, "link.generation", "6 is out of range (allowed: 1..5)"},
      {{{"link", {{"generation", -1}}}}, "link.generation", "-1 is out of range (allowed: 1..5)"},
      {{{"link", {{"lanes", 3}}}},
       "link.lanes",
       "3 is out of range (allowed: one of 1, 2, 4, 8, 16, 32)"},
      {{{"link", {{"lcrc_error_rate", 1.5}}}},
       "link.lcrc_error_rate",
       "1.5 is out of range (allowed: 0..1)"},
      {{{"link", {{"latency_ns", -1.0}}}},
       "link.latency_ns",
       "-1.0 is out of range (allowed: 0..1000000000000)"},
      {{{"host", {{"memory_gbps", 0}}}}, "host.memory_gbps", "0 is out of range (allowed: 0.001..1000000)"},
      {{{"link", {{"latency_ns", 1e300}}}},
       "link.latency_ns",
       "1e+300 is out of range (allowed: 0..1000000000000)"},
      {{{"device", {{"dma_engine_gbps", 1e-300}}}},
       "device.dma_engine_gbps",
       "1e-300 is out of range (allowed: 0, or 0.001..1000000)"},
      {{{"faults", {{"completion_timeout_ns", 0}}}},
       "faults.completion_timeout_ns",
       "0 is out of range (allowed: > 0, <= 1000000000000)"},
      {{{"device", {{"depth", {{"compute", 100}}}}}},
       "device.depth.compute",
       "100 is out of range (allowed: 1..32768, power of two)"},
      {{{"device", {{"read_tags", 0}}}},
       "device.read_tags",
       "0 is out of range (allowed: 1..1024)"},
      {{{"device", {{"max_cb_bytes", 4294967296ull}}}},
       "device.max_cb_bytes",
       "4294967296 is out of range (allowed: 128..4294967168, multiple of 128)"},
      {{{"device", {{"capabilities", 16}}}},
       "device.capabilities",
       "16 is out of range (allowed: 0..0xf, no bits outside 0xf)"},
  };
  for (const auto& c : cases) {
    const ConfigError e = json_error(c.j);
    EXPECT_EQ(e.key_path(), c.key) << e.what();
    EXPECT_EQ(e.message(), c.text) << e.what();
  }
}

TEST(ConfigLoader, EnumsAndPresetNamesWithHints) {
  const ConfigError f = json_error({{"fidelity", "tpl"}});
  EXPECT_EQ(f.key_path(), "fidelity");
  EXPECT_EQ(f.message(),
            "\"tpl\" is not allowed (allowed: \"tlp\" or \"burst\") (did you mean \"tlp\"?)");
  const ConfigError p = json_error({{"preset", "gen4x61"}});
  EXPECT_EQ(p.key_path(), "preset");
  EXPECT_NE(p.message().find("did you mean \"gen4x16\"?"), std::string::npos) << p.what();
  EXPECT_NE(p.message().find("spyre-gen5x16"), std::string::npos) << p.what();
}

TEST(ConfigLoader, CrossFieldChecks) {
  const ConfigError usable =
      json_error({{"device", {{"memory_bytes", 1ull << 30}, {"usable_bytes", 2ull << 30}}}});
  EXPECT_EQ(usable.key_path(), "device.usable_bytes");
  EXPECT_EQ(usable.message(), "2147483648 exceeds device.memory_bytes (1073741824)");

  const ConfigError credits = json_error({{"link", {{"host_rx", {{"posted_data", 16}}}}}});
  EXPECT_EQ(credits.key_path(), "link.host_rx.posted_data");
  EXPECT_NE(credits.message().find("need at least 32"), std::string::npos) << credits.what();
  // 0 means infinite and is always fine; so is a credit pool exactly one MPS deep.
  EXPECT_NO_THROW(config_from_json({{"link", {{"host_rx", {{"posted_data", 0}}}}}}, "x"));
  EXPECT_NO_THROW(config_from_json({{"link", {{"host_rx", {{"posted_data", 32}}}}}}, "x"));
}

TEST(ConfigLoader, ParseErrorNamesFileLineAndColumn) {
  const ConfigError e = load_error("broken.json", "{\n  \"link\": {\n    \"mps\": 256,\n  }\n}\n");
  EXPECT_EQ(e.line(), 4u);
  EXPECT_GT(e.column(), 0u);
  EXPECT_TRUE(e.key_path().empty());
  const std::string what = e.what();
  EXPECT_NE(what.find("broken.json:4:" + std::to_string(e.column()) + ": invalid JSON: "),
            std::string::npos)
      << what;
  EXPECT_EQ(what.find("[json.exception"), std::string::npos) << what;

  const ConfigError empty = load_error("empty.json", "");
  EXPECT_EQ(empty.line(), 1u);
  EXPECT_NE(std::string(empty.what()).find("empty.json:1:"), std::string::npos) << empty.what();
}

TEST(ConfigLoader, DuplicateKeysAreErrors) {
  const ConfigError e = load_error("dup.json", R"({"link": {"mps": 256, "mps": 512}})");
  EXPECT_EQ(e.key_path(), "link.mps");
  EXPECT_EQ(e.message(), "duplicate key");
}

TEST(ConfigLoader, TopLevelMustBeAnObject) {
  const ConfigError e = load_error("array.json", "[1, 2]");
  EXPECT_TRUE(e.key_path().empty());
  EXPECT_NE(std::string(e.what()).find("array.json: expected a JSON object at the top level"),
            std::string::npos)
      << e.what();
}

TEST(ConfigLoader, MissingFileAndDirectory) {
  const std::string path = testing::TempDir() + "does-not-exist.json";
  try {
    load_config(path);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.file(), path);
    EXPECT_EQ(std::string(e.what()), path + ": cannot open: No such file or directory");
  }
  try {
    load_config(testing::TempDir());
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
  }
}

TEST(ConfigLoader, ValidateChecksConfigsBuiltInCode) {
  SimConfig c;
  EXPECT_NO_THROW(validate(c));
  c.link.mps = 300;
  try {
    validate(c, "code");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "code: link.mps: 300 is out of range (allowed: 128..4096, power of two)");
  }
}

TEST(ConfigLoader, NlohmannConversions) {
  const SimConfig c = preset("gen3x8");
  const json j = {{"config", c}};
  EXPECT_EQ(j["config"]["link"]["lanes"], 8);
  EXPECT_EQ(j["config"].get<SimConfig>(), c);
}

}  // namespace
}  // namespace spyre_dma::model
