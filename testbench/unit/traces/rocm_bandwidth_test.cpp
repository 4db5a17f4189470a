// ROCm bandwidth imports: rocm-bandwidth-test tables and matrices, hipBusBandwidth summaries.
// The fixtures follow the tools' printing code (rocm_bandwidth_test_report.cpp of
// ROCm/rocm_bandwidth_test; hipBusBandwidth.cpp and ResultDatabase.cpp of ROCm/HIP
// samples/1_Utils/hipBusBandwidth), widths and tabs included.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "spyre_dma/traces/concurrent.hpp"
#include "spyre_dma/traces/rocm_bandwidth.hpp"
#include "spyre_dma/traces/trace_io.hpp"

namespace {

using namespace spyre_dma::traces;

constexpr std::uint64_t kMiB = 1024 * 1024;

// 1-based line of the first line containing `needle`.
std::size_t line_of(const std::string& text, const std::string& needle) {
  const auto at = text.find(needle);
  EXPECT_NE(at, std::string::npos) << needle;
  return 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
}

std::string write_temp(const std::string& file, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + file;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// `rocm-bandwidth-test -s 0,2 -d 0,2,3` on two CPUs (0, 1) and two GPUs (2, 3): CPU -> GPU,
// GPU -> CPU, within GPU 2 and GPU 2 -> GPU 3 (CPU -> CPU is not run by the tool).
const std::string kRbtTables =
    "....................\n"
    "          RocmBandwidthTest Version: 2.6.0\n"
    "\n"
    "          Launch Command is: rocm-bandwidth-test -s 0,2 -d 0,2,3\n"
    "\n"
    "\n"
    "================    Unidirectional Benchmark Result    ================\n"
    "================ Src Device Id: 0 Src Device Type: Cpu ================\n"
    "================ Dst Device Id: 2 Dst Device Type: Gpu ================\n"
    "\n"
    "Data Size      Avg Time(us)   Avg BW(GB/s)   Min Time(us)   Peak BW(GB/s)  \n"
    "1 KB           10.240         0.100          9.920          0.103          \n"
    "2 MB           83.886         25.000         80.000         26.214\n"
    "64 MB          2684.355       25.000         2600.000       25.811\n"
    "\n"
    "================    Unidirectional Benchmark Result    ================\n"
    "================ Src Device Id: 0 Src Device Type: Cpu ================\n"
    "================ Dst Device Id: 3 Dst Device Type: Gpu ================\n"
    "\n"
    "Data Size      Avg Time(us)   Avg BW(GB/s)   Min Time(us)   Peak BW(GB/s)\n"
    "1 KB           10.752         0.095          10.112         0.101\n"
    "\n"
    "================    Unidirectional Benchmark Result    ================\n"
    "================ Src Device Id: 2 Src Device Type: Gpu ================\n"
    "================ Dst Device Id: 0 Dst Device Type: Cpu ================\n"
    "\n"
    "Data Size      Avg Time(us)   Avg BW(GB/s)   Min Time(us)   Peak BW(GB/s)\n"
    "1 KB           12.800         0.080          12.160         0.084\n"
    "64 MB          2440.322       27.500         2400.000       27.962\n"
    "\n"
    "================    Unidirectional Benchmark Result    ================\n"
    "================ Src Device Id: 2 Src Device Type: Gpu ================\n"
    "================ Dst Device Id: 2 Dst Device Type: Gpu ================\n"
    "\n"
    "Data Size      Avg Time(us)   Avg BW(GB/s)   Min Time(us)   Peak BW(GB/s)\n"
    "64 MB          104.858        1279.995       100.000        1342.177\n"
    "\n"
    "================    Unidirectional Benchmark Result    ================\n"
    "================ Src Device Id: 2 Src Device Type: Gpu ================\n"
    "================ Dst Device Id: 3 Dst Device Type: Gpu ================\n"
    "\n"
    "Data Size      Avg Time(us)   Avg BW(GB/s)   Min Time(us)   Peak BW(GB/s)\n"
    "64 MB          1342.177       50.000         1300.000       51.622\n"
    "\n";

// The default run (-a then -A): device list, link property matrices, then the unidirectional and
// bidirectional peak bandwidth matrices of a 64 MiB copy.
const std::string kRbtMatrices =
    "\n"
    "          RocmBandwidthTest Version: 2.6.0\n"
    "\n"
    "          Launch Command is: rocm-bandwidth-test (rocm_bandwidth -a + rocm_bandwidth -A)\n"
    "\n"
    "\n"
    "          Device: 0,  AMD EPYC 7713 64-Core Processor\n"
    "          Device: 1,  AMD EPYC 7713 64-Core Processor\n"
    "          Device: 2,  gfx90a,  GPU-5b7a3c9e2f1d4a62,  c1:0.0\n"
    "          Device: 3,  gfx90a,  GPU-5b7a3c9e2f1d4a63,  c5:0.0\n"
    "\n"
    "          Inter-Device Access\n"
    "\n"
    "          D/D       0         1         2         3\n"
    "\n"
    "          0         1         1         1         1\n"
    "\n"
    "          1         1         1         1         1\n"
    "\n"
    "          2         1         1         1         1\n"
    "\n"
    "          3         1         1         1         1\n"
    "\n"
    "\n"
    "          Inter-Device Numa Distance\n"
    "\n"
    "          D/D       0         1         2         3\n"
    "\n"
    "          0         0         32        20        52\n"
    "\n"
    "          1         32        0         52        20\n"
    "\n"
    "          2         20        52        0         15\n"
    "\n"
    "          3         52        20        15        0\n"
    "\n"
    "\n"
    "          Unidirectional copy peak bandwidth GB/s\n"
    "\n"
    "          D/D       0           1           2           3\n"
    "\n"
    "          0         N/A         N/A         26.568      26.571\n"
    "\n"
    "          1         N/A         N/A         26.571      26.568\n"
    "\n"
    "          2         28.261      28.258      1280.000    50.201\n"
    "\n"
    "          3         28.257      28.260      50.204      1290.784\n"
    "\n"
    "\n"
    "          Bidirectional copy peak bandwidth GB/s\n"
    "\n"
    "          D/D       0           1           2           3\n"
    "\n"
    "          0         N/A         N/A         43.107      43.097\n"
    "\n"
    "          1         N/A         N/A         43.101      43.110\n"
    "\n"
    "          2         43.107      43.101      N/A         99.812\n"
    "\n"
    "          3         43.097      43.110      99.812      N/A\n"
    "\n";

// hipBusBandwidth (default: --h2d, --d2h and --bidir, pinned memory): DumpSummary's tables.
const std::string kHipPinned =
    "Device:AMD Instinct MI210 Mem=64.0GB #CUs=104 Freq=1700Mhz  MallocMode=pinned\n"
    "                   test\t       atts\t   units\tmedian\tmean\tstddev\tmin\tmax\t\n"
    "   H2D_Bandwidth_pinned\t     +064By\t  GB/sec\t0.0000\t0.0000\t0.0000\t0.0000\t0.0000\t\n"
    "   H2D_Bandwidth_pinned\t        1kB\t  GB/sec\t0.0980\t0.0961\t0.0020\t0.0882\t0.0990\t\n"
    "   H2D_Bandwidth_pinned\t     4096kB\t  GB/sec\t24.9940\t24.4942\t0.4999\t22.4946\t25.2440\t\n"
    "         H2D_Timepinned\t     +064By\t      ms\t0.0087\t0.0089\t0.0002\t0.0086\t0.0096\t\n"
    "         H2D_Timepinned\t        1kB\t      ms\t0.0102\t0.0104\t0.0002\t0.0101\t0.0112\t\n"
    "         H2D_Timepinned\t     4096kB\t      ms\t0.1678\t0.1712\t0.0034\t0.1661\t0.1846\t\n"
    "\n"
    "Note: results marked with (*) had missing values such as\n"
    "might occur with a mixture of architectural capabilities.\n"
    "                   test\t       atts\t   units\tmedian\tmean\tstddev\tmin\tmax\t\n"
    "   D2H_Bandwidth_pinned\t        1kB\t  GB/sec\t0.0909\t0.0891\t0.0018\t0.0818\t0.0918\t\n"
    "   D2H_Bandwidth_pinned\t     4096kB\t  GB/sec\t26.2125\t25.6882\t0.5242\t23.5912\t26.4746\t\n"
    "        D2H_Time_pinned\t        1kB\t      ms\t0.0110\t0.0112\t0.0002\t0.0109\t0.0121\t\n"
    "        D2H_Time_pinned\t     4096kB\t      ms\t0.1600\t0.1632\t0.0032\t0.1584\t0.1760\t\n"
    "\n"
    "Note: results marked with (*) had missing values such as\n"
    "might occur with a mixture of architectural capabilities.\n"
    "                   test\t       atts\t   units\tmedian\tmean\tstddev\tmin\tmax\t\n"
    " Bidir_Bandwidth_pinned\t        1kB\t  GB/sec\t0.1024\t0.1004\t0.0020\t0.0922\t0.1034\t\n"
    " Bidir_Bandwidth_pinned\t     4096kB\t  GB/sec\t27.9620\t27.4028\t0.5592\t25.1658\t28.2416\t\n"
    "      Bidir_Time_pinned\t        1kB\t      ms\t0.0200\t0.0204\t0.0004\t0.0198\t0.0220\t\n"
    "      Bidir_Time_pinned\t     4096kB\t      ms\t0.3000\t0.3060\t0.0060\t0.2970\t0.3300\t\n"
    "\n"
    "Note: results marked with (*) had missing values such as\n"
    "might occur with a mixture of architectural capabilities.\n";

template <class Parse>
void expect_error(Parse parse, const std::string& text, std::size_t line, const std::string& field) {
  RocmBandwidthReport report;
  try {
    (void)parse(text, "bad.log", report);
    ADD_FAILURE() << "expected TraceError for\n" << text;
  } catch (const TraceError& e) {
    EXPECT_EQ(e.file(), "bad.log");
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_EQ(e.field(), field) << e.what();
  }
}

// ---------------------------------------------------------------------------------------------
// rocm-bandwidth-test

TEST(RocmBandwidthTestImport, TablesGiveH2DD2HAndD2DFromTheAverageTime) {
  RocmBandwidthReport r;
  const auto p = parse_rocm_bandwidth_test(kRbtTables, "rbt.log", r);
  ASSERT_EQ(p.size(), 7u);
  EXPECT_EQ(r.results, 8u);
  EXPECT_EQ(r.imported, 7u);
  EXPECT_EQ(r.other_path, 1u);  // GPU 2 -> GPU 3
  EXPECT_EQ(r.bidirectional + r.no_value + r.repeated + r.unknown_direction, 0u);

  // CPU -> GPU: host to device from pinned (HSA system pool) memory; sizes in KiB and MiB.
  EXPECT_EQ(p[0].line, line_of(kRbtTables, "1 KB           10.240"));
  EXPECT_EQ(p[0].kind, OpKind::kH2D);
  EXPECT_EQ(p[0].host, HostMemory::kRegistered);
  EXPECT_EQ(p[0].bytes, 1024u);
  EXPECT_NEAR(p[0].gbps, 1024 / 10240.0, 1e-12);  // 10.240 us
  EXPECT_EQ(p[1].bytes, 2 * kMiB);
  EXPECT_EQ(p[2].bytes, 64 * kMiB);
  EXPECT_NEAR(p[2].gbps, 25.0, 1e-5);
  EXPECT_EQ(p[3].kind, OpKind::kH2D);
  EXPECT_EQ(p[3].line, line_of(kRbtTables, "1 KB           10.752"));
  // GPU -> CPU.
  EXPECT_EQ(p[4].kind, OpKind::kD2H);
  EXPECT_EQ(p[4].host, HostMemory::kRegistered);
  EXPECT_NEAR(p[4].gbps, 1024 / 12800.0, 1e-12);
  EXPECT_EQ(p[5].kind, OpKind::kD2H);
  // Within GPU 2: the tool's 1279.995 GB/s counts read and write; one copy of 64 MiB took 104.858 us.
  EXPECT_EQ(p[6].kind, OpKind::kD2D);
  EXPECT_EQ(p[6].host, HostMemory::kNone);
  EXPECT_NEAR(p[6].gbps, 64.0 * kMiB / 104858, 1e-9);
  EXPECT_NEAR(p[6].gbps, 1279.995 / 2, 0.01);
  for (std::size_t i = 1; i < p.size(); ++i) EXPECT_GT(p[i].line, p[i - 1].line);
  EXPECT_EQ(check_trace(bandwidth_test_trace(p, "rbt.log")), "");
}

TEST(RocmBandwidthTestImport, UnidirectionalMatrixGives64MiBCopies) {
  RocmBandwidthReport r;
  const auto p = parse_rocm_bandwidth_test(kRbtMatrices, "all.log", r);
  // Unidirectional: 4 CPU -> GPU, 4 GPU -> CPU, 2 within a GPU, 2 between GPUs. Bidirectional:
  // 4 CPU <-> GPU pairs in the CPU rows, their 4 mirrors in the GPU rows, 2 between GPUs.
  ASSERT_EQ(p.size(), 14u);
  EXPECT_EQ(r.results, 22u);
  EXPECT_EQ(r.imported, 10u);
  EXPECT_EQ(r.pairs, 4u);
  EXPECT_EQ(r.repeated, 4u);
  EXPECT_EQ(r.other_path, 4u);
  EXPECT_EQ(r.bidirectional, 0u);
  EXPECT_EQ(r.results, r.imported + r.pairs + r.bidirectional + r.other_path + r.no_value + r.repeated +
                           r.unknown_direction);
  EXPECT_EQ(r.device, "gfx90a");
  const std::size_t row0 = line_of(kRbtMatrices, "0         N/A         N/A         26.568");
  EXPECT_EQ(p[0].line, row0);
  EXPECT_EQ(p[1].line, row0);  // a matrix row holds several points
  EXPECT_EQ(p[0].kind, OpKind::kH2D);
  EXPECT_EQ(p[0].bytes, 64 * kMiB);
  EXPECT_DOUBLE_EQ(p[0].gbps, 26.568);
  EXPECT_EQ(p[4].kind, OpKind::kD2H);  // row 2: 2 -> 0
  EXPECT_DOUBLE_EQ(p[4].gbps, 28.261);
  EXPECT_EQ(p[6].kind, OpKind::kD2D);  // 2 -> 2: read and write counted by the tool
  EXPECT_DOUBLE_EQ(p[6].gbps, 640.0);
  EXPECT_EQ(p[9].kind, OpKind::kD2D);
  EXPECT_DOUBLE_EQ(p[9].gbps, 1290.784 / 2);
  for (std::size_t i = 0; i < 10; ++i) EXPECT_FALSE(p[i].both_ways) << i;
  // The pairs: 64 MiB each way, at the printed figure (both copies' bytes over the span).
  const double pair_gbps[] = {43.107, 43.097, 43.101, 43.110};
  for (std::size_t i = 10; i < 14; ++i) {
    EXPECT_TRUE(p[i].both_ways) << i;
    EXPECT_EQ(p[i].bytes, 64 * kMiB);
    EXPECT_EQ(p[i].host, HostMemory::kRegistered);
    EXPECT_NEAR(p[i].gbps, pair_gbps[i - 10], 1e-9) << i;
  }
  EXPECT_EQ(p[10].line, line_of(kRbtMatrices, "0         N/A         N/A         43.107"));
  EXPECT_EQ(check_trace(bandwidth_test_trace(p, "all.log")), "");
}

TEST(RocmBandwidthTestImport, MatrixBefore2019NamesGpusByTheirIsa) {
  // 2017-2018: no UUID or PCI address in the device list, a title without "copy", 6 decimals.
  const std::string text =
      "          Device: 0,  Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz\n"
      "          Device: 1,  gfx900\n"
      "\n"
      "          Unidirectional peak bandwidth GB/s\n"
      "\n"
      "          D/D       0           1\n"
      "\n"
      "          0         N/A         11.984123\n"
      "\n"
      "          1         12.876543   N/A\n";
  RocmBandwidthReport r;
  const auto p = parse_rocm_bandwidth_test(text, "old.log", r);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].kind, OpKind::kH2D);
  EXPECT_NEAR(p[0].gbps, 11.984123, 1e-12);
  EXPECT_EQ(p[1].kind, OpKind::kD2H);
  EXPECT_EQ(p[1].line, 10u);
  EXPECT_EQ(r.device, "gfx900");
}

