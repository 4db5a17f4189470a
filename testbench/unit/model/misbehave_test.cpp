// The model's misbehaving-device block (faults.misbehave): it loads and round-trips, wrong values
// are ConfigErrors naming the key, it fires exactly once at its CB, and a run that misbehaves is
// as deterministic as any other (same configuration and workload: same error, same simulated time).
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fault/misbehaviour.hpp"
#include "spyre_dma/model/config_loader.hpp"
#include "spyre_dma/model/sim_device.hpp"
#include "spyre_dma/spyre_dma.hpp"

namespace spyre_dma::model {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

ConfigError json_error(const json& j) {
  try {
    config_from_json(j, "misbehave.json");
  } catch (const ConfigError& e) {
    return e;
  }
  ADD_FAILURE() << "no ConfigError for " << j.dump();
  return ConfigError("", "", "");
}

TEST(ModelMisbehaveConfig, DefaultIsAWellBehavedDevice) {
  const MisbehaveConfig m = SimConfig{}.faults.misbehave;
  EXPECT_EQ(m.kind, "none");
  EXPECT_EQ(m.at_cb, 0u);
  EXPECT_FALSE(Misbehaviour(m).enabled());
}

TEST(ModelMisbehaveConfig, EveryKeyLoadsAndRoundTrips) {
  const json j = {{"faults",
                   {{"misbehave",
                     {{"kind", "rogue_dma"}, {"at_cb", 4}, {"rogue_iova", 4096}, {"rogue_device_offset", 256}}}}}};
  const SimConfig c = config_from_json(j, "misbehave.json");
  EXPECT_EQ(c.faults.misbehave.kind, "rogue_dma");
  EXPECT_EQ(c.faults.misbehave.at_cb, 4u);
  EXPECT_EQ(c.faults.misbehave.rogue_iova, 4096u);
  EXPECT_EQ(c.faults.misbehave.rogue_device_offset, 256u);
  EXPECT_TRUE(config_from_json(to_json(c), "again") == c);
  for (std::string_view k : device_core::kMisbehaveKindNames) {
    const json one = {{"faults", {{"misbehave", {{"kind", std::string(k)}, {"at_cb", 1}}}}}};
    if (k == "none") continue;  // with at_cb: an error, below
    EXPECT_EQ(config_from_json(one, "misbehave.json").faults.misbehave.kind, k);
  }
}

TEST(ModelMisbehaveConfig, WrongValuesNameTheKey) {
  const ConfigError typo = json_error({{"faults", {{"misbehave", {{"kind", "duplicate_rbs"}}}}}});
  EXPECT_EQ(typo.key_path(), "faults.misbehave.kind");
  EXPECT_NE(typo.message().find("did you mean \"duplicate_rb\""), std::string::npos) << typo.message();

  const ConfigError none = json_error({{"faults", {{"misbehave", {{"at_cb", 3}}}}}});
  EXPECT_EQ(none.key_path(), "faults.misbehave.kind");
  EXPECT_NE(none.message().find("at_cb 3"), std::string::npos) << none.message();

  const ConfigError iova =
      json_error({{"faults", {{"misbehave", {{"kind", "rogue_dma"}, {"at_cb", 1}, {"rogue_iova", 100}}}}}});
  EXPECT_EQ(iova.key_path(), "faults.misbehave.rogue_iova");
  EXPECT_NE(iova.message().find("100"), std::string::npos) << iova.message();

  const ConfigError offset =
      json_error({{"faults", {{"misbehave", {{"kind", "rogue_dma"}, {"at_cb", 1}, {"rogue_device_offset", 4097}}}}}});
  EXPECT_EQ(offset.key_path(), "faults.misbehave.rogue_device_offset");

  const ConfigError type = json_error({{"faults", {{"misbehave", {{"at_cb", "third"}}}}}});
  EXPECT_EQ(type.key_path(), "faults.misbehave.at_cb");

  MisbehaveConfig bad;
  bad.kind = "sometimes";
  EXPECT_THROW(Misbehaviour{bad}, std::invalid_argument);
}

TEST(ModelMisbehaveConfig, FiresOnceAtItsCb) {
  MisbehaveConfig c;
  c.kind = "duplicate_rb";
  c.at_cb = 3;
  Misbehaviour m(c);
  std::vector<bool> fired;
  for (int i = 0; i < 6; ++i) fired.push_back(m.cb_started());
  EXPECT_EQ(fired, (std::vector<bool>{false, false, true, false, false, false}));
  EXPECT_EQ(m.fired(), 1u);
  EXPECT_EQ(m.kind(), device_core::MisbehaveKind::kDuplicateRb);
}

struct RunResult {
  std::string error;
  double sim_ns = 0.0;
  std::uint64_t device_faults = 0;
};

// Two good ops, then a D2H whose RB the model repeats; the engine drives the simulated clock.
RunResult run_duplicate() {
  SimConfig sim;
  sim.faults.misbehave.kind = "duplicate_rb";
  sim.faults.misbehave.at_cb = 2;
  auto dev = std::make_shared<SimDevice>(sim);
  EngineOptions o;
  o.cb_timeout = 2s;
  std::unique_ptr<Engine> e = Engine::open(dev, o);
  Stream s = e->create_stream();
  DeviceBuffer buf = e->allocate(64 * 1024);
  std::vector<std::uint8_t> src(64 * 1024, 7), dst(64 * 1024, 0), dst2(64 * 1024, 0);
  RunResult r;
  if (!s.copy_h2d(buf, 0, src.data(), src.size()).wait(10s).ok()) return r;
  const Status st = s.copy_d2h(dst.data(), buf, 0, dst.size()).wait(10s);
  const Status st2 = s.copy_d2h(dst2.data(), buf, 0, dst2.size()).wait(10s);
  r.error = st.ok() ? st2.message() : st.message();
  r.sim_ns = dev->now_ns();
  r.device_faults = e->stats().device_faults;
  return r;
}

TEST(ModelMisbehave, SameConfigurationSameFaultSameTime) {
  const RunResult a = run_duplicate();
  const RunResult b = run_duplicate();
  EXPECT_NE(a.error.find("answered just before"), std::string::npos) << a.error;
  EXPECT_EQ(a.error, b.error);
  EXPECT_EQ(a.sim_ns, b.sim_ns);
  EXPECT_GT(a.sim_ns, 0.0);
  EXPECT_EQ(a.device_faults, 1u);
  EXPECT_EQ(b.device_faults, 1u);
}

}  // namespace
}  // namespace spyre_dma::model
