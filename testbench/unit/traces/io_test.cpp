// Reading and writing trace files: round trip, gzip input, and errors that name line and field.
#include <gtest/gtest.h>

#include <cstdlib>
#include <zlib.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "spyre_dma/traces/trace_io.hpp"

namespace st = spyre_dma::traces;

namespace {

const char* kHeader =
    R"({"format":"spyre-dma-trace","version":1,"source":"test","device":"","link":"","resolution_ns":0,"extra":{}})";

st::Trace sample() {
  st::Trace t;
  t.header.source = "capture";
  t.header.device = "refdev";
  t.header.link = "PCIe Gen5 x16";
  t.header.resolution_ns = 1000;
  t.header.extra["note"] = "x";
  t.allocations.push_back({3, 8192, 4096});
  st::Op a;
  a.id = 10;
  a.kind = st::OpKind::kFill;
  a.bytes = 8192;
  a.dst_alloc = 3;
  a.pattern = 0xdeadbeef;
  a.issue_ns = 1.5;
  a.start_ns = 100;
  a.duration_ns = 20.25;
  t.ops.push_back(a);
  st::Op c;
  c.id = 11;
  c.stream = 2;
  c.kind = st::OpKind::kCompute;
  c.compute_ns = 5000;
  c.deps = {10};
  t.ops.push_back(c);
  st::Op e;
  e.id = 12;
  e.kind = st::OpKind::kEventRecord;
  e.event = 4;
  t.ops.push_back(e);
  st::Op d;
  d.id = 13;
  d.kind = st::OpKind::kD2H;
  d.bytes = 4096;
  d.host = st::HostMemory::kPageable;
  d.src_alloc = 3;
  d.src_offset = 4096;
  t.ops.push_back(d);
  return t;
}

st::TraceError parse_error(const std::string& body) {
  std::istringstream in(std::string(kHeader) + "\n" + body);
  try {
    st::parse_trace(in, "t.trace");
  } catch (const st::TraceError& e) {
    return e;
  }
  ADD_FAILURE() << "no error for: " << body;
  return st::TraceError("", 0, "", "");
}

}  // namespace

TEST(TraceIo, RoundTrip) {
  const st::Trace t = sample();
  std::stringstream s;
  st::write_trace(t, s);
  const st::Trace back = st::parse_trace(s, "mem");
  EXPECT_EQ(back.header.source, "capture");
  EXPECT_EQ(back.header.link, "PCIe Gen5 x16");
  EXPECT_EQ(back.header.resolution_ns, 1000);
  EXPECT_EQ(back.header.extra["note"], "x");
  ASSERT_EQ(back.allocations.size(), 1u);
  EXPECT_EQ(back.allocations[0].max_chunk_bytes, 4096u);
  ASSERT_EQ(back.ops.size(), 4u);
  EXPECT_EQ(back.ops[0].pattern, 0xdeadbeefu);
  EXPECT_EQ(back.ops[0].duration_ns, 20.25);
  EXPECT_EQ(back.ops[0].issue_ns, 1.5);
  EXPECT_EQ(back.ops[1].stream, 2u);
  EXPECT_EQ(back.ops[1].compute_ns, 5000u);
  EXPECT_EQ(back.ops[1].deps, std::vector<std::uint64_t>{10});
  EXPECT_FALSE(back.ops[1].start_ns.has_value());
  EXPECT_EQ(back.ops[2].event, 4u);
  EXPECT_EQ(back.ops[3].host, st::HostMemory::kPageable);
  EXPECT_EQ(back.ops[3].src_offset, 4096u);
  std::stringstream again;
  st::write_trace(back, again);
  std::stringstream first;
  st::write_trace(t, first);
  EXPECT_EQ(again.str(), first.str());
}

TEST(TraceIo, ReadsGzip) {
  std::stringstream s;
  st::write_trace(sample(), s);
  const std::string path = ::testing::TempDir() + "/sample.trace.gz";
  gzFile gz = gzopen(path.c_str(), "wb");
  ASSERT_NE(gz, nullptr);
  gzwrite(gz, s.str().data(), static_cast<unsigned>(s.str().size()));
  gzclose(gz);
  const st::Trace t = st::read_trace(path);
  EXPECT_EQ(t.ops.size(), 4u);
  std::remove(path.c_str());
}