TEST(RocmBandwidthTestImport, BidirectionalTablesArePairsAndFailedOrOldBannerRowsAreSkipped) {
  const std::string dbl_max = "179769313486231570" + std::string(291, '0') + ".000";
  const std::string text =
      "================    Bidirectional Benchmark Result    ================\n"
      "================ Src Device Id: 0 Src Device Type: Cpu ================\n"
      "================ Dst Device Id: 2 Dst Device Type: Gpu ================\n"
      "\n"
      "Data Size      Avg Time(us)   Avg BW(GB/s)   Min Time(us)   Peak BW(GB/s)\n"
      "64 MB          3200.000       41.943         3100.000       43.296\n"
      "\n"
      "================           Benchmark Result         ================\n"
      "================ Src Device Id: 0 Src Device Type: Cpu ================\n"
      "================ Dst Device Id: 2 Dst Device Type: Gpu ================\n"
      "\n"
      "Data Size      Avg Time(us)   Avg BW(GB/s)   Min Time(us)   Peak BW(GB/s)\n"
      "64 MB          2684.355000    25.000000      2600.000000    25.811000\n"
      "\n"
      "================    Unidirectional Benchmark Result    ================\n"
      "================ Src Device Id: 0 Src Device Type: Cpu ================\n"
      "================ Dst Device Id: 2 Dst Device Type: Gpu ================\n"
      "\n"
      "Data Size      Avg Time(us)   Avg BW(GB/s)   Min Time(us)   Peak BW(GB/s)\n"
      "1 Bytes        5.120          0.000          4.960          0.000\n"
      "64 MB          inf            " + dbl_max + " inf            " + dbl_max + "\n";
  RocmBandwidthReport r;
  const auto p = parse_rocm_bandwidth_test(text, "skips.log", r);
  ASSERT_EQ(p.size(), 2u);
  // The bidirectional pair: Avg Time is the span of both copies, the bandwidth 2 x 64 MiB over it.
  EXPECT_TRUE(p[0].both_ways);
  EXPECT_EQ(p[0].kind, OpKind::kH2D);
  EXPECT_EQ(p[0].bytes, 64 * kMiB);
  EXPECT_NEAR(p[0].gbps, 2.0 * 64 * kMiB / 3200000.0, 1e-12);
  EXPECT_NEAR(p[0].gbps, 41.943, 0.001);  // the printed Avg BW
  EXPECT_EQ(p[0].line, 6u);
  EXPECT_FALSE(p[1].both_ways);
  EXPECT_EQ(p[1].bytes, 1u);  // latency mode (-l) sizes start at 1 byte
  EXPECT_NEAR(p[1].gbps, 1 / 5120.0, 1e-15);
  EXPECT_EQ(r.results, 4u);
  EXPECT_EQ(r.pairs, 1u);
  EXPECT_EQ(r.bidirectional, 0u);
  EXPECT_EQ(r.unknown_direction, 1u);
  EXPECT_EQ(r.no_value, 1u);
  EXPECT_EQ(r.notes.size(), 2u);  // the old banner, the failed validation
}

