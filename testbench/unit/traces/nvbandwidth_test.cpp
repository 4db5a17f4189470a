// nvbandwidth import: which testcases become points, the lines and key paths errors name, and the
// trace built from the points. The fixtures follow nvbandwidth's JSON output (json_output.cpp:
// JsonCpp's styled writer, tab-indented, keys sorted; bandwidths as strings, "N/A" where nothing
// was measured); their figures are made up.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "spyre_dma/traces/concurrent.hpp"
#include "spyre_dma/traces/nvbandwidth.hpp"
#include "spyre_dma/traces/trace_io.hpp"

namespace {

using namespace spyre_dma::traces;

constexpr std::uint64_t kMiB = 1ull << 20;

// Two GPUs, v0.8: the CE testcases the importer takes one way, a bidirectional and an all-GPU one
// it takes as groups, the host latency, and one of each kind it skips.
const std::string kTwoGpus = R"json({
	"nvbandwidth" :
	{
		"CUDA Runtime Version" : 12080,
		"Driver Version" : "570.86.15",
		"GPU Device list" :
		[
			"0: NVIDIA H100 80GB HBM3 (00000000:19:00): (node7)",
			"1: NVIDIA H100 80GB HBM3 (00000000:3b:00): (node7)"
		],
		"git_version" : "",
		"testcases" :
		[
			{
				"bandwidth_description" : "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)",
				"bandwidth_matrix" :
				[
					[
						"55.2123",
						"55.1987"
					]
				],
				"name" : "host_to_device_memcpy_ce",
				"status" : "Passed",
				"sum" : 110.411
			},
			{
				"bandwidth_description" : "memcpy CE CPU(row) <- GPU(column) bandwidth (GB/s)",
				"bandwidth_matrix" :
				[
					[
						"54.9",
						"55.0346"
					]
				],
				"name" : "device_to_host_memcpy_ce",
				"status" : "Passed",
				"sum" : 109.935
			},
			{
				"bandwidth_description" : "memcpy CE CPU(row) <-> GPU(column) bandwidth (GB/s)",
				"bandwidth_matrix" :
				[
					[
						"41.7702",
						"41.8811"
					]
				],
				"name" : "host_to_device_bidirectional_memcpy_ce",
				"status" : "Passed",
				"sum" : 83.6513
			},
			{
				"bandwidth_description" : "memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)",
				"bandwidth_matrix" :
				[
					[
						"N/A",
						"389.123"
					],
					[
						"390.456",
						"N/A"
					]
				],
				"name" : "device_to_device_memcpy_read_ce",
				"status" : "Passed",
				"sum" : 779.579
			},
			{
				"bandwidth_description" : "memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)",
				"bandwidth_matrix" :
				[
					[
						"N/A",
						"375.5"
					],
					[
						"376.25",
						"N/A"
					]
				],
				"name" : "device_to_device_memcpy_write_ce",
				"status" : "Passed",
				"sum" : 751.75
			},
			{
				"bandwidth_description" : "memcpy CE GPU(row) <-> GPU(column) Total bandwidth (GB/s)",
				"bandwidth_matrix" :
				[
					[
						"N/A",
						"370.1"
					],
					[
						"369.9",
						"N/A"
					],
					[
						"N/A",
						"368.2"
					],
					[
						"367.7",
						"N/A"
					],
					[
						"N/A",
						"738.3"
					],
					[
						"737.6",
						"N/A"
					]
				],
				"name" : "device_to_device_bidirectional_memcpy_read_ce",
				"status" : "Passed",
				"sum" : 1475.9
			},
			{
				"bandwidth_description" : "memcpy CE CPU(row) <- GPU(column) bandwidth (GB/s)",
				"bandwidth_matrix" :
				[
					[
						"27.5",
						"27.4"
					]
				],
				"name" : "all_to_host_memcpy_ce",
				"status" : "Passed",
				"sum" : 54.9
			},
			{
				"bandwidth_description" : "memcpy SM CPU(row) -> GPU(column) bandwidth (GB/s)",
				"bandwidth_matrix" :
				[
					[
						"56.01",
						"56.02"
					]
				],
				"name" : "host_to_device_memcpy_sm",
				"status" : "Passed",
				"sum" : 112.03
			},
			{
				"bandwidth_description" : "memory latency SM CPU(row) <-> GPU(column) (ns)",
				"bandwidth_matrix" :
				[
					[
						"649.879",
						"651.2"
					]
				],
				"name" : "host_device_latency_sm",
				"status" : "Passed",
				"sum" : 1301.08
			},
			{
				"name" : "all_to_one_write_ce",
				"status" : "Waived"
			},
			{
				"name" : "one_to_all_read_ce",
				"status" : "Running"
			},
			{
				"name" : "one_to_all_read_ce",
				"status" : "Error"
			}
		],
		"version" : "v0.8"
	}
})json";

