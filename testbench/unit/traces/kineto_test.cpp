// Kineto import: the shared A100 alexnet profile and traces written here.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

#include "spyre_dma/model/sim_config.hpp"
#include "spyre_dma/traces/kineto.hpp"
#include "spyre_dma/traces/replay.hpp"
#include "spyre_dma/traces/trace_io.hpp"

namespace {

using namespace spyre_dma::traces;

std::string data_dir() {
  std::string f = __FILE__;  // testbench/unit/traces/kineto_test.cpp -> traces/data
  return f.substr(0, f.rfind("testbench/")) + "traces/data/";
}

const char* kAlexnet = "benchmark_result_2869224_1695835535_trace.json.gz";

TEST(KinetoImport, AlexnetHasSixteenPageableHtoDCopies) {
  ImportReport r;
  const Trace t = import_kineto(data_dir() + kAlexnet, r);
  EXPECT_EQ(r.events_seen, 1408u);
  EXPECT_EQ(r.memcpy, 16u);
  EXPECT_EQ(r.kernels, 79u);
  EXPECT_EQ(r.memset, 3u);
  EXPECT_EQ(r.joined_to_host, 16u + 79u + 3u);
  EXPECT_EQ(r.malformed, 0u);
  EXPECT_DOUBLE_EQ(t.header.resolution_ns, 1000.0);
  EXPECT_EQ(t.header.device, "NVIDIA A100-PG509-200");
  std::size_t copies = 0;
  std::uint64_t lo = UINT64_MAX, hi = 0;
  double prev = -1;
  for (const Op& op : t.ops) {
    ASSERT_TRUE(op.start_ns.has_value());
    EXPECT_GE(*op.start_ns, prev);  // ts order
    prev = *op.start_ns;
    if (op.kind != OpKind::kH2D) continue;
    ++copies;
    EXPECT_EQ(op.host, HostMemory::kPageable);
    EXPECT_EQ(op.stream, 7u);
    ASSERT_TRUE(op.issue_ns.has_value());
    EXPECT_LT(*op.issue_ns, *op.start_ns);  // the host call starts before the copy
    lo = std::min(lo, op.bytes);
    hi = std::max(hi, op.bytes);
  }
  EXPECT_EQ(copies, 16u);
  EXPECT_EQ(lo, 256u);
  EXPECT_EQ(hi, 144ull << 20);
  // The largest copy: 150994944 B in 34780 us.
  const auto big = std::find_if(t.ops.begin(), t.ops.end(), [](const Op& o) { return o.bytes == (144ull << 20); });
  ASSERT_NE(big, t.ops.end());
  EXPECT_DOUBLE_EQ(*big->duration_ns, 34780e3);
  EXPECT_EQ(check_trace(t), "");
}

TEST(KinetoImport, ReadsPlainJsonAndCountsUnknownAndMalformed) {
  const std::string text = R"J({"traceEvents": [
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "ts": 90, "dur": 5, "args": {"correlation": 1}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pinned -> Device)", "ts": 100, "dur": 10, "tid": 3, "args": {"stream": 3, "bytes": 4096, "correlation": 1}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pageable)", "ts": 120, "dur": 20, "tid": "stream 5", "args": {"bytes": 8192}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "ts": 111, "dur": 7, "args": {"stream": 3}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD (Device -> Device)", "ts": 140, "dur": 2, "args": {"stream": 3}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy PtoP (Device -> Device)", "ts": 150, "dur": 2, "args": {"stream": 3, "bytes": 64}},
    {"ph": "X", "cat": "gpu_weird", "name": "something", "ts": 1, "dur": 1},
    {"ph": "M", "name": "process_name", "args": {"name": "python"}},
    7
  ]})J";
  ImportReport r;
  const Trace t = import_kineto_text(text, "mini.json", r);
  EXPECT_EQ(r.events_seen, 9u);
  EXPECT_EQ(r.memcpy, 2u);
  EXPECT_EQ(r.kernels, 1u);
  EXPECT_EQ(r.joined_to_host, 1u);
  EXPECT_EQ(r.unknown, 2u);    // PtoP and gpu_weird
  EXPECT_EQ(r.malformed, 2u);  // DtoD without bytes, the bare number
  ASSERT_EQ(t.ops.size(), 3u);
  EXPECT_EQ(t.ops[0].kind, OpKind::kH2D);
  EXPECT_EQ(t.ops[0].host, HostMemory::kRegistered);
  EXPECT_DOUBLE_EQ(*t.ops[0].issue_ns, 0.0);  // the origin is the earliest host call
  EXPECT_DOUBLE_EQ(*t.ops[0].start_ns, 10e3);
  EXPECT_EQ(t.ops[1].kind, OpKind::kCompute);
  EXPECT_EQ(t.ops[1].compute_ns, 7000u);
  EXPECT_EQ(t.ops[2].kind, OpKind::kD2H);
  EXPECT_EQ(t.ops[2].host, HostMemory::kPageable);
  EXPECT_EQ(t.ops[2].stream, 5u);
  EXPECT_EQ(t.allocations.size(), 2u);  // one per copy, sized to it
  EXPECT_EQ(t.allocations[1].bytes, 8192u);
  EXPECT_FALSE(r.notes.empty());
}