TEST(RocmBandwidthTestImport, MalformedRowsNameLineAndField) {
  const std::string banner =
      "================    Unidirectional Benchmark Result    ================\n"
      "================ Src Device Id: 0 Src Device Type: Cpu ================\n"
      "================ Dst Device Id: 2 Dst Device Type: Gpu ================\n"
      "Data Size      Avg Time(us)   Avg BW(GB/s)   Min Time(us)   Peak BW(GB/s)\n";
  const auto parse = parse_rocm_bandwidth_test;
  expect_error(parse, banner + "1 KB  x.5  0.100  9.920  0.103\n", 5, "avg time");
  expect_error(parse, banner + "1 KB  10.240  0.100  -9.920  0.103\n", 5, "min time");
  expect_error(parse, banner + "1 KB  10.240  1e3  9.920  0.103\n", 5, "avg bandwidth");
  expect_error(parse, banner + "1 KB  10.240  0.100  9.920  nan\n", 5, "peak bandwidth");
  expect_error(parse, banner + "1 GB  10.240  0.100  9.920  0.103\n", 5, "size");
  expect_error(parse, banner + "0 KB  10.240  0.100  9.920  0.103\n", 5, "size");
  expect_error(parse, banner + "1 KB  10.240  0.100  9.920\n", 5, "");
  expect_error(parse, banner + "1 KB  0.000  0.100  9.920  0.103\n", 5, "avg time");
  expect_error(parse, "Data Size      Avg Time(us)\n1 KB  10.240  0.100  9.920  0.103\n", 1, "src device");
  expect_error(parse, "================ Src Device Id: x Src Device Type: Cpu ================\n", 1, "src device");
  expect_error(parse, "\n================ Dst Device Id: 2 Dst Device Type: Npu ================\n", 2, "dst device");
  // A matrix: a cell that is not a number, a row of the wrong width, a device not listed.
  const std::string matrix =
      "Device: 0,  AMD EPYC 7713 64-Core Processor\n"
      "Device: 2,  gfx90a,  GPU-5b7a3c9e2f1d4a62,  c1:0.0\n"
      "Unidirectional copy peak bandwidth GB/s\n"
      "D/D       0           2\n";
  expect_error(parse, matrix + "0  N/A  fast\n", 5, "bandwidth");
  expect_error(parse, matrix + "0  N/A  26.568  1.0\n", 5, "bandwidth");
  expect_error(parse, matrix + "0  N/A  26.568\n1  2.0  N/A\n", 6, "device");
  expect_error(parse, "Unidirectional copy peak bandwidth GB/s\nD/D  0  x\n", 2, "device");
}