std::size_t line_of(const std::string& text, const std::string& needle) {
  const auto at = text.find(needle);
  EXPECT_NE(at, std::string::npos) << needle;
  return 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
}

// A one-testcase document: `cells` is the bandwidth_matrix's JSON.
std::string one_testcase(const std::string& name, const std::string& cells, const std::string& status = "Passed",
                         const std::string& version = "v0.8") {
  return "{\"nvbandwidth\": {\"version\": \"" + version + "\", \"testcases\": [\n{\"name\": \"" + name +
         "\", \"status\": \"" + status + "\",\n\"bandwidth_matrix\": " + cells + "}]}}\n";
}

void expect_error(const std::string& text, std::size_t line, const std::string& field, std::uint64_t buffer = 0) {
  try {
    NvbandwidthReport report;
    (void)parse_nvbandwidth(text, "bad.json", buffer, report);
    ADD_FAILURE() << "expected TraceError for " << text;
  } catch (const TraceError& e) {
    EXPECT_EQ(e.file(), "bad.json");
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_EQ(e.field(), field) << e.what();
  }
}

TEST(NvbandwidthImport, TwoGpusGiveOnePointPerMeasuredCell) {
  NvbandwidthReport report;
  const auto points = parse_nvbandwidth(kTwoGpus, "run.json", 0, report);
  ASSERT_EQ(points.size(), 8u);
  // Input order: H2D per GPU column, D2H, then D2D read and write per (row, column) pair.
  const OpKind kinds[] = {OpKind::kH2D, OpKind::kH2D, OpKind::kD2H, OpKind::kD2H,
                          OpKind::kD2D, OpKind::kD2D, OpKind::kD2D, OpKind::kD2D};
  const double gbps[] = {55.2123, 55.1987, 54.9, 55.0346, 389.123, 390.456, 375.5, 376.25};
  const char* cells[] = {"\"55.2123\"", "\"55.1987\"", "\"54.9\"",  "\"55.0346\"",
                         "\"389.123\"", "\"390.456\"", "\"375.5\"", "\"376.25\""};
  for (std::size_t i = 0; i < points.size(); ++i) {
    EXPECT_EQ(points[i].kind, kinds[i]) << i;
    EXPECT_DOUBLE_EQ(points[i].gbps, gbps[i]) << i;
    EXPECT_EQ(points[i].bytes, 512 * kMiB) << i;
    EXPECT_EQ(points[i].host, kinds[i] == OpKind::kD2D ? HostMemory::kNone : HostMemory::kRegistered) << i;
    EXPECT_EQ(points[i].line, line_of(kTwoGpus, cells[i])) << i;
  }
  EXPECT_EQ(report.testcases, 12u);
  EXPECT_EQ(report.imported, 4u);
  EXPECT_EQ(report.bidirectional, 1u);  // host_to_device_bidirectional_memcpy_ce
  EXPECT_EQ(report.concurrent, 1u);     // all_to_host_memcpy_ce
  EXPECT_EQ(report.latency, 1u);        // host_device_latency_sm
  EXPECT_EQ(report.sm_copies, 1u);
  EXPECT_EQ(report.between_gpus, 1u);  // device_to_device_bidirectional_memcpy_read_ce
  EXPECT_EQ(report.not_passed, 3u);  // Waived, and a failure's "Running" and "Error" entries
  EXPECT_EQ(report.unknown + report.multinode + report.without_value, 0u);
  EXPECT_EQ(report.imported + report.bidirectional + report.concurrent + report.latency + report.not_passed +
                report.sm_copies + report.between_gpus + report.multinode + report.unknown + report.without_value,
            report.testcases);
  EXPECT_EQ(report.cells_skipped, 4u);  // the D2D diagonals
  EXPECT_EQ(report.points, 8u);
  EXPECT_EQ(report.groups, 4u);          // a group per GPU column of the two concurrent testcases
  EXPECT_EQ(report.latency_points, 2u);  // a latency per GPU
  EXPECT_EQ(report.gpus, 2u);
  EXPECT_EQ(report.buffer_bytes, 512 * kMiB);
  EXPECT_TRUE(report.buffer_bytes_assumed);
  EXPECT_EQ(report.version, "v0.8");
  EXPECT_EQ(report.devices, (std::vector<std::string>{"NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"}));
  EXPECT_DOUBLE_EQ(report.bandwidth_resolution_gbps, 1e-3);  // "390.456": six significant digits
  const auto has_note = [&](const std::string& part) {
    return std::any_of(report.notes.begin(), report.notes.end(),
                       [&](const std::string& n) { return n.find(part) != std::string::npos; });
  };
  EXPECT_TRUE(has_note("testcases[2] host_to_device_bidirectional_memcpy_ce: 2 groups, per GPU a group: its measured "
                       "H2D of 536870912 bytes on one stream beside the other direction's copy (D2H) of 1073741824 "
                       "bytes on a second"));
  EXPECT_TRUE(has_note("testcases[5] device_to_device_bidirectional_memcpy_read_ce: between GPUs"));
  EXPECT_TRUE(has_note("testcases[8] host_device_latency_sm: 2 latency points"));
  EXPECT_TRUE(has_note("testcases[9] all_to_one_write_ce: status \"Waived\""));
  EXPECT_TRUE(has_note("buffer size 512 MiB"));
}

