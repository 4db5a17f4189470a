// The directed-test reader: programs round-trip through the format, and every bad file gets an
// error naming the file, the place and the value.
#include <gtest/gtest.h>

#include "directed.hpp"
#include "generator.hpp"
#include "suites.hpp"

namespace spyre_dma::regress {
namespace {

std::string error_of(const std::string& text) {
  try {
    (void)parse_directed(text, "t.json");
  } catch (const DirectedError& e) {
    return e.what();
  }
  return "no error";
}

const char* kHead = R"({"name": "t", "streams": [{}], "host_buffers": [{"bytes": 4096}],
  "device_buffers": [{"bytes": 4096}], )";

TEST(Directed, AGeneratedProgramRoundTrips) {
  const Program p = generate(find_suite("smoke")->profile, 11);
  const DirectedTest t = parse_directed(to_directed_json(p), "gen.json");
  EXPECT_EQ(to_directed_json(t.program), to_directed_json(p));
}

TEST(Directed, ARandomFaultPlanAndItsSeedRoundTrip) {
  const Program p = generate(find_suite("nightly")->profile, 12);
  ASSERT_GT(p.faults.poisoned_rate, 0.0);
  const DirectedTest t = parse_directed(to_directed_json(p, "kept", true), "n.json");
  ASSERT_TRUE(t.seed.has_value());
  EXPECT_EQ(*t.seed, 12u);
  EXPECT_EQ(t.program.faults.poisoned_rate, p.faults.poisoned_rate);
  EXPECT_EQ(t.program.faults.device_reset_rate, p.faults.device_reset_rate);
  EXPECT_EQ(t.program.faults.config_patch(), p.faults.config_patch());
  EXPECT_FALSE(parse_directed(to_directed_json(p), "n.json").seed.has_value()) << "the seed is kept on request";
  EXPECT_THROW(parse_directed(std::string(kHead) + R"("faults": {"poisoned_rate": 2}, "ops": []})", "t.json"),
               DirectedError);
}

TEST(Directed, ReadsExpectationsAndAppendsTheFinalSync) {
  const DirectedTest t = parse_directed(std::string(kHead) + R"("ops": [
    {"op": "h2d", "bytes": 100, "expect": {"error": "device_error", "kind": "pcie_error"}}]})", "t.json");
  ASSERT_EQ(t.program.ops.size(), 2u);
  ASSERT_TRUE(t.program.ops[0].expect);
  EXPECT_EQ(t.program.ops[0].expect->code, ErrorCode::kDeviceError);
  EXPECT_EQ(*t.program.ops[0].expect->kind, hw::ErrorKind::kPcieError);
  EXPECT_EQ(t.program.ops[1].type, OpType::kSync);
}

TEST(Directed, ErrorsNameTheFilePlaceAndValue) {
  EXPECT_EQ(error_of(std::string(kHead) + R"("ops": [{"op": "h2d", "byts": 1}]})"),
            "t.json: $.ops[0].byts: unknown key (allowed here: op, stream, host, host_offset, dev, dev_offset, "
            "src_dev, src_offset, bytes, pattern, duration_ns, event, expect)");
  EXPECT_EQ(error_of(std::string(kHead) + R"("ops": [{"op": "h2x", "bytes": 1}]})"),
            "t.json: $.ops[0].op: \"h2x\" is not one of: h2d, d2h, d2d, fill, compute, host_callback, record, wait, sync");
  EXPECT_EQ(error_of(std::string(kHead) + R"("ops": [{"op": "h2d", "bytes": "12x"}]})"),
            "t.json: $.ops[0].bytes: \"12x\" is not an unsigned integer");
  EXPECT_EQ(error_of(std::string(kHead) + R"("ops": [{"op": "h2d", "bytes": -4}]})"),
            "t.json: $.ops[0].bytes: -4 is negative");
  EXPECT_EQ(error_of(std::string(kHead) + R"("ops": [{"op": "h2d"}]})"), "t.json: $.ops[0].bytes: missing");
  EXPECT_EQ(error_of(std::string(kHead) + R"("ops": [{"op": "h2d", "bytes": 5000}]})"),
            "t.json: $.ops: op 0 (h2d): host range [0, +5000) exceeds host buffer 0 (4096 bytes)");
  EXPECT_EQ(error_of(std::string(kHead) + R"("ops": [{"op": "d2h", "bytes": 1, "expect": {"error": "oops"}}]})"),
            "t.json: $.ops[0].expect.error: \"oops\" is not an error code (ok, invalid_argument, out_of_memory, "
            "device_error, iommu_fault, device_timeout, device_fault, cancelled)");
  const std::string syntax = error_of("{\n  \"name\": \"t\",\n  oops\n}");
  EXPECT_EQ(syntax.rfind("t.json: 3:3: invalid JSON:", 0), 0u) << syntax;
  EXPECT_EQ(error_of(R"({"name": "t", "ops": []})"), "t.json: $.streams: expected a non-empty array of streams");
  // Found by fuzzing: a number beyond a double is nlohmann's out_of_range, not a parse_error.
  const std::string overflow = error_of(R"({"name": "t", "events": 1e999})");
  EXPECT_EQ(overflow.rfind("t.json: $: invalid JSON:", 0), 0u) << overflow;
}

TEST(Directed, TheProjectsDirectedTestsAllLoad) {
  const auto files = directed_files(SPYRE_DMA_DIRECTED_DIR);
  ASSERT_GE(files.size(), 5u);
  for (const auto& f : files) EXPECT_NO_THROW((void)load_directed(f)) << f;
}

}  // namespace
}  // namespace spyre_dma::regress