TEST(RocmBandwidthTestImport, NoImportableResultIsAnError) {
  const auto parse = parse_rocm_bandwidth_test;
  expect_error(parse, "", 0, "");
  expect_error(parse, "          RocmBandwidthTest Version: 2.6.0\n\n          Device: 0,  AMD EPYC\n", 0, "");
  // Only copies between two GPUs: read, and counted, but nothing to import.
  RocmBandwidthReport r;
  try {
    (void)parse_rocm_bandwidth_test(kRbtTables.substr(kRbtTables.rfind("\n\n====") + 1), "peer.log", r);
    ADD_FAILURE() << "expected TraceError";
  } catch (const TraceError& e) {
    EXPECT_EQ(e.line(), 0u);
    EXPECT_NE(e.message().find("1 between two GPUs"), std::string::npos) << e.what();
  }
  EXPECT_EQ(r.other_path, 1u);
}

TEST(RocmBandwidthTestImport, ImportedTraceRepeatsEachCopyTime) {
  const std::string path = write_temp("rocm_bandwidth_all.log", kRbtMatrices);
  RocmBandwidthReport r;
  const Trace t = import_rocm_bandwidth_test(path, {"", "PCIe Gen4 x16"}, r);
  EXPECT_EQ(t.header.source, "rocm-bandwidth-test:rocm_bandwidth_all.log");
  EXPECT_EQ(t.header.device, "gfx90a");  // from the device list: the caller named none
  EXPECT_EQ(t.header.link, "PCIe Gen4 x16");
  EXPECT_EQ(t.header.extra.at("bandwidth_resolution_gbps").get<double>(), 0.001);
  EXPECT_NE(t.header.extra.at("method").get<std::string>().find("Avg Time"), std::string::npos);
  EXPECT_EQ(t.allocations.size(), 10u + 4u * 2u);  // a pair's two copies have an allocation each
  const Op& first = t.ops.front();
  EXPECT_EQ(first.kind, OpKind::kH2D);
  EXPECT_EQ(first.host, HostMemory::kRegistered);
  EXPECT_EQ(first.bytes, 64 * kMiB);
  EXPECT_DOUBLE_EQ(*first.duration_ns, 64.0 * kMiB / 26.568);  // bytes / GB/s = ns
  EXPECT_EQ(check_trace(t), "");
  // An explicit device wins; errors name the file as given.
  const Trace named = import_rocm_bandwidth_test(path, {"MI210", ""}, r);
  EXPECT_EQ(named.header.device, "MI210");
  try {
    (void)import_rocm_bandwidth_test(write_temp("rocm_bandwidth_bad.log", "Data Size\n"), {}, r);
    ADD_FAILURE() << "expected TraceError";
  } catch (const TraceError& e) {
    EXPECT_EQ(e.file(), ::testing::TempDir() + "/rocm_bandwidth_bad.log");
    EXPECT_EQ(e.line(), 1u);
  }
}