TEST(NvbandwidthImport, TraceIsBackToBackCopiesOfBufferOverBandwidth) {
  const std::string path = testing::TempDir() + "nvbandwidth_two_gpus.json";
  std::ofstream(path) << kTwoGpus;
  NvbandwidthReport report;
  const Trace t = import_nvbandwidth(path, {"", "PCIe Gen5 x16"}, report);
  EXPECT_EQ(check_trace(t), "");
  EXPECT_EQ(t.header.source, "nvbandwidth:nvbandwidth_two_gpus.json");
  EXPECT_EQ(t.header.device, "NVIDIA H100 80GB HBM3");  // from the GPU list: both GPUs alike
  EXPECT_EQ(t.header.link, "PCIe Gen5 x16");
  EXPECT_NE(t.header.extra.at("method").get<std::string>().find("cuMemcpyAsync"), std::string::npos);
  EXPECT_DOUBLE_EQ(t.header.extra.at("bandwidth_resolution_gbps").get<double>(), 1e-3);
  EXPECT_EQ(t.header.extra.at("buffer_bytes").get<std::uint64_t>(), 512 * kMiB);
  EXPECT_TRUE(t.header.extra.at("buffer_bytes_assumed").get<bool>());
  EXPECT_EQ(t.header.extra.at("nvbandwidth_version").get<std::string>(), "v0.8");
  // The one-way points come first, as they always have: back to back on stream 0 of device 0.
  const std::size_t one_way = 8u * copies_for_size(512 * kMiB);
  ASSERT_GT(t.ops.size(), one_way);
  const Op& first = t.ops.front();
  EXPECT_EQ(first.kind, OpKind::kH2D);
  EXPECT_EQ(first.host, HostMemory::kRegistered);
  EXPECT_EQ(first.bytes, 512 * kMiB);
  EXPECT_DOUBLE_EQ(*first.duration_ns, 512.0 * kMiB / 55.2123);  // bytes / (GB/s) = ns
  const Op& last = t.ops[one_way - 1];
  EXPECT_EQ(last.kind, OpKind::kD2D);
  EXPECT_DOUBLE_EQ(*last.duration_ns, 512.0 * kMiB / 376.25);
  for (std::size_t i = 1; i < one_way; ++i) {
    EXPECT_EQ(t.ops[i].stream, 0u);
    EXPECT_EQ(t.ops[i].device, 0u);
    EXPECT_TRUE(t.ops[i].deps.empty());
    EXPECT_NEAR(*t.ops[i].start_ns, *t.ops[i - 1].start_ns + *t.ops[i - 1].duration_ns, 1e-9 * *t.ops[i].start_ns);
  }
  // Then the concurrent groups and the latency points, on the two GPUs' devices.
  EXPECT_EQ(t.header.devices, 2u);
  EXPECT_EQ(t.header.extra.at("groups").size(), 4u + 2u);
  // A device given by the caller wins over the GPU list.
  const Trace named = import_nvbandwidth(path, {"H100 SXM", ""}, report);
  EXPECT_EQ(named.header.device, "H100 SXM");
}

TEST(NvbandwidthImport, BufferSizeIsTheVersionsDefaultOrGiven) {
  EXPECT_EQ(nvbandwidth_default_buffer_bytes("v0.5"), 64 * kMiB);
  EXPECT_EQ(nvbandwidth_default_buffer_bytes("v0.6"), 64 * kMiB);
  EXPECT_EQ(nvbandwidth_default_buffer_bytes("v0.7"), 512 * kMiB);
  EXPECT_EQ(nvbandwidth_default_buffer_bytes("v0.8"), 512 * kMiB);
  EXPECT_EQ(nvbandwidth_default_buffer_bytes("v1.0"), 512 * kMiB);
  EXPECT_EQ(nvbandwidth_default_buffer_bytes(""), 512 * kMiB);
  EXPECT_EQ(nvbandwidth_default_buffer_bytes("unknown"), 512 * kMiB);

  NvbandwidthReport report;
  const std::string v05 = one_testcase("host_to_device_memcpy_ce", "[[\"12.3964\"]]", "Passed", "v0.5");
  EXPECT_EQ(parse_nvbandwidth(v05, "a.json", 0, report).at(0).bytes, 64 * kMiB);
  EXPECT_TRUE(report.buffer_bytes_assumed);
  EXPECT_EQ(parse_nvbandwidth(v05, "a.json", 4 * kMiB, report).at(0).bytes, 4 * kMiB);
  EXPECT_FALSE(report.buffer_bytes_assumed);

  // A smaller --bufferSize leaves only a warning: the default would be wrong, so it must be given.
  const std::string small =
      "{\"nvbandwidth\": {\"version\": \"v0.8\",\n"
      "\"warning\": \"NOTE: You have chosen a buffer size that is smaller than the default buffer size. It is "
      "suggested to use the default buffer size (64MB) to achieve maximal peak bandwidth.\",\n"
      "\"testcases\": [{\"name\": \"host_to_device_memcpy_ce\", \"status\": \"Passed\", \"bandwidth_matrix\": "
      "[[\"20\"]]}]}}";
  expect_error(small, 2, "nvbandwidth.warning");
  EXPECT_EQ(parse_nvbandwidth(small, "a.json", 16 * kMiB, report).at(0).bytes, 16 * kMiB);
  expect_error(v05, 0, "buffer_bytes", (1ull << 53) + 1);
}

