// The "faults" section of a configuration: every key loads and round-trips, and a wrong fault
// name or an inconsistent combination is a ConfigError naming the key and the value.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "spyre_dma/model/config_loader.hpp"

namespace spyre_dma::model {
namespace {

using nlohmann::json;

ConfigError json_error(const json& j) {
  try {
    config_from_json(j, "faults.json");
  } catch (const ConfigError& e) {
    return e;
  }
  ADD_FAILURE() << "no ConfigError for " << j.dump();
  return ConfigError("", "", "");
}

TEST(ConfigFaults, DefaultsInjectNothing) {
  const FaultConfig f = SimConfig{}.faults;
  EXPECT_EQ(f.poisoned_rate, 0.0);
  EXPECT_EQ(f.unsupported_request_rate, 0.0);
  EXPECT_EQ(f.completer_abort_rate, 0.0);
  EXPECT_EQ(f.dropped_completion_rate, 0.0);
  EXPECT_EQ(f.completion_timeout_ns, 50000.0);
  EXPECT_EQ(f.iommu_fault_rate, 0.0);
  EXPECT_EQ(f.malformed_cb_rate, 0.0);
  EXPECT_EQ(f.device_reset_rate, 0.0);
  EXPECT_EQ(f.at_cb, 0u);
  EXPECT_EQ(f.at_cb_fault, "none");
}

TEST(ConfigFaults, EveryKeyLoadsAndRoundTrips) {
  const json j = {{"faults",
                   {{"poisoned_rate", 0.01},
                    {"unsupported_request_rate", 0.02},
                    {"completer_abort_rate", 0.03},
                    {"dropped_completion_rate", 0.04},
                    {"completion_timeout_ns", 1234.5},
                    {"iommu_fault_rate", 0.05},
                    {"malformed_cb_rate", 0.06},
                    {"device_reset_rate", 0.07},
                    {"at_cb", 9},
                    {"at_cb_fault", "dropped_completion"}}}};
  const SimConfig c = config_from_json(j, "faults.json");
  EXPECT_EQ(c.faults.poisoned_rate, 0.01);
  EXPECT_EQ(c.faults.unsupported_request_rate, 0.02);
  EXPECT_EQ(c.faults.completer_abort_rate, 0.03);
  EXPECT_EQ(c.faults.dropped_completion_rate, 0.04);
  EXPECT_EQ(c.faults.completion_timeout_ns, 1234.5);
  EXPECT_EQ(c.faults.iommu_fault_rate, 0.05);
  EXPECT_EQ(c.faults.malformed_cb_rate, 0.06);
  EXPECT_EQ(c.faults.device_reset_rate, 0.07);
  EXPECT_EQ(c.faults.at_cb, 9u);
  EXPECT_EQ(c.faults.at_cb_fault, "dropped_completion");
  const json out = to_json(c);
  EXPECT_EQ(out["faults"]["at_cb_fault"], "dropped_completion");
  EXPECT_EQ(config_from_json(out, "again"), c);
  EXPECT_NE(c, SimConfig{});
}

TEST(ConfigFaults, EveryKindNameIsAccepted) {
  for (const char* k : {"poisoned", "unsupported_request", "completer_abort", "dropped_completion", "lcrc", "iommu",
                        "malformed_cb", "device_reset"}) {
    const SimConfig c = config_from_json(json{{"faults", {{"at_cb", 1}, {"at_cb_fault", k}}}}, "faults.json");
    EXPECT_EQ(c.faults.at_cb_fault, k);
  }
}

TEST(ConfigFaults, UnknownKindNamesKeyAndValue) {
  const ConfigError e = json_error(json{{"faults", {{"at_cb", 3}, {"at_cb_fault", "poisond"}}}});
  EXPECT_EQ(e.key_path(), "faults.at_cb_fault");
  EXPECT_NE(e.message().find("\"poisond\" is not allowed"), std::string::npos) << e.what();
  EXPECT_NE(e.message().find("did you mean \"poisoned\"?"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("faults.json: faults.at_cb_fault"), std::string::npos) << e.what();
}

TEST(ConfigFaults, RangesAndCombinations) {
  ConfigError e = json_error(json{{"faults", {{"poisoned_rate", 1.5}}}});
  EXPECT_EQ(e.key_path(), "faults.poisoned_rate");
  EXPECT_NE(e.message().find("1.5 is out of range (allowed: 0..1)"), std::string::npos) << e.what();
  e = json_error(json{{"faults", {{"completion_timeout_ns", 0}}}});
  EXPECT_EQ(e.key_path(), "faults.completion_timeout_ns");
  e = json_error(json{{"faults", {{"at_cb", 4}}}});  // a position without a kind
  EXPECT_EQ(e.key_path(), "faults.at_cb_fault");
  EXPECT_NE(e.message().find("faults.at_cb 4"), std::string::npos) << e.what();
  e = json_error(json{{"faults", {{"unsupported_request_rate", 0.6}, {"dropped_completion_rate", 0.6}}}});
  EXPECT_EQ(e.key_path(), "faults.dropped_completion_rate");
  EXPECT_NE(e.message().find("sum to 1.2"), std::string::npos) << e.what();
  e = json_error(json{{"faults", {{"at_cbb", 4}}}});
  EXPECT_EQ(e.key_path(), "faults.at_cbb");
  EXPECT_NE(e.message().find("did you mean faults.at_cb?"), std::string::npos) << e.what();
}

}  // namespace
}  // namespace spyre_dma::model