// `rocm-bandwidth-test -b 0,2` style tables: host and GPU both ways (a pair per size), and two
// GPUs both ways (no one device's). Figures made up.
const std::string kRbtBidirTables =
    "================    Bidirectional Benchmark Result    ================\n"
    "================ Src Device Id: 2 Src Device Type: Gpu ================\n"
    "================ Dst Device Id: 0 Dst Device Type: Cpu ================\n"
    "\n"
    "Data Size      Avg Time(us)   Avg BW(GB/s)   Min Time(us)   Peak BW(GB/s)\n"
    "2 MB           97.210         43.145         95.870         43.748\n"
    "4 MB           inf            0.000          inf            0.000\n"
    "\n"
    "================    Bidirectional Benchmark Result    ================\n"
    "================ Src Device Id: 2 Src Device Type: Gpu ================\n"
    "================ Dst Device Id: 3 Dst Device Type: Gpu ================\n"
    "\n"
    "Data Size      Avg Time(us)   Avg BW(GB/s)   Min Time(us)   Peak BW(GB/s)\n"
    "2 MB           42.100         99.627         41.900         100.102\n";

TEST(RocmBandwidthTestImport, BidirectionalPairsReplayAsRoundsTimedByTheirSpan) {
  const std::string path = write_temp("rocm_bidir.log", kRbtBidirTables);
  RocmBandwidthReport r;
  const Trace t = import_rocm_bandwidth_test(path, {}, r);  // pairs alone are something to import
  EXPECT_EQ(r.results, 3u);
  EXPECT_EQ(r.pairs, 1u);
  EXPECT_EQ(r.no_value, 1u);    // the failed validation
  EXPECT_EQ(r.other_path, 1u);  // GPU 2 <-> GPU 3
  EXPECT_EQ(check_trace(t), "");
  EXPECT_EQ(t.header.devices, 1u);
  const std::vector<ConcurrentGroup> groups = concurrent_groups(t);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].measure, GroupMeasure::kSpan);
  EXPECT_EQ(groups[0].label, "h2d+d2h registered (span)");
  const std::uint32_t rounds = copies_for_size(2 * kMiB);
  ASSERT_EQ(t.ops.size(), 2u * rounds);
  ASSERT_EQ(groups[0].spans.size(), rounds);
  EXPECT_EQ(t.allocations.size(), 2u);
  for (std::uint32_t k = 0; k < rounds; ++k) {
    const Op& h2d = t.ops[2 * k];
    const Op& d2h = t.ops[2 * k + 1];
    EXPECT_EQ(groups[0].spans[k], (std::vector<std::uint64_t>{h2d.id, d2h.id}));
    EXPECT_EQ(h2d.kind, OpKind::kH2D);
    EXPECT_EQ(d2h.kind, OpKind::kD2H);
    EXPECT_EQ(h2d.stream, 0u);
    EXPECT_EQ(d2h.stream, 1u);
    EXPECT_EQ(h2d.bytes, 2 * kMiB);
    EXPECT_EQ(d2h.bytes, 2 * kMiB);
    // Each copy carries the span the tool timed (97.210 us), both starting together.
    EXPECT_DOUBLE_EQ(*h2d.duration_ns, 97210.0);
    EXPECT_DOUBLE_EQ(*d2h.duration_ns, 97210.0);
    EXPECT_EQ(*h2d.start_ns, *d2h.start_ns);
    // A round starts once both copies of the round before have completed.
    if (k == 0) {
      EXPECT_TRUE(h2d.deps.empty());
      EXPECT_TRUE(d2h.deps.empty());
    } else {
      EXPECT_EQ(h2d.deps, std::vector<std::uint64_t>{h2d.id - 1});  // the D2H before, on stream 1
      EXPECT_EQ(d2h.deps, std::vector<std::uint64_t>{h2d.id - 2});  // the H2D before, on stream 0
    }
  }
}