TEST(NvbandwidthImport, NotApplicableAndZeroCellsAreSkipped) {
  NvbandwidthReport report;
  const std::string text =
      "{\"nvbandwidth\": {\"testcases\": [\n"
      "{\"name\": \"device_to_device_memcpy_write_ce\", \"status\": \"Passed\",\n"
      " \"bandwidth_matrix\": [[\"N/A\", \"N/A\"], [\"N/A\", \"N/A\"]]},\n"
      "{\"name\": \"device_local_copy\", \"status\": \"Passed\",\n"
      " \"bandwidth_matrix\": [[\"N/A\", \"0\", 1450.5]]}\n"
      "]}}";
  const auto points = parse_nvbandwidth(text, "a.json", 0, report);
  ASSERT_EQ(points.size(), 1u);  // a JSON number is taken as well as nvbandwidth's strings
  EXPECT_EQ(points[0].kind, OpKind::kD2D);
  EXPECT_DOUBLE_EQ(points[0].gbps, 1450.5);
  EXPECT_EQ(points[0].line, 5u);
  EXPECT_EQ(report.without_value, 1u);
  EXPECT_EQ(report.imported, 1u);
  EXPECT_EQ(report.cells_skipped, 6u);
  EXPECT_TRUE(report.buffer_bytes_assumed);
  EXPECT_EQ(report.buffer_bytes, 512 * kMiB);  // no version: the current default
}

TEST(NvbandwidthImport, FailedWaivedAndBetweenGpusAloneAreNothingToImport) {
  const std::string text =
      "{\"nvbandwidth\": {\"testcases\": [\n"
      "{\"name\": \"host_to_device_memcpy_ce\", \"status\": \"Error\", \"error\": \"CUDA_ERROR_OUT_OF_MEMORY\"},\n"
      "{\"name\": \"device_to_device_memcpy_read_ce\", \"status\": \"Waived\"},\n"
      "{\"name\": \"device_to_device_latency_sm\", \"status\": \"Passed\", \"bandwidth_matrix\": [[\"N/A\", "
      "\"812.3\"], [\"810.9\", \"N/A\"]]},\n"
      "{\"name\": \"device_to_device_bidirectional_memcpy_write_ce\", \"status\": \"Passed\", \"bandwidth_matrix\": "
      "[[\"N/A\", \"41.2\"], [\"41.3\", \"N/A\"]]},\n"
      "{\"name\": \"multinode_device_to_device_memcpy_read_ce\", \"status\": \"Passed\", \"bandwidth_matrix\": "
      "[[\"N/A\"]]},\n"
      "{\"name\": \"host_to_device_memcpy_dma_v2\", \"status\": \"Passed\", \"bandwidth_matrix\": [[\"1\"]]}\n"
      "]}}";
  expect_error(text, 1, "nvbandwidth.testcases");
  try {
    NvbandwidthReport report;
    (void)parse_nvbandwidth(text, "a.json", 0, report);
  } catch (const TraceError& e) {
    EXPECT_NE(e.message().find("of 6 testcases 2 did not pass, 0 SM copies, 2 between GPUs, 1 multinode, 1 unknown"),
              std::string::npos)
        << e.what();
  }
  // The same testcases next to one that passed: counted, each once, and noted.
  const std::string more =
      text.substr(0, text.size() - 4) +
      ",\n{\"name\": \"host_to_device_memcpy_ce\", \"status\": \"Passed\", \"bandwidth_matrix\": [[\"25.1\"]]}\n]}}";
  NvbandwidthReport report;
  const auto points = parse_nvbandwidth(more, "a.json", 0, report);
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0].line, 8u);
  EXPECT_EQ(report.testcases, 7u);
  EXPECT_EQ(report.not_passed, 2u);
  EXPECT_EQ(report.between_gpus, 2u);  // the latency and the bidirectional copies between GPUs
  EXPECT_EQ(report.latency + report.bidirectional + report.concurrent, 0u);
  EXPECT_EQ(report.multinode, 1u);
  EXPECT_EQ(report.unknown, 1u);
  EXPECT_EQ(report.imported, 1u);
  EXPECT_NE(std::find(report.notes.begin(), report.notes.end(),
                      "testcases[0] host_to_device_memcpy_ce: status \"Error\" (CUDA_ERROR_OUT_OF_MEMORY), skipped"),
            report.notes.end());
}

