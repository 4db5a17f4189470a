// Each protocol rule the model checks, broken on purpose inside the running model (sim/debug_hooks.hpp)
// and caught: the violation is counted under its rule and named in last_violation, and the same
// workload without the bug breaks no rule. Strict mode throws a ProtocolError naming the rule
// (checked here on the checker itself for every rule, and through the model where the violation
// surfaces outside a SystemC process).
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <string>

#include "link/protocol_checker.hpp"
#include "base/debug_hooks.hpp"
#include "spyre_dma/model/sim_device.hpp"
#include "spyre_dma/spyre_dma.hpp"

namespace spyre_dma::model {
namespace {

using namespace std::chrono_literals;

// Installs hooks for the next model and takes them away again.
class Hooks {
 public:
  explicit Hooks(DebugHooks h) { debug_hooks() = h; }
  ~Hooks() { debug_hooks() = DebugHooks{}; }
  Hooks(const Hooks&) = delete;
  Hooks& operator=(const Hooks&) = delete;
};

DebugHooks lenient() {
  DebugHooks h;
  h.lenient_checker = true;
  return h;
}

// An H2D then a D2H of `bytes` through the engine; the model's statistics afterwards.
nlohmann::json round_trip(const SimConfig& config, std::size_t bytes) {
  auto dev = std::make_shared<SimDevice>(config);
  auto engine = Engine::open(dev);
  auto stream = engine->create_stream();
  auto buf = engine->allocate(bytes);
  auto in = engine->allocate_host(bytes);
  auto out = engine->allocate_host(bytes);
  std::memset(in.data(), 0x5A, bytes);
  stream.copy_h2d(buf, 0, in.data(), bytes);
  stream.copy_d2h(out.data(), buf, 0, bytes);
  (void)stream.synchronize(60s);
  return dev->statistics();
}

const nlohmann::json& protocol(const nlohmann::json& stats) { return stats["link"]["protocol"]; }

// The bug set in `bug` breaks `rule` (and the run without it breaks nothing).
void expect_caught(DebugHooks bug, const SimConfig& config, std::size_t bytes, ProtocolRule rule) {
  const std::string name(to_string(rule));
  {
    Hooks clean(lenient());
    const nlohmann::json s = round_trip(config, bytes);
    EXPECT_EQ(protocol(s)["violations"], 0) << protocol(s)["last_violation"];
  }
  bug.lenient_checker = true;
  Hooks hooks(bug);
  const nlohmann::json s = round_trip(config, bytes);
  EXPECT_GT(protocol(s)["violations_by_rule"][name].get<std::uint64_t>(), 0u) << name << ": " << protocol(s);
  const std::string last = protocol(s)["last_violation"];
  EXPECT_EQ(last.rfind("[" + name + "]", 0), 0u) << last;
}

TEST(ProtocolRules, MpsBrokenByTheWriteEngine) {
  DebugHooks h;
  h.writes_over_mps = true;
  expect_caught(h, SimConfig{}, 64 << 10, ProtocolRule::kMps);
}

TEST(ProtocolRules, MrrsBrokenByTheReadEngine) {
  SimConfig c;
  c.link.mrrs = 512;  // requests of 1 KiB stay inside 4 KiB pages: only MRRS is broken
  DebugHooks h;
  h.reads_over_mrrs = true;
  expect_caught(h, c, 64 << 10, ProtocolRule::kMrrs);
}

TEST(ProtocolRules, FourKibCrossingBrokenByTheWriteEngine) {
  DebugHooks h;
  h.writes_cross_4k = true;
  expect_caught(h, SimConfig{}, 64 << 10, ProtocolRule::kPage4KiB);
}

TEST(ProtocolRules, RcbBrokenByTheCompleter) {
  DebugHooks h;
  h.completions_off_rcb = true;
  expect_caught(h, SimConfig{}, 64 << 10, ProtocolRule::kRcb);
}

TEST(ProtocolRules, CreditOverflowBrokenByTheLink) {
  SimConfig c;
  c.link.host_rx.posted_data = 64;  // 1 KiB of posted data in flight
  DebugHooks h;
  h.ignore_posted_credits = true;
  expect_caught(h, c, 1 << 20, ProtocolRule::kCredits);
}

TEST(ProtocolRules, TagReuseBeforeRetirementBrokenByTheReadEngine) {
  DebugHooks h;
  h.release_tags_at_issue = true;
  expect_caught(h, SimConfig{}, 1 << 20, ProtocolRule::kTagLife);
}

TEST(ProtocolRules, RbBeforeDataBrokenByTheRbWriter) {
  DebugHooks h;
  h.rb_before_data = true;
  expect_caught(h, SimConfig{}, 1 << 20, ProtocolRule::kRbAfterData);
}

// A BAR0 read while the device's writes are on the wire: correct, it waits behind them; with the
// bug it overtakes them, which the checker reports (strict: the read itself throws).
std::string read_while_writes_in_flight(bool bug, bool strict, nlohmann::json* stats) {
  DebugHooks h;
  h.reads_pass_posted = bug;
  h.lenient_checker = !strict;
  Hooks hooks(h);
  auto dev = std::make_shared<SimDevice>(SimConfig{});
  auto engine = Engine::open(dev);
  auto stream = engine->create_stream();
  const std::size_t small = 4096, large = 4 << 20;
  auto buf = engine->allocate(large);
  auto out = engine->allocate_host(large);
  stream.copy_d2h(out.data(), buf, 0, small);
  stream.copy_d2h(out.data(), buf, 0, large);
  (void)dev->wait_for_interrupt(1s);  // the first D2H's RB: the second one's MWr are in flight
  std::string error;
  try {
    const double before = dev->now_ns();
    (void)dev->read32(hw::reg::pipe(hw::Pipeline::kDmao, hw::reg::kRbPi));
    if (!bug) {
      EXPECT_GT(dev->now_ns(), before) << "the completion waited behind the posted writes";
    }
  } catch (const ProtocolError& e) {
    error = e.what();
  }
  if (stats) *stats = dev->statistics();
  if (error.empty()) (void)stream.synchronize(60s);
  return error;
}

TEST(ProtocolRules, CompletionPassingPostedWriteBrokenByTheHostPort) {
  nlohmann::json s;
  EXPECT_EQ(read_while_writes_in_flight(false, false, &s), "");
  EXPECT_EQ(protocol(s)["violations"], 0) << protocol(s)["last_violation"];
  EXPECT_EQ(read_while_writes_in_flight(true, false, &s), "");
  EXPECT_GT(protocol(s)["violations_by_rule"]["ordering"].get<std::uint64_t>(), 0u) << protocol(s);
  const std::string last = protocol(s)["last_violation"];
  EXPECT_EQ(last.rfind("[ordering] BAR0 read completion (upstream)", 0), 0u) << last;
  const std::string thrown = read_while_writes_in_flight(true, true, nullptr);
  EXPECT_EQ(thrown.rfind("PCIe protocol violation [ordering]", 0), 0u) << thrown;
  EXPECT_NE(thrown.find("a completion passed a posted write"), std::string::npos) << thrown;
}

TEST(ProtocolRules, EveryRuleIsCheckedOnACleanRun) {
  const nlohmann::json s = round_trip(SimConfig{}, 4 << 20);
  EXPECT_EQ(protocol(s)["violations"], 0);
  EXPECT_EQ(protocol(s)["last_violation"], "");
  EXPECT_GT(protocol(s)["tlps_checked"].get<std::uint64_t>(), 8000u);
  EXPECT_EQ(protocol(s)["cbs_checked"], 2) << "both CBs' RBs checked against their data";
  EXPECT_EQ(protocol(s)["violations_by_rule"].size(), kNumProtocolRules);
}

// Strict mode, every rule: the checker throws a ProtocolError whose message names the rule.
void expect_throws(const std::function<void(ProtocolChecker&)>& f, ProtocolRule rule) {
  ProtocolChecker c(pcie::link_params(LinkConfig{}));
  const std::string name(to_string(rule));
  try {
    f(c);
    ADD_FAILURE() << "no ProtocolError for " << name;
  } catch (const ProtocolError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("PCIe protocol violation [" + name + "]", 0), 0u) << e.what();
    EXPECT_EQ(c.violations(rule), 1u);
  }
}

TEST(ProtocolRules, StrictModeThrowsNamingEachRule) {
  using P = ProtocolChecker::Pool;
  expect_throws([](ProtocolChecker& c) { c.request(pcie::TlpType::kMWr, 0, 1024); }, ProtocolRule::kMps);
  expect_throws([](ProtocolChecker& c) { c.request(pcie::TlpType::kMRd, 0, 8192); }, ProtocolRule::kPage4KiB);
  expect_throws([](ProtocolChecker& c) { c.completion(0x1000, 32, false); }, ProtocolRule::kRcb);
  expect_throws([](ProtocolChecker& c) {
    c.set_capacity(P::kPosted, 2, 0);
    for (int i = 0; i < 3; ++i) c.credits_held(P::kPosted, 100, 900, 1, 0);
    c.prune(1000);
  }, ProtocolRule::kCredits);
  expect_throws([](ProtocolChecker& c) { c.tag_issued(4, 10), c.tag_retired(4, 500), c.tag_issued(4, 400); },
                ProtocolRule::kTagLife);
  expect_throws([](ProtocolChecker& c) {
    c.posted_write(LinkDirection::kDown, 100, 700);
    c.completion_order(LinkDirection::kDown, 150, 600, "CplD");
  }, ProtocolRule::kOrdering);
  expect_throws([](ProtocolChecker& c) { c.rb_after_data("dmao", 7, 5000, 4000); }, ProtocolRule::kRbAfterData);
  LinkConfig small;
  small.mrrs = 512;
  ProtocolChecker c(pcie::link_params(small));
  EXPECT_THROW(c.request(pcie::TlpType::kMRd, 0, 1024), ProtocolError);
  EXPECT_EQ(c.violations(ProtocolRule::kMrrs), 1u);
}

TEST(ProtocolRules, CreditsAndOrderingAcceptWhatFits) {
  using P = ProtocolChecker::Pool;
  ProtocolChecker c(pcie::link_params(LinkConfig{}));
  c.set_capacity(P::kPosted, 2, 64);
  // Out of call order, as decoupled initiators book: never more than two at once.
  c.credits_held(P::kPosted, 500, 900, 1, 32);
  c.credits_held(P::kPosted, 100, 500, 1, 32);
  c.credits_held(P::kPosted, 200, 500, 1, 32);
  c.credits_held(P::kPosted, 900, 1200, 1, 32);
  c.prune(2000);
  c.posted_write(LinkDirection::kUp, 100, 400);
  c.posted_write(LinkDirection::kUp, 50, 350);
  c.completion_order(LinkDirection::kUp, 90, 350, "completion after the earlier write");
  c.completion_order(LinkDirection::kUp, 120, 400, "completion after both");
  c.completion_order(LinkDirection::kUp, 40, 100, "completion before both");
  EXPECT_EQ(c.posted_arrival_bound(LinkDirection::kUp, 100), 400u);
  EXPECT_EQ(c.posted_arrival_bound(LinkDirection::kUp, 60), 350u);
  c.completion(0x1000, 64, false);
  c.completion(0x1040, 17, true);  // the last may end anywhere
  c.rb_after_data("dmai", 1, 100, 100);
  EXPECT_EQ(c.violations(), 0u) << c.last_violation();
}

}  // namespace
}  // namespace spyre_dma::model