// ---------------------------------------------------------------------------------------------
// hipBusBandwidth

TEST(HipBusBandwidthImport, PinnedSummaryGivesH2DAndD2HFromTheMedianTime) {
  RocmBandwidthReport r;
  const auto p = parse_hip_bus_bandwidth(kHipPinned, "hip.log", r);
  ASSERT_EQ(p.size(), 5u);
  EXPECT_EQ(r.results, 14u);
  EXPECT_EQ(r.imported, 5u);
  EXPECT_EQ(r.repeated, 5u);       // the time rows of the five measurements
  EXPECT_EQ(r.bidirectional, 4u);  // Bidir bandwidth and time rows
  EXPECT_EQ(r.device, "AMD Instinct MI210");

  // +064By: the bandwidth prints 0.0000 (the tool divides the size by 1000 in integers); the
  // median time of 0.0087 ms still gives the copy.
  EXPECT_EQ(p[0].line, line_of(kHipPinned, "+064By\t  GB/sec"));
  EXPECT_EQ(p[0].kind, OpKind::kH2D);
  EXPECT_EQ(p[0].host, HostMemory::kRegistered);
  EXPECT_EQ(p[0].bytes, 64u);
  EXPECT_NEAR(p[0].gbps, 64 / 8700.0, 1e-12);
  // 1kB is 1024 bytes; 0.0102 ms = 10200 ns (the printed 0.0980 GB/s counts 1000 bytes).
  EXPECT_EQ(p[1].bytes, 1024u);
  EXPECT_NEAR(p[1].gbps, 1024 / 10200.0, 1e-12);
  EXPECT_EQ(p[2].bytes, 4096 * 1024u);
  EXPECT_NEAR(p[2].gbps, 4194304 / 167800.0, 1e-9);
  EXPECT_EQ(p[3].kind, OpKind::kD2H);
  EXPECT_EQ(p[3].line, line_of(kHipPinned, "D2H_Bandwidth_pinned\t        1kB"));
  EXPECT_NEAR(p[3].gbps, 1024 / 11000.0, 1e-12);
  EXPECT_EQ(p[4].kind, OpKind::kD2H);
  for (std::size_t i = 1; i < p.size(); ++i) EXPECT_GT(p[i].line, p[i - 1].line);
  EXPECT_EQ(check_trace(bandwidth_test_trace(p, "hip.log")), "");
}