TEST(NvbandwidthImport, MalformedJsonNamesTheLine) {
  expect_error("{\n\"nvbandwidth\": {\n\"testcases\": [\n{\"name\": \"x\" \"status\": \"Passed\"}\n]}}", 4, "");
  expect_error("{\"nvbandwidth\": {\"testcases\": [\n\n", 3, "");
  expect_error("", 1, "");
  expect_error("{\"nvbandwidth\": {\"testcases\": [\n\n[1e999]]}}", 3, "");  // beyond a double
}

TEST(NvbandwidthImport, BadBandwidthNamesItsKeyPathAndLine) {
  std::string text = kTwoGpus;
  text.replace(text.find("\"55.0346\""), 9, "\"55,0346\"");
  expect_error(text, line_of(text, "\"55,0346\""), "nvbandwidth.testcases[1].bandwidth_matrix[0][1]");
  expect_error(one_testcase("host_to_device_memcpy_ce", "[[\"fast\"]]"), 3,
               "nvbandwidth.testcases[0].bandwidth_matrix[0][0]");
  expect_error(one_testcase("host_to_device_memcpy_ce", "[[\" 12\"]]"), 3,
               "nvbandwidth.testcases[0].bandwidth_matrix[0][0]");
  expect_error(one_testcase("host_to_device_memcpy_ce", "[[\"-3.5\"]]"), 3,
               "nvbandwidth.testcases[0].bandwidth_matrix[0][0]");
  expect_error(one_testcase("host_to_device_memcpy_ce", "[[true]]"), 3,
               "nvbandwidth.testcases[0].bandwidth_matrix[0][0]");
  expect_error(one_testcase("host_to_device_memcpy_ce", "[[\"1e-308\"]]"), 3,
               "nvbandwidth.testcases[0].bandwidth_matrix[0][0]");
  expect_error(one_testcase("host_to_device_memcpy_ce", "[[\"1e999\"]]"), 3,
               "nvbandwidth.testcases[0].bandwidth_matrix[0][0]");
}

TEST(NvbandwidthImport, BadStructureNamesItsKeyPath) {
  expect_error("{\"nvbandwidth\": {\"version\": \"v0.8\"}}", 1, "nvbandwidth.testcases");
  expect_error("{\"nvbandwidth\": {\"error\": \"ERROR: Invalid Arguments\"}}", 1, "nvbandwidth.testcases");
  expect_error("{\"nvbandwidth\": {\"testcases\": {}}}", 1, "nvbandwidth.testcases");
  expect_error("[1, 2]", 1, "nvbandwidth");
  expect_error("{\"bandwidthTest\": {}}", 1, "nvbandwidth");
  expect_error("{\"nvbandwidth\":\n[]}", 2, "nvbandwidth");
  expect_error("{\"nvbandwidth\": {\"testcases\": [\n{\"status\": \"Passed\"}]}}", 2, "nvbandwidth.testcases[0].name");
  expect_error("{\"nvbandwidth\": {\"testcases\": [\n{\"name\": \"x\",\n\"status\": 1}]}}", 3,
               "nvbandwidth.testcases[0].status");
  expect_error("{\"nvbandwidth\": {\"testcases\": [\n{\"name\": \"x\", \"status\": \"Passed\"},\n7]}}", 3,
               "nvbandwidth.testcases[1]");
  expect_error(
      "{\"nvbandwidth\": {\"testcases\": [\n{\"name\": \"host_to_device_memcpy_ce\", \"status\": \"Passed\"}]}}", 2,
      "nvbandwidth.testcases[0].bandwidth_matrix");
  // Matrix shapes: the host testcases have the CPU's row only, the peer ones a square.
  expect_error(one_testcase("host_to_device_memcpy_ce", "[[\"1\"], [\"2\"]]"), 3,
               "nvbandwidth.testcases[0].bandwidth_matrix");
  expect_error(one_testcase("device_to_device_memcpy_read_ce", "[[\"N/A\", \"1\"]]"), 3,
               "nvbandwidth.testcases[0].bandwidth_matrix");
  expect_error(one_testcase("device_to_device_memcpy_read_ce", "[[\"N/A\", \"1\"],\n[\"2\"]]"), 4,
               "nvbandwidth.testcases[0].bandwidth_matrix[1]");
  expect_error(one_testcase("host_to_device_memcpy_ce", "[]"), 3, "nvbandwidth.testcases[0].bandwidth_matrix");
  expect_error(one_testcase("host_to_device_memcpy_ce", "[\"1\"]"), 3, "nvbandwidth.testcases[0].bandwidth_matrix[0]");
  expect_error(one_testcase("host_to_device_memcpy_ce", "\"1\""), 3, "nvbandwidth.testcases[0].bandwidth_matrix");
}

