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

struct Touch {
  std::size_t op;
  std::uint32_t stream;
  std::uint64_t lo, hi;
};

bool overlap(const Touch& a, std::uint64_t lo, std::uint64_t hi) { return a.lo < hi && lo < a.hi; }

// Checks one program's epochs; returns what is wrong, or "".
std::string check_hazards(const Program& p) {
  // Buffers are keyed as (host?, index).
  std::map<std::pair<bool, std::uint32_t>, std::vector<Touch>> writes, reads;
  std::vector<std::size_t> epoch_start_ops;
  std::size_t epoch_start = 0;
  auto ordered = [&](const Touch& w, std::size_t reader, std::uint32_t stream) {
    // The same stream orders it, except across pipelines on a pipeline-FIFO stream.
    if (w.stream == stream &&
        (p.streams[stream].ordering != Ordering::kPipelineFifo || queue_of(p.ops[w.op].type) == queue_of(p.ops[reader].type))) {
      return true;
    }
    // An event recorded on the writer's stream after the write, waited on by the reader's stream
    // between the record and the read.
    for (std::size_t r = w.op + 1; r < reader; ++r) {
      if (p.ops[r].type != OpType::kRecord || p.ops[r].stream != w.stream) continue;
      for (std::size_t k = r + 1; k < reader; ++k) {
        if (p.ops[k].type == OpType::kWait && p.ops[k].stream == stream && p.ops[k].event == p.ops[r].event) {
          return true;
        }
      }
    }
    return false;
  };
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    const OpSpec& op = p.ops[i];
    if (op.type == OpType::kSync) {
      writes.clear(), reads.clear();
      epoch_start = i + 1;
      continue;
    }
    (void)epoch_start;
    std::vector<std::pair<std::pair<bool, std::uint32_t>, std::uint64_t>> rd, wr;
    switch (op.type) {
      case OpType::kH2D: rd.push_back({{true, op.host}, op.host_offset}); wr.push_back({{false, op.dev}, op.dev_offset}); break;
      case OpType::kD2H: rd.push_back({{false, op.dev}, op.dev_offset}); wr.push_back({{true, op.host}, op.host_offset}); break;
      case OpType::kD2D: rd.push_back({{false, op.src_dev}, op.src_offset}); wr.push_back({{false, op.dev}, op.dev_offset}); break;
      case OpType::kFill: wr.push_back({{false, op.dev}, op.dev_offset}); break;
      default: break;
    }
    for (const auto& [buf, off] : rd) {
      for (const Touch& w : writes[buf]) {
        if (overlap(w, off, off + op.bytes) && !ordered(w, i, op.stream)) {
          return "op " + std::to_string(i) + " reads what op " + std::to_string(w.op) + " wrote, unordered";
        }
      }
    }
    for (const auto& [buf, off] : wr) {
      for (const Touch& w : writes[buf]) {
        if (overlap(w, off, off + op.bytes)) return "op " + std::to_string(i) + " writes bytes op " + std::to_string(w.op) + " wrote";
      }
      for (const Touch& r : reads[buf]) {
        if (overlap(r, off, off + op.bytes)) return "op " + std::to_string(i) + " writes bytes op " + std::to_string(r.op) + " read";
      }
    }
    for (const auto& [buf, off] : rd) reads[buf].push_back(Touch{i, op.stream, off, off + op.bytes});
    for (const auto& [buf, off] : wr) writes[buf].push_back(Touch{i, op.stream, off, off + op.bytes});
  }
  return {};
}

TEST(Generator, TheSeedDecidesEverything) {
  const GeneratorProfile prof = find_suite("smoke")->profile;
  EXPECT_EQ(to_directed_json(generate(prof, 42)), to_directed_json(generate(prof, 42)));
  EXPECT_NE(to_directed_json(generate(prof, 42)), to_directed_json(generate(prof, 43)));
}

TEST(Generator, ProgramsAreRunnableAndKeepTheHazardRules) {
  for (const char* suite : {"smoke", "faults"}) {
    GeneratorProfile prof = find_suite(suite)->profile;
    for (std::uint64_t seed = 0; seed < 150; ++seed) {
      const Program p = generate(prof, seed);
      ASSERT_EQ(check_program(p), "") << suite << " seed " << seed;
      ASSERT_EQ(check_hazards(p), "") << suite << " seed " << seed;
      ASSERT_EQ(p.ops.back().type, OpType::kSync);
    }
  }
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