// Found by fuzzing: a "ph" that is not a string threw nlohmann's type_error, and a stream id
// beyond 32 bits threw std::out_of_range (string tid) or was truncated (number).
TEST(KinetoImport, OddPhaseAndHugeStreamIdsAreMalformedNotFatal) {
  const std::string text = R"J({"traceEvents": [
    {"ph": 0, "cat": "gpu_memset", "name": "Memset (Device)", "ts": 100, "dur": 1, "args": {"stream": 8, "bytes": 128}},
    {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "ts": 200, "dur": 1, "tid": "stream 99999999999999999999999", "args": {"bytes": 128}},
    {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "ts": 300, "dur": 1, "args": {"stream": 4294967296, "bytes": 128}},
    {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "ts": 400, "dur": 1, "tid": "stream 007", "args": {"bytes": 64}}
  ]})J";
  ImportReport r;
  const Trace t = import_kineto_text(text, "odd.json", r);
  EXPECT_EQ(r.memset, 2u);     // the phase-less event is still a memset; "stream 007" is stream 7
  EXPECT_EQ(r.malformed, 2u);  // the two stream ids beyond 32 bits
  ASSERT_EQ(t.ops.size(), 2u);
  EXPECT_EQ(t.ops[0].stream, 8u);
  EXPECT_EQ(t.ops[1].stream, 7u);
}

TEST(KinetoImport, GzipAndPlainGiveTheSameTrace) {
  const std::string text = R"J([{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "ts": 5, "dur": 3, "args": {"stream": 1, "bytes": 1000}}])J";
  const std::string plain = testing::TempDir() + "kineto_plain.json";
  const std::string gz = testing::TempDir() + "kineto.json.gz";
  std::ofstream(plain) << text;
  gzFile f = gzopen(gz.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
  gzclose(f);
  ImportReport a, b;
  const Trace ta = import_kineto(plain, a);
  const Trace tb = import_kineto(gz, b);
  ASSERT_EQ(ta.ops.size(), 1u);
  ASSERT_EQ(tb.ops.size(), 1u);
  EXPECT_EQ(ta.ops[0].bytes, tb.ops[0].bytes);
  EXPECT_EQ(*ta.ops[0].duration_ns, 3000.0);
  EXPECT_EQ(*tb.ops[0].duration_ns, 3000.0);
}

TEST(KinetoImport, NothingUsableIsAnErrorNamingTheFile) {
  ImportReport r;
  try {
    (void)import_kineto_text(R"J({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 1, "dur": 1}]})J",
                             "empty.json", r);
    FAIL() << "expected TraceError";
  } catch (const TraceError& e) {
    EXPECT_EQ(e.file(), "empty.json");
    EXPECT_NE(e.message().find("nothing to import"), std::string::npos);
  }
  try {
    (void)import_kineto_text("{\n\"traceEvents\": [\n{,}\n]}", "bad.json", r);
    FAIL() << "expected TraceError";
  } catch (const TraceError& e) {
    EXPECT_EQ(e.file(), "bad.json");
    EXPECT_EQ(e.line(), 3u);
  }
  EXPECT_THROW((void)import_kineto("/nonexistent/x.json", r), TraceError);
}

}  // namespace

// Copies that overlapped on two streams in the capture overlap in the replay: each Kineto stream
// is a stream of its own (nothing orders them), whether the replay issues them at once or holds
// each to its captured start. Measured with this tree (TLP fidelity): the H2D runs 0-609 us, the
// D2H from 0 us issued at once, and from 142.2 us held to its captured start (100 us, then its
// CB fetch queued behind the H2D's reads). At burst fidelity, held, it starts only once the H2D
// has ended (traces/README.md, "Replay").
TEST(KinetoImport, CopiesThatOverlappedOnTwoStreamsOverlapInTheReplay) {
  const std::string text = R"J({"traceEvents": [
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pinned -> Device)", "ts": 1000, "dur": 1500, "tid": 7, "args": {"stream": 7, "bytes": 33554432}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pinned)", "ts": 1100, "dur": 1480, "tid": 13, "args": {"stream": 13, "bytes": 33554432}}
  ]})J";
  ImportReport r;
  const Trace t = import_kineto_text(text, "overlap.json", r);
  ASSERT_EQ(t.ops.size(), 2u);
  EXPECT_NE(t.ops[0].stream, t.ops[1].stream);
  EXPECT_TRUE(t.ops[1].deps.empty());
  // In the capture: the D2H starts 100 us into the H2D's 1500 us.
  ASSERT_LT(*t.ops[1].start_ns, *t.ops[0].start_ns + *t.ops[0].duration_ns);
  for (const bool honour : {false, true}) {
    ReplayOptions o;
    o.honour_start_times = honour;
    const spyre_dma::model::SimConfig config;  // TLP fidelity (see docs/traces.md, "Concurrent traces")
    const ReplayResult replayed = replay_on_sim(t, config, o);
    ASSERT_TRUE(replayed.data_ok) << replayed.data_error;
    const OpTiming& a = replayed.ops[0];
    const OpTiming& b = replayed.ops[1];
    EXPECT_LT(b.start_ns, a.start_ns + a.duration_ns) << "honour " << honour;
    EXPECT_LT(a.start_ns, b.start_ns + b.duration_ns) << "honour " << honour;
    if (honour) EXPECT_GE(b.start_ns - a.start_ns, 99e3);  // held to its captured start
    else EXPECT_LT(std::abs(b.start_ns - a.start_ns), 1e3);  // issued together: nothing orders them
  }
}