TEST(NvbandwidthImport, DuplicateKeysTakeTheLastAsTheDocumentDoes) {
  const std::string text =
      "{\"nvbandwidth\": {\"testcases\": [\n"
      "{\"name\": \"host_to_device_memcpy_ce\", \"status\": \"Passed\",\n"
      "\"bandwidth_matrix\": [[\"1\"]],\n"
      "\"bandwidth_matrix\": [[\n\"2\"]]}]}}";
  NvbandwidthReport report;
  const auto points = parse_nvbandwidth(text, "a.json", 0, report);
  ASSERT_EQ(points.size(), 1u);
  EXPECT_DOUBLE_EQ(points[0].gbps, 2);
  EXPECT_EQ(points[0].line, 5u);
}

}  // namespace

// ---- Concurrent testcases -------------------------------------------------------------------

namespace {

// Compact documents of several testcases, each a name and a one-row matrix of `cells` (a JSON
// array's contents); figures made up, in the range of a Gen5 host.
std::string testcases(const std::vector<std::pair<std::string, std::string>>& cases) {
  std::string out = "{\"nvbandwidth\": {\"version\": \"v0.8\", \"testcases\": [\n";
  for (std::size_t i = 0; i < cases.size(); ++i) {
    out += "{\"name\": \"" + cases[i].first + "\", \"status\": \"Passed\", \"bandwidth_matrix\": [[" +
           cases[i].second + "]]}" + (i + 1 < cases.size() ? ",\n" : "\n");
  }
  return out + "]}}\n";
}

Trace import_text(const std::string& file, const std::string& text, NvbandwidthReport& report,
                  std::uint64_t buffer = 4 * kMiB) {
  const std::string path = testing::TempDir() + file;
  std::ofstream(path) << text;
  return import_nvbandwidth(path, {"", "PCIe Gen5 x16"}, report, buffer);
}

// The ops of the group whose ids are [first, last].
std::vector<const Op*> ops_of(const Trace& t, const ConcurrentGroup& g) {
  std::vector<const Op*> out;
  for (const Op& op : t.ops)
    if (op.id >= g.first_op && op.id <= g.last_op) out.push_back(&op);
  return out;
}

}  // namespace

