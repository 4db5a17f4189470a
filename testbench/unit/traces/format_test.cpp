// The trace data model: enum names and the consistency rules of check_trace().
#include <gtest/gtest.h>

#include "spyre_dma/traces/trace.hpp"

namespace st = spyre_dma::traces;

namespace {

st::Trace small_trace() {
  st::Trace t;
  t.header.source = "test";
  t.allocations.push_back({1, 1 << 20, 0});
  st::Op h2d;
  h2d.id = 1;
  h2d.kind = st::OpKind::kH2D;
  h2d.bytes = 4096;
  h2d.host = st::HostMemory::kPageable;
  h2d.dst_alloc = 1;
  t.ops.push_back(h2d);
  st::Op d2h;
  d2h.id = 2;
  d2h.stream = 1;
  d2h.kind = st::OpKind::kD2H;
  d2h.bytes = 4096;
  d2h.host = st::HostMemory::kRegistered;
  d2h.src_alloc = 1;
  d2h.deps = {1};
  t.ops.push_back(d2h);
  return t;
}

}  // namespace

TEST(Format, EnumNamesRoundTrip) {
  for (int k = 0; k <= static_cast<int>(st::OpKind::kEventWait); ++k) {
    const auto kind = static_cast<st::OpKind>(k);
    EXPECT_EQ(st::parse_op_kind(st::to_string(kind)), kind);
  }
  EXPECT_STREQ(st::to_string(st::OpKind::kHostCallback), "host_callback");
  EXPECT_EQ(st::parse_host_memory("pageable"), st::HostMemory::kPageable);
  EXPECT_FALSE(st::parse_op_kind("memcpy").has_value());
  EXPECT_FALSE(st::parse_host_memory("pinned").has_value());
}

TEST(Format, ConsistentTracePasses) { EXPECT_EQ(st::check_trace(small_trace()), ""); }

TEST(Format, CheckNamesOpFieldAndValue) {
  auto t = small_trace();
  t.ops[1].id = 1;
  EXPECT_NE(st::check_trace(t).find("op.id"), std::string::npos);

  t = small_trace();
  t.ops[0].dst_alloc = 7;
  const std::string bad = st::check_trace(t);
  EXPECT_NE(bad.find("op.dst_alloc"), std::string::npos) << bad;
  EXPECT_NE(bad.find("7"), std::string::npos) << bad;

  t = small_trace();
  t.ops[0].dst_offset = (1 << 20) - 128;
  EXPECT_NE(st::check_trace(t).find("op.dst_offset"), std::string::npos);

  t = small_trace();
  t.ops[1].deps = {5};
  EXPECT_NE(st::check_trace(t).find("op.deps"), std::string::npos);

  t = small_trace();
  t.ops[0].host = st::HostMemory::kNone;
  EXPECT_NE(st::check_trace(t).find("op.host"), std::string::npos);
}

TEST(Format, CheckNamesDeviceFieldsAndValues) {
  auto t = small_trace();
  t.header.devices = 0;
  EXPECT_NE(st::check_trace(t).find("header.devices"), std::string::npos);

  t = small_trace();
  t.ops[1].device = 1;  // one device: index 1 is past it
  std::string bad = st::check_trace(t);
  EXPECT_NE(bad.find("op.device: op 2: device 1"), std::string::npos) << bad;

  t.header.devices = 2;  // now device 1 exists, but allocation 1 is device 0's
  bad = st::check_trace(t);
  EXPECT_NE(bad.find("op.src_alloc: op 2: allocation 1 is on device 0, the op on device 1"), std::string::npos)
      << bad;

  t.allocations.push_back({2, 1 << 20, 0, 1});
  t.ops[1].src_alloc = 2;  // device 1's own allocation; its dependency on device 0's op stays
  EXPECT_EQ(st::check_trace(t), "");

  t.allocations[1].device = 4;
  bad = st::check_trace(t);
  EXPECT_NE(bad.find("alloc.device: allocation 2: device 4"), std::string::npos) << bad;
}