// A small gzip that inflates past the cap is refused before it is held whole, naming the file;
// the cap is SPYRE_DMA_MAX_INPUT_BYTES (4 GiB when unset), and a malformed cap is refused too.
TEST(TraceIo, GzipInflatingPastTheCapIsRefused) {
  const std::string path = ::testing::TempDir() + "/bomb.trace.gz";
  gzFile gz = gzopen(path.c_str(), "wb9");
  ASSERT_NE(gz, nullptr);
  const std::string zeros(1 << 20, '\n');
  for (int i = 0; i < 8; ++i) gzwrite(gz, zeros.data(), static_cast<unsigned>(zeros.size()));  // 8 MiB
  gzclose(gz);
  ::setenv("SPYRE_DMA_MAX_INPUT_BYTES", "1000000", 1);
  try {
    (void)st::read_trace(path);
    ADD_FAILURE() << "an input past the cap was read";
  } catch (const st::TraceError& e) {
    EXPECT_EQ(e.file(), path);
    EXPECT_NE(e.message().find("inflates to more than 1000000 bytes"), std::string::npos) << e.what();
  }
  ::setenv("SPYRE_DMA_MAX_INPUT_BYTES", "lots", 1);
  try {
    (void)st::read_trace(path);
    ADD_FAILURE() << "a malformed cap was taken";
  } catch (const st::TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("'lots' is not a positive byte count"), std::string::npos) << e.what();
  }
  ::unsetenv("SPYRE_DMA_MAX_INPUT_BYTES");
  std::remove(path.c_str());
}

TEST(TraceIo, ErrorsNameLineAndField) {
  auto e = parse_error(R"({"alloc":{"id":1,"bytes":4096}})" "\n" R"({"op":{"id":1,"kind":"h2d","bytes":128,"host":"pageable","dst_alloc":1,"colour":3}})");
  EXPECT_EQ(e.line(), 3u);
  EXPECT_EQ(e.field(), "op.colour");
  EXPECT_EQ(std::string(e.what()).rfind("t.trace:3: op.colour: ", 0), 0u) << e.what();

  e = parse_error(R"({"alloc":{"id":1,"bytes":"big"}})");
  EXPECT_EQ(e.line(), 2u);
  EXPECT_EQ(e.field(), "alloc.bytes");

  e = parse_error(R"({"op":{"id":1,"kind":"memcpy"}})");
  EXPECT_EQ(e.field(), "op.kind");
  EXPECT_NE(e.message().find("memcpy"), std::string::npos);

  e = parse_error(R"({"op":{"id":1,"kind":"d2h","bytes":128,"host":"pinned","src_alloc":1}})");
  EXPECT_EQ(e.field(), "op.host");

  e = parse_error(R"({"op":{"id":5,"kind":"compute","compute_ns":1}})" "\n" R"({"op":{"id":4,"kind":"compute"}})");
  EXPECT_EQ(e.line(), 3u);
  EXPECT_EQ(e.field(), "op.id");

  e = parse_error(R"({"op":{"id":1,"kind":"h2d","bytes":128,"host":"registered","dst_alloc":9}})");
  EXPECT_EQ(e.field(), "op.dst_alloc");

  e = parse_error(R"({"alloc":{"id":1,"bytes":4096}})" "\n" R"({"op":{"id":1,"kind":"fill","bytes":4096,"dst_alloc":1,"dst_offset":128}})");
  EXPECT_EQ(e.line(), 3u);
  EXPECT_EQ(e.field(), "op.dst_offset");

  e = parse_error(R"({"op":{"id":1,"kind":"compute","deps":[7]}})");
  EXPECT_EQ(e.field(), "op.deps");

  e = parse_error("{not json");
  EXPECT_EQ(e.line(), 2u);

  e = parse_error(R"({"blob":{}})");
  EXPECT_EQ(e.field(), "blob");

  std::istringstream wrong(R"({"format":"spyre-dma-trace","version":2})");
  try {
    st::parse_trace(wrong, "v2");
    FAIL();
  } catch (const st::TraceError& err) {
    EXPECT_EQ(err.line(), 1u);
    EXPECT_EQ(err.field(), "header.version");
  }
}

// Found by fuzzing: nlohmann reports a number beyond a double as out_of_range, not parse_error.
TEST(TraceIo, NumberBeyondADoubleIsATraceErrorNamingTheLine) {
  const st::TraceError e = parse_error(R"({"alloc":{"id":1,"bytes":1e999}})");
  EXPECT_EQ(e.line(), 2u);
  EXPECT_NE(e.message().find("not valid JSON"), std::string::npos) << e.what();
}

TEST(TraceIo, MissingFileIsATraceError) {
  EXPECT_THROW(st::read_trace("/nonexistent/x.trace"), st::TraceError);
}