TEST(NvbandwidthConcurrent, BidirectionalCellsBecomeTheMeasuredCopyBesideTwiceItsSizeTheOtherWay) {
  const std::string text = testcases({{"host_to_device_bidirectional_memcpy_ce", "\"44.1187\", \"43.9021\""},
                                      {"device_to_host_bidirectional_memcpy_ce", "\"40.2254\", \"N/A\""}});
  NvbandwidthReport report;
  const Trace t = import_text("bidir.json", text, report);
  EXPECT_EQ(check_trace(t), "");
  EXPECT_EQ(report.bidirectional, 2u);
  EXPECT_EQ(report.groups, 3u);
  EXPECT_EQ(report.cells_skipped, 1u);
  EXPECT_EQ(report.points, 0u);  // nothing one-way: the trace is the groups alone
  EXPECT_EQ(t.header.devices, 2u);
  EXPECT_EQ(t.header.extra.at("concurrent").at("interferer_bytes").get<std::uint64_t>(), 8 * kMiB);
  const std::uint32_t copies = copies_for_size(4 * kMiB);
  EXPECT_EQ(t.header.extra.at("concurrent").at("copies_per_stream").get<std::uint32_t>(), copies);
  EXPECT_NE(t.header.extra.at("concurrent").at("measured").get<std::string>().find("first stream"), std::string::npos);

  const std::vector<ConcurrentGroup> groups = concurrent_groups(t);
  ASSERT_EQ(groups.size(), 3u);
  const char* labels[] = {"h2d registered (d2h beside)", "h2d registered (d2h beside)", "d2h registered (h2d beside)"};
  const std::uint32_t device[] = {0, 1, 0};
  const OpKind measured[] = {OpKind::kH2D, OpKind::kH2D, OpKind::kD2H};
  const double gbps[] = {44.1187, 43.9021, 40.2254};
  for (std::size_t g = 0; g < groups.size(); ++g) {
    EXPECT_EQ(groups[g].label, labels[g]);
    EXPECT_EQ(groups[g].measure, GroupMeasure::kCopy);
    const auto ops = ops_of(t, groups[g]);
    ASSERT_EQ(ops.size(), 2u * copies) << g;
    std::size_t timed = 0;
    for (const Op* op : ops) {
      EXPECT_EQ(op->device, device[g]);  // both copies on the cell's GPU, on two streams
      EXPECT_EQ(op->host, HostMemory::kRegistered);
      if (op->stream == 0) {  // the measured copy: the buffer, at the printed bandwidth
        EXPECT_EQ(op->kind, measured[g]);
        EXPECT_EQ(op->bytes, 4 * kMiB);
        ASSERT_TRUE(op->duration_ns.has_value());
        EXPECT_DOUBLE_EQ(*op->duration_ns, 4.0 * kMiB / gbps[g]);
        ++timed;
      } else {  // the other direction, twice the buffer, not measured
        EXPECT_EQ(op->stream, 1u);
        EXPECT_NE(op->kind, measured[g]);
        EXPECT_EQ(op->bytes, 8 * kMiB);
        EXPECT_FALSE(op->duration_ns.has_value());
        EXPECT_FALSE(op->start_ns.has_value());
      }
    }
    EXPECT_EQ(timed, copies);
  }
  // Groups run one after another: each stream's first op of a group waits for the last op of
  // every stream of the group before (its own stream's by stream order).
  for (std::size_t g = 1; g < groups.size(); ++g) {
    const auto before = ops_of(t, groups[g - 1]);
    std::vector<std::uint64_t> tails;
    for (std::uint32_t s = 0; s < 2; ++s) {
      for (auto it = before.rbegin(); it != before.rend(); ++it)
        if ((*it)->stream == s) {
          tails.push_back((*it)->id);
          break;
        }
    }
    for (const Op* op : ops_of(t, groups[g])) {
      if (op->id > groups[g].first_op + 1) {
        EXPECT_TRUE(op->deps.empty()) << op->id;  // later copies follow their stream
        continue;
      }
      for (const std::uint64_t tail : tails) {
        const bool same_queue = t.ops[tail - 1].device == op->device && t.ops[tail - 1].stream == op->stream;
        EXPECT_EQ(std::count(op->deps.begin(), op->deps.end(), tail), same_queue ? 0 : 1) << op->id << " " << tail;
      }
    }
  }
}

TEST(NvbandwidthConcurrent, AllDevicesCellsPutEveryOtherGpusCopiesBeside) {
  const std::string text = testcases({{"host_to_all_memcpy_ce", "\"27.61\", \"27.58\", \"27.66\""},
                                      {"all_to_host_bidirectional_memcpy_ce", "\"19.02\", \"19.11\", \"18.97\""}});
  NvbandwidthReport report;
  const Trace t = import_text("all.json", text, report, 2 * kMiB);
  EXPECT_EQ(check_trace(t), "");
  EXPECT_EQ(report.concurrent, 2u);
  EXPECT_EQ(report.gpus, 3u);
  EXPECT_EQ(t.header.devices, 3u);
  const std::vector<ConcurrentGroup> groups = concurrent_groups(t);
  ASSERT_EQ(groups.size(), 6u);
  const std::uint32_t copies = copies_for_size(2 * kMiB);
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const bool bidir = g >= 3;
    const std::uint32_t measured_gpu = static_cast<std::uint32_t>(g % 3);
    EXPECT_EQ(groups[g].label, bidir ? "d2h registered (all devices, both ways)" : "h2d registered (all devices)");
    const OpKind kind = bidir ? OpKind::kD2H : OpKind::kH2D;
    // Per (device, stream): its kind, size and whether it is timed.
    std::map<std::pair<std::uint32_t, std::uint32_t>, std::vector<const Op*>> lanes;
    for (const Op* op : ops_of(t, groups[g])) lanes[{op->device, op->stream}].push_back(op);
    ASSERT_EQ(lanes.size(), bidir ? 6u : 3u) << g;  // host_to_all: one stream per GPU; bidirectional: two
    // Each device's first stream of the group copies the measured direction, its second the other.
    std::map<std::uint32_t, std::uint32_t> first_stream;
    for (const auto& [queue, ops] : lanes) first_stream.try_emplace(queue.first, queue.second);
    EXPECT_EQ(first_stream.size(), 3u);
    for (const auto& [queue, ops] : lanes) {
      EXPECT_EQ(ops.size(), copies);
      const Op& op = *ops.front();
      const bool first = queue.second == first_stream.at(queue.first);
      const bool is_measured = queue.first == measured_gpu && first;
      EXPECT_EQ(op.duration_ns.has_value(), is_measured) << g << " " << queue.first << "/" << queue.second;
      EXPECT_EQ(op.bytes, is_measured ? 2 * kMiB : 4 * kMiB);
      EXPECT_EQ(op.kind, first ? kind : (kind == OpKind::kH2D ? OpKind::kD2H : OpKind::kH2D));
    }
  }
  const Op* first = ops_of(t, groups[2]).front();
  EXPECT_DOUBLE_EQ(*first->duration_ns, 2.0 * kMiB / 27.66);
}