TEST(HipBusBandwidthImport, UnpinnedIsPageableAndBeatsDivideTheTime) {
  // --unpinned --h2d -b 4: sizes "1kBx4"; the time is that of the four copies.
  const std::string text =
      "Device:Vega 20 [Radeon VII] Mem=16.0GB #CUs=60 Freq=1802Mhz  MallocMode=unpinned\n"
      "                   test\t       atts\t   units\tmedian\tmean\tstddev\tmin\tmax\t\n"
      " H2D_Bandwidth_unpinned\t        1kBx4\t  GB/sec\t0.1000\t0.0949\t0.0074\t0.0727\t0.1000\t\n"
      "       H2D_Timeunpinned\t        1kBx4\t      ms\t0.0400\t0.0420\t0.0010\t0.0400\t0.0450\t\n";
  RocmBandwidthReport r;
  const auto p = parse_hip_bus_bandwidth(text, "beats.log", r);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].line, 3u);
  EXPECT_EQ(p[0].host, HostMemory::kPageable);
  EXPECT_EQ(p[0].bytes, 1024u);
  EXPECT_NEAR(p[0].gbps, 1024 / 10000.0, 1e-12);  // 0.0400 ms / 4 copies
  EXPECT_EQ(r.device, "Vega 20 [Radeon VII]");
}

TEST(HipBusBandwidthImport, ModesDetailedTablesPeersAndPrintedBandwidth) {
  // Registered host memory is page-locked; a 2016 test name without a mode takes MallocMode=;
  // --detailed repeats the summary with every trial; p2p rows copy between two GPUs; without a
  // time row the printed bandwidth gives the time.
  const std::string text =
      "Device:gfx906 Mem=16.0GB #CUs=60 Freq=1802Mhz  MallocMode=registered\n"
      "test\tatts\tunits\tmedian\tmean\tstddev\tmin\tmax\t\n"
      "D2H_Bandwidth_registered\t2kB\tGB/sec\t10.0000\t9.0\t1.0\t8.0\t10.5\t\n"
      "H2D_Bandwidth\t4kB\tGB/sec\t8.0000\t8.0\t0.0\t8.0\t8.0\t\n"
      "test\tatts\tmedian\tmean\tstddev\tmin\tmax\ttrial0\ttrial1\t\n"
      "D2H_Bandwidth_registered\t2kB\tGB/sec\t10.0000\t9.0\t1.0\t8.0\t10.5\t8.0\t10.0\t\n"
      "Total no. of  available gpu #2\n"
      "for gpu#0 gfx906\n"
      "    peer2peer supported : gpu#1\n"
      "p2p_uni_gpu0_gpu1\t4096kB\tGB/sec\t20.0000\t20.0\t0.0\t20.0\t20.0\t\n"
      "P2P_uni_gpu0_gpu1\t4096kB\tms\t0.2097\t0.2097\t0.0\t0.2097\t0.2097\t\n"
      "p2p_bi_gpu0_gpu1\t4096kB\tGB/sec\t38.0000\t38.0\t0.0\t38.0\t38.0\t\n"
      "error: D2H. i=3 reference:     3 != copyback:  0.00\n";
  RocmBandwidthReport r;
  const auto p = parse_hip_bus_bandwidth(text, "mixed.log", r);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].kind, OpKind::kD2H);
  EXPECT_EQ(p[0].host, HostMemory::kRegistered);
  EXPECT_DOUBLE_EQ(p[0].gbps, 10.0);
  EXPECT_EQ(p[1].kind, OpKind::kH2D);
  EXPECT_EQ(p[1].host, HostMemory::kRegistered);
  EXPECT_EQ(p[1].bytes, 4096u);
  EXPECT_EQ(r.results, 6u);
  EXPECT_EQ(r.repeated, 1u);
  EXPECT_EQ(r.other_path, 2u);
  EXPECT_EQ(r.bidirectional, 1u);
  ASSERT_EQ(r.notes.size(), 2u);  // the tool's data check error, the printed bandwidth used
  EXPECT_NE(r.notes[0].find("copyback"), std::string::npos);
}