// Several devices: `devices` in the header, `device` on allocations and ops, each written only
// where it differs from its default, so that a trace of one device reads and writes as before.
TEST(TraceIo, DevicesRoundTripAndAreLeftOutForOne) {
  st::Trace t = sample();
  std::stringstream one;
  st::write_trace(t, one);
  EXPECT_EQ(one.str().find("\"devices\""), std::string::npos) << one.str();
  EXPECT_EQ(one.str().find("\"device\":0"), std::string::npos) << one.str();

  t.header.devices = 3;
  t.allocations.push_back({4, 4096, 0, 2});
  st::Op h2d;
  h2d.id = 14;
  h2d.device = 2;
  h2d.stream = 1;
  h2d.kind = st::OpKind::kH2D;
  h2d.bytes = 4096;
  h2d.host = st::HostMemory::kRegistered;
  h2d.dst_alloc = 4;
  h2d.deps = {13};  // an op of device 0: a dependency may cross devices
  t.ops.push_back(h2d);
  std::stringstream s;
  st::write_trace(t, s);
  EXPECT_NE(s.str().find("\"devices\":3"), std::string::npos) << s.str();
  const st::Trace back = st::parse_trace(s, "mem");
  EXPECT_EQ(back.header.devices, 3u);
  ASSERT_EQ(back.allocations.size(), 2u);
  EXPECT_EQ(back.allocations[0].device, 0u);
  EXPECT_EQ(back.allocations[1].device, 2u);
  ASSERT_EQ(back.ops.size(), 5u);
  EXPECT_EQ(back.ops[3].device, 0u);
  EXPECT_EQ(back.ops[4].device, 2u);
  EXPECT_EQ(back.ops[4].stream, 1u);
  EXPECT_EQ(back.ops[4].deps, std::vector<std::uint64_t>{13});
  std::stringstream again;
  st::write_trace(back, again);
  EXPECT_EQ(again.str(), s.str());

  // A file without the keys (every trace written before them) reads as one device.
  std::istringstream old(std::string(kHeader) + "\n" + R"({"alloc":{"id":1,"bytes":4096,"max_chunk_bytes":0}})" "\n" +
                         R"({"op":{"id":1,"stream":0,"kind":"fill","bytes":128,"dst_alloc":1,"pattern":0}})");
  const st::Trace older = st::parse_trace(old, "old");
  EXPECT_EQ(older.header.devices, 1u);
  EXPECT_EQ(older.allocations.at(0).device, 0u);
  EXPECT_EQ(older.ops.at(0).device, 0u);
}

TEST(TraceIo, DeviceErrorsNameLineFieldAndValue) {
  const std::string two =
      R"({"format":"spyre-dma-trace","version":1,"source":"test","device":"","link":"","resolution_ns":0,"devices":2,"extra":{}})";
  const auto error = [](const std::string& text) {
    std::istringstream in(text);
    try {
      st::parse_trace(in, "d.trace");
    } catch (const st::TraceError& e) {
      return e;
    }
    ADD_FAILURE() << "no error for: " << text;
    return st::TraceError("", 0, "", "");
  };
  auto e = error(R"({"format":"spyre-dma-trace","version":1,"devices":0})");
  EXPECT_EQ(e.line(), 1u);
  EXPECT_EQ(e.field(), "header.devices");

  e = error(R"({"format":"spyre-dma-trace","version":1,"devices":"two"})");
  EXPECT_EQ(e.field(), "header.devices");
  EXPECT_NE(e.message().find("\"two\""), std::string::npos) << e.what();

  e = error(two + "\n" + R"({"alloc":{"id":1,"bytes":4096,"device":2}})");
  EXPECT_EQ(e.line(), 2u);
  EXPECT_EQ(e.field(), "alloc.device");
  EXPECT_NE(e.message().find("allocation 1: device 2"), std::string::npos) << e.what();

  e = error(two + "\n" + R"({"op":{"id":7,"device":5,"kind":"compute","compute_ns":1}})");
  EXPECT_EQ(e.line(), 2u);
  EXPECT_EQ(e.field(), "op.device");
  EXPECT_NE(e.message().find("op 7: device 5"), std::string::npos) << e.what();

  // One device by default: a device index of 1 names the header's count.
  e = error(std::string(kHeader) + "\n" + R"({"op":{"id":3,"device":1,"kind":"compute","compute_ns":1}})");
  EXPECT_EQ(e.field(), "op.device");
  EXPECT_NE(e.message().find("(1)"), std::string::npos) << e.what();

  // An op on device 0 naming device 1's allocation.
  e = error(two + "\n" + R"({"alloc":{"id":4,"bytes":4096,"device":1}})" "\n" +
            R"({"op":{"id":9,"kind":"h2d","bytes":128,"host":"registered","dst_alloc":4}})");
  EXPECT_EQ(e.line(), 3u);
  EXPECT_EQ(e.field(), "op.dst_alloc");
  EXPECT_NE(e.message().find("op 9: allocation 4 is on device 1, the op on device 0"), std::string::npos)
      << e.what();
  e = error(two + "\n" + R"({"alloc":{"id":4,"bytes":4096}})" "\n" +
            R"({"op":{"id":9,"device":1,"kind":"d2d","bytes":128,"src_alloc":4,"dst_alloc":4,"dst_offset":128}})");
  EXPECT_EQ(e.field(), "op.dst_alloc");
  EXPECT_NE(e.message().find("allocation 4 is on device 0, the op on device 1"), std::string::npos) << e.what();
}