TEST(NvbandwidthConcurrent, HostLatencyBecomesA128ByteCopyPerGpuReportedApart) {
  const std::string text = testcases({{"host_to_device_memcpy_ce", "\"53.8\", \"53.7\""},
                                      {"host_device_latency_sm", "\"712.404\", \"718.95\""}});
  NvbandwidthReport report;
  const Trace t = import_text("latency.json", text, report);
  EXPECT_EQ(check_trace(t), "");
  EXPECT_EQ(report.latency, 1u);
  EXPECT_EQ(report.latency_points, 2u);
  EXPECT_EQ(report.imported, 1u);
  EXPECT_EQ(t.header.devices, 2u);
  const std::vector<ConcurrentGroup> groups = concurrent_groups(t);
  ASSERT_EQ(groups.size(), 2u);  // the one-way points are in no group
  const double ns[] = {712.404, 718.95};
  for (std::uint32_t d = 0; d < 2; ++d) {
    EXPECT_EQ(groups[d].measure, GroupMeasure::kLatency);
    EXPECT_EQ(groups[d].label, "h2d registered latency");
    EXPECT_NE(groups[d].note.find("8-byte load"), std::string::npos);
    const auto ops = ops_of(t, groups[d]);
    ASSERT_EQ(ops.size(), 1u);
    EXPECT_EQ(ops[0]->device, d);
    EXPECT_EQ(ops[0]->kind, OpKind::kH2D);
    EXPECT_EQ(ops[0]->bytes, 128u);
    EXPECT_DOUBLE_EQ(*ops[0]->duration_ns, ns[d]);
    // After everything before it: GPU 0's follows the one-way copies on its stream, GPU 1's
    // waits for GPU 0's.
    if (d == 0) {
      EXPECT_TRUE(ops[0]->deps.empty());
      EXPECT_EQ(ops[0]->stream, t.ops[ops[0]->id - 2].stream);
      EXPECT_EQ(ops[0]->device, t.ops[ops[0]->id - 2].device);
    } else {
      EXPECT_EQ(ops[0]->deps, std::vector<std::uint64_t>{groups[0].first_op});
    }
  }
}

TEST(NvbandwidthConcurrent, MatricesMustAgreeOnTheGpusAndCellsMustBeNumbers) {
  const std::string text = testcases({{"host_to_device_bidirectional_memcpy_ce", "\"44.1\", \"43.9\""},
                                      {"host_to_all_memcpy_ce", "\"27.6\", \"27.5\", \"27.7\""}});
  expect_error(text, 3, "nvbandwidth.testcases[1].bandwidth_matrix");
  try {
    NvbandwidthReport report;
    (void)parse_nvbandwidth_results(text, "bad.json", 0, report);
  } catch (const TraceError& e) {
    EXPECT_NE(e.message().find("3 GPU columns where nvbandwidth.testcases[0] has 2"), std::string::npos) << e.what();
  }
  // A concurrent or latency cell that is not a number names its key path, as a one-way cell's does.
  expect_error(testcases({{"all_to_host_memcpy_ce", "\"27,6\""}}), 2, "nvbandwidth.testcases[0].bandwidth_matrix[0][0]");
  expect_error(testcases({{"host_device_latency_sm", "true"}}), 2, "nvbandwidth.testcases[0].bandwidth_matrix[0][0]");
  // Two rows where the CPU's one is expected.
  expect_error(one_testcase("host_to_all_memcpy_ce", "[[\"27.6\"], [\"27.5\"]]"), 3,
               "nvbandwidth.testcases[0].bandwidth_matrix");
}

TEST(NvbandwidthConcurrent, ATraceOfTheGroupsReadsBackAsWritten) {
  const std::string text = testcases({{"device_to_host_memcpy_ce", "\"52.1\", \"52.3\""},
                                      {"host_to_all_bidirectional_memcpy_ce", "\"33.3\", \"33.1\""},
                                      {"host_device_latency_sm", "\"705.2\", \"709.9\""}});
  NvbandwidthReport report;
  const Trace t = import_text("round.json", text, report);
  std::stringstream s;
  write_trace(t, s);
  const Trace back = parse_trace(s, "round");
  EXPECT_EQ(back.header.devices, 2u);
  ASSERT_EQ(back.ops.size(), t.ops.size());
  for (std::size_t i = 0; i < t.ops.size(); ++i) {
    EXPECT_EQ(back.ops[i].device, t.ops[i].device);
    EXPECT_EQ(back.ops[i].deps, t.ops[i].deps);
  }
  EXPECT_EQ(concurrent_groups(back).size(), 4u);
}