TEST(HipBusBandwidthImport, NoValueRowsAreSkipped) {
  const std::string text =
      "   H2D_Bandwidth_pinned\t     +064By\t  GB/sec\t0.0000\t0.0000\t0.0000\t0.0000\t0.0000\t\n"
      "   H2D_Bandwidth_pinned\t     +256By\t  GB/sec\tN/A\tN/A\tN/A\tN/A\tN/A\t\n"
      "   H2D_Bandwidth_pinned\t        1kB\t  GB/sec\t0.0980\t0.0961\t0.0020\t0.0882\t0.0990\t\n";
  RocmBandwidthReport r;
  const auto p = parse_hip_bus_bandwidth(text, "novalue.log", r);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].line, 3u);
  EXPECT_DOUBLE_EQ(p[0].gbps, 0.098);  // no time row: as printed
  EXPECT_EQ(r.no_value, 2u);
  EXPECT_EQ(r.results, 3u);
}

TEST(HipBusBandwidthImport, MalformedRowsNameLineAndField) {
  const auto parse = parse_hip_bus_bandwidth;
  const std::string header = "Device:gfx90a Mem=64.0GB #CUs=104 Freq=1700Mhz  MallocMode=pinned\n";
  expect_error(parse, header + "H2D_Bandwidth_pinned\t1MB\tGB/sec\t1.0\n", 2, "size");
  expect_error(parse, header + "H2D_Bandwidth_pinned\t+0By\tGB/sec\t1.0\n", 2, "size");
  expect_error(parse, header + "H2D_Bandwidth_pinned\t1kBx0\tGB/sec\t1.0\n", 2, "size");
  expect_error(parse, header + "H2D_Bandwidth_pinned\t1kB\tMB/sec\t1.0\n", 2, "units");
  expect_error(parse, header + "H2D_Time_pinned\t1kB\tGB/sec\t1.0\n", 2, "units");
  expect_error(parse, header + "H2D_Bandwidth_pinned\t1kB\tGB/sec\tfast\n", 2, "median");
  expect_error(parse, header + "H2D_Bandwidth_pinned\t1kB\tGB/sec\t-1.0\n", 2, "median");
  expect_error(parse, header + "H2D_Latency_pinned\t1kB\tms\t1.0\n", 2, "test");
  expect_error(parse, header + "H2D_Bandwidth_wired\t1kB\tGB/sec\t1.0\n", 2, "test");
  expect_error(parse, "H2D_Bandwidth\t1kB\tGB/sec\t1.0\n", 1, "test");  // no mode anywhere
  expect_error(parse, header + "\nD2H_Bandwidth_pinned\t1kB\tGB/sec\n", 3, "");
  expect_error(parse, header + "H2D_Time_pinned\t1kB\tms\t99999999999.0\n", 2, "median");  // over 11 days
}

TEST(HipBusBandwidthImport, NoImportableResultIsAnError) {
  const auto parse = parse_hip_bus_bandwidth;
  expect_error(parse, "", 0, "");
  expect_error(parse, "Device:gfx90a Mem=64.0GB #CUs=104 Freq=1700Mhz  MallocMode=pinned\n", 0, "");
  const std::string bidir_only = kHipPinned.substr(kHipPinned.find(" Bidir_"));
  expect_error(parse, bidir_only, 0, "");
}

TEST(HipBusBandwidthImport, ImportedTraceRepeatsEachCopyTime) {
  const std::string path = write_temp("hip_bus_bandwidth.log", kHipPinned);
  RocmBandwidthReport r;
  const Trace t = import_hip_bus_bandwidth(path, {"", "PCIe Gen4 x16"}, r);
  EXPECT_EQ(t.header.source, "hipbusbandwidth:hip_bus_bandwidth.log");
  EXPECT_EQ(t.header.device, "AMD Instinct MI210");
  EXPECT_EQ(t.header.extra.at("bandwidth_resolution_gbps").get<double>(), 0.0001);
  EXPECT_EQ(t.allocations.size(), 5u);
  // 1kB copied in 0.0102 ms: each of its copies lasts 10200 ns = bytes / gbps.
  const Op& kb = t.ops[copies_for_size(64)];
  EXPECT_EQ(kb.bytes, 1024u);
  EXPECT_NEAR(*kb.duration_ns, 10200.0, 1e-9);
  const Op& last = t.ops.back();
  EXPECT_EQ(last.kind, OpKind::kD2H);
  EXPECT_EQ(last.host, HostMemory::kRegistered);
  EXPECT_NEAR(*last.duration_ns, 160000.0, 1e-6);  // 0.1600 ms
  EXPECT_EQ(check_trace(t), "");
}

}  // namespace
