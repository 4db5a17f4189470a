// The random stimulus: reproducible from the seed, always runnable, and within each epoch it keeps
// the hazard rules the scoreboard depends on (program.hpp).
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "directed.hpp"
#include "generator.hpp"
#include "suites.hpp"

namespace spyre_dma::regress {
namespace {

TEST(Generator, TheSeedDecidesEverything) {
  const GeneratorProfile prof = find_suite("smoke")->profile;
  EXPECT_EQ(to_directed_json(generate(prof, 42)), to_directed_json(generate(prof, 42)));
  EXPECT_NE(to_directed_json(generate(prof, 42)), to_directed_json(generate(prof, 43)));
}

TEST(Generator, ProgramsAreRunnableAndKeepTheHazardRules) {
  for (const char* suite : {"smoke", "faults", "footprint"}) {
    GeneratorProfile prof = find_suite(suite)->profile;
    for (std::uint64_t seed = 0; seed < 150; ++seed) {
      const Program p = generate(prof, seed);
      ASSERT_EQ(check_program(p), "") << suite << " seed " << seed;
      ASSERT_EQ(check_hazards(p), "") << suite << " seed " << seed;
      ASSERT_EQ(p.ops.back().type, OpType::kSync);
    }
  }
}

// With ordering by footprint the generator leaves reads across streams to the engine: no event,
// and a program the hazard rules would refuse without the engine's ordering.
TEST(Generator, FootprintProgramsLeaveReadsAcrossStreamsToTheEngine) {
  const GeneratorProfile prof = find_suite("footprint")->profile;
  const GeneratorProfile smoke = find_suite("smoke")->profile;
  std::size_t unordered = 0, events_smoke = 0, events_footprint = 0;
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    Program p = generate(prof, seed);
    ASSERT_TRUE(p.tuning.order_by_footprint);
    for (const OpSpec& op : p.ops) events_footprint += op.type == OpType::kWait;
    for (const OpSpec& op : generate(smoke, seed).ops) events_smoke += op.type == OpType::kWait;
    p.tuning.order_by_footprint = false;
    unordered += !check_hazards(p).empty();
  }
  EXPECT_GT(unordered, 20u) << "programs that need the engine's ordering";
  EXPECT_LT(events_footprint, events_smoke);
}

TEST(Generator, TheMixCoversTheEdges) {
  GeneratorProfile prof = find_suite("smoke")->profile;
  std::set<OpType> types;
  std::size_t odd = 0, page_multiple = 0, multi_chunk = 0, pageable = 0, registered = 0, small_rings = 0;
  for (std::uint64_t seed = 0; seed < 100; ++seed) {
    const Program p = generate(prof, seed);
    small_rings += p.tuning.ring_slots != 0;
    for (const auto& d : p.device_buffers) multi_chunk += d.max_chunk_bytes != 0;
    for (const auto& h : p.host_buffers) (h.kind == HostKind::kPageable ? pageable : registered)++;
    for (const OpSpec& op : p.ops) {
      types.insert(op.type);
      if (op.bytes) odd += op.bytes % 128 != 0, page_multiple += op.bytes % 4096 == 0;
    }
  }
  EXPECT_EQ(types.size(), 9u);  // every op type, sync included
  EXPECT_GT(odd, 100u);
  EXPECT_GT(page_multiple, 50u);
  EXPECT_GT(multi_chunk, 10u);
  EXPECT_GT(pageable, 10u);
  EXPECT_GT(registered, 10u);
  EXPECT_GT(small_rings, 5u);
}

TEST(Generator, FaultProfilesPlanFaults) {
  const Program nightly = generate(find_suite("nightly")->profile, 3);
  EXPECT_GT(nightly.faults.poisoned_rate, 0);
  std::set<std::string> kinds;
  for (std::uint64_t seed = 0; seed < 8; ++seed) kinds.insert(generate(find_suite("faults")->profile, seed).faults.at_cb_fault);
  EXPECT_EQ(kinds.size(), 8u);
  EXPECT_FALSE(generate(find_suite("smoke")->profile, 3).faults.any());
}

}  // namespace
}  // namespace spyre_dma::regress
