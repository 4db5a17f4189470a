// bandwidthTest import: parsing the V100 shmoo logs and the trace built from them.
#include <gtest/gtest.h>

#include <string>

#include "spyre_dma/traces/bandwidth_test.hpp"
#include "spyre_dma/traces/trace_io.hpp"

namespace {

using namespace spyre_dma::traces;

std::string data_dir() {
  std::string f = __FILE__;
  return f.substr(0, f.rfind("testbench/")) + "traces/data/";
}

TEST(BandwidthTestImport, V100ShmooHas81SizesPerDirection) {
  const Trace h2d = import_bandwidth_test(data_dir() + "cuda_memory_h2d_bw.log", {"Tesla V100-PCIE-32GB", "PCIe Gen3 x16"});
  EXPECT_EQ(h2d.allocations.size(), 81u);
  EXPECT_EQ(h2d.header.link, "PCIe Gen3 x16");
  const Op& first = h2d.ops.front();
  EXPECT_EQ(first.kind, OpKind::kH2D);
  EXPECT_EQ(first.host, HostMemory::kRegistered);
  EXPECT_EQ(first.bytes, 1000u);
  EXPECT_DOUBLE_EQ(*first.duration_ns, 1000 / 0.4);  // 0.4 GB/s
  const Op& last = h2d.ops.back();
  EXPECT_EQ(last.bytes, 68000000u);
  EXPECT_DOUBLE_EQ(*last.duration_ns, 68000000 / 12.4);
  // Back to back on one stream: each copy starts where the previous one ended.
  for (std::size_t i = 1; i < h2d.ops.size(); ++i) {
    EXPECT_EQ(h2d.ops[i].stream, 0u);
    EXPECT_NEAR(*h2d.ops[i].start_ns, *h2d.ops[i - 1].start_ns + *h2d.ops[i - 1].duration_ns, 1e-6 * *h2d.ops[i].start_ns);
  }
  EXPECT_EQ(check_trace(h2d), "");
  const Trace d2h = import_bandwidth_test(data_dir() + "cuda_memory_d2h_bw.log");
  EXPECT_EQ(d2h.ops.front().kind, OpKind::kD2H);
  EXPECT_EQ(d2h.allocations.size(), 81u);
}

TEST(BandwidthTestImport, CopiesPerSize) {
  EXPECT_EQ(copies_for_size(1000), 10u);
  EXPECT_EQ(copies_for_size(8ull << 20), 9u);
  EXPECT_EQ(copies_for_size(64ull << 20), 2u);
  EXPECT_EQ(copies_for_size(68000000), 2u);
}

TEST(BandwidthTestImport, ParsesAllDirectionsAndMemories) {
  const auto p = parse_bandwidth_test(
      "[CUDA Bandwidth Test] - Starting...\n"
      "bandwidthTest-D2H-Pageable, Bandwidth = 6.5 GB/s, Time = 0.00010 s, Size = 650000 bytes, NumDevsUsed = 1\n"
      "Result = PASS\n"
      "bandwidthTest-D2D, Bandwidth = 700.0 GB/s, Time = 0.00001 s, Size = 1048576 bytes, NumDevsUsed = 1\n",
      "x.log");
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].line, 2u);
  EXPECT_EQ(p[0].kind, OpKind::kD2H);
  EXPECT_EQ(p[0].host, HostMemory::kPageable);
  EXPECT_DOUBLE_EQ(p[0].gbps, 6.5);
  EXPECT_EQ(p[1].kind, OpKind::kD2D);
  EXPECT_DOUBLE_EQ(p[1].gbps, 350.0);  // bandwidthTest counts a D2D copy's bytes twice
  const Trace t = bandwidth_test_trace(p, "x.log");
  EXPECT_EQ(check_trace(t), "");
  EXPECT_DOUBLE_EQ(*t.ops.back().duration_ns, 1048576 / 350.0);
}

TEST(BandwidthTestImport, TakesTheCudaSamplesMemoryNames) {
  const auto p = parse_bandwidth_test(
      "bandwidthTest-H2D-Paged, Bandwidth = 6.5 GB/s, Time = 0.00010 s, Size = 650000 bytes, NumDevsUsed = 1\n"
      "bandwidthTest-D2H-Pinned-WriteCombined, Bandwidth = 12.5 GB/s, Time = 0.00010 s, Size = 650000 bytes, "
      "NumDevsUsed = 1\n",
      "x.log");
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].host, HostMemory::kPageable);
  EXPECT_EQ(p[1].host, HostMemory::kRegistered);
}

TEST(BandwidthTestImport, MalformedLinesNameLineAndField) {
  auto expect_error = [](const std::string& text, std::size_t line, const std::string& field) {
    try {
      (void)parse_bandwidth_test(text, "bad.log");
      ADD_FAILURE() << "expected TraceError for " << text;
    } catch (const TraceError& e) {
      EXPECT_EQ(e.file(), "bad.log");
      EXPECT_EQ(e.line(), line) << e.what();
      EXPECT_EQ(e.field(), field) << e.what();
    }
  };
  expect_error("hello\nbandwidthTest-H2D-Pinned, Bandwidth = x GB/s, Time = 0 s, Size = 1 bytes, NumDevsUsed = 1\n", 2, "Bandwidth");
  expect_error("bandwidthTest-H2D-Pinned, Bandwidth = 1 MB/s, Time = 0 s, Size = 1 bytes, NumDevsUsed = 1\n", 1, "Bandwidth");
  expect_error("bandwidthTest-H2D-Pinned, Bandwidth = 1 GB/s, Time = 0 s, Size = 1.5 bytes, NumDevsUsed = 1\n", 1, "Size");
  expect_error("bandwidthTest-X2Y-Pinned, Bandwidth = 1 GB/s, Time = 0 s, Size = 1 bytes, NumDevsUsed = 1\n", 1, "direction");
  expect_error("bandwidthTest-H2D-Weird, Bandwidth = 1 GB/s, Time = 0 s, Size = 1 bytes, NumDevsUsed = 1\n", 1, "memory");
  expect_error("bandwidthTest-H2D-Pinned, Bandwidth = 0.0 GB/s, Time = 0 s, Size = 1 bytes, NumDevsUsed = 1\n", 1, "Bandwidth");
  expect_error("bandwidthTest-D2D-Pinned, Bandwidth = 1 GB/s, Time = 0 s, Size = 1e97 bytes, NumDevsUsed = 1\n", 1, "Size");
  expect_error("bandwidthTest-H2D-Pinned, Bandwidth = 1e-308 GB/s, Time = 0 s, Size = 4096 bytes, NumDevsUsed = 1\n", 1, "Bandwidth");
  expect_error("no results here\n", 0, "");
}

}  // namespace
