// The vfio-user codec: every payload round-trips, and every malformed message is refused with a
// ProtocolError that names the field.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "spyre_dma/vfio/protocol.hpp"

namespace {

using namespace spyre_dma::vfio;

Reader reader_of(Command c, const std::vector<std::uint8_t>& v) { return Reader(c, v.data(), v.size()); }

template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const ProtocolError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(VfioProtocol, HeaderRoundTripsAndIsLittleEndian) {
  Header h;
  h.id = 0x1234;
  h.command = Command::kRegionWrite;
  h.size = 40;
  h.flags = kFlagNoReply;
  std::uint8_t b[kHeaderBytes];
  write_header(h, b);
  EXPECT_EQ(b[0], 0x34);
  EXPECT_EQ(b[1], 0x12);
  EXPECT_EQ(b[2], 10);
  EXPECT_EQ(b[4], 40);
  EXPECT_EQ(b[8], 0x10);
  const Header back = parse_header(b, sizeof b);
  EXPECT_EQ(back.id, h.id);
  EXPECT_EQ(back.command, h.command);
  EXPECT_EQ(back.size, h.size);
  EXPECT_FALSE(back.wants_reply());
  EXPECT_FALSE(back.is_reply());
}

TEST(VfioProtocol, HeaderRefusesSizesAndTypesItCannotTrust) {
  std::uint8_t b[kHeaderBytes] = {};
  EXPECT_NE(error_of([&] { parse_header(b, 8); }).find("shorter than its 16-byte header"), std::string::npos);
  Header h;
  h.size = 8;
  write_header(h, b);
  EXPECT_NE(error_of([&] { parse_header(b, kHeaderBytes); }).find("msg_size is 8"), std::string::npos);
  h.size = kMaxMessageBytes + 1;
  write_header(h, b);
  EXPECT_NE(error_of([&] { parse_header(b, kHeaderBytes); }).find("msg_size"), std::string::npos);
  h.size = kHeaderBytes;
  h.flags = 7;
  write_header(h, b);
  EXPECT_NE(error_of([&] { parse_header(b, kHeaderBytes); }).find("flags.type is 7"), std::string::npos);
}

TEST(VfioProtocol, PayloadsRoundTrip) {
  DmaMap m{kDmaRead | kDmaWrite, 4096, 0x10'0000'1000ull, 12345};
  auto bytes = encode(m);
  Reader r = reader_of(Command::kDmaMap, bytes);
  const DmaMap m2 = parse_dma_map(r);
  EXPECT_EQ(m2.flags, m.flags);
  EXPECT_EQ(m2.offset, m.offset);
  EXPECT_EQ(m2.address, m.address);
  EXPECT_EQ(m2.size, m.size);

  RegionInfo info;
  info.index = 9;
  info.size = 16;
  info.flags = kRegionWrite;
  info.has_type = true;
  info.type = kVendorRegionType;
  info.subtype = kClockRegionSubtype;
  bytes = encode(info);
  r = reader_of(Command::kDeviceGetRegionInfo, bytes);
  const RegionInfo i2 = parse_region_info(r);
  EXPECT_EQ(i2.index, 9u);
  EXPECT_EQ(i2.size, 16u);
  EXPECT_TRUE(i2.has_type);
  EXPECT_EQ(i2.type, kVendorRegionType);
  EXPECT_EQ(i2.subtype, kClockRegionSubtype);

  // Both capabilities at once, in the order linux/vfio.h numbers them (SPARSE_MMAP 1, TYPE 2).
  info.index = kDoorbellRegion;
  info.size = kDoorbellRegionBytes;
  info.subtype = kDoorbellRegionSubtype;
  info.sparse_areas = {{0, 1024}, {2048, 2048}};
  bytes = encode(info);
  EXPECT_EQ(bytes[32], 2) << "CAP_TYPE's id";
  EXPECT_EQ(bytes[48], 1) << "CAP_SPARSE_MMAP's id, after CAP_TYPE's 16 bytes";
  r = reader_of(Command::kDeviceGetRegionInfo, bytes);
  const RegionInfo i3 = parse_region_info(r);
  EXPECT_TRUE(i3.has_type);
  EXPECT_EQ(i3.subtype, kDoorbellRegionSubtype);
  ASSERT_EQ(i3.sparse_areas.size(), 2u);
  EXPECT_EQ(i3.sparse_areas[1].offset, 2048u);
  EXPECT_EQ(i3.sparse_areas[1].size, 2048u);
  // An area outside the region is refused by name.
  info.sparse_areas = {{4096, 4096}};
  bytes = encode(info);
  r = reader_of(Command::kDeviceGetRegionInfo, bytes);
  EXPECT_NE(error_of([&] { parse_region_info(r); }).find("sparse mmap area offset"), std::string::npos);

  RegionAccess a;
  a.offset = 0x1000C;
  a.region = 0;
  a.count = 4;
  a.data = {1, 2, 3, 4};
  bytes = encode(a);
  r = reader_of(Command::kRegionWrite, bytes);
  const RegionAccess a2 = parse_region_access(r, true);
  EXPECT_EQ(a2.offset, a.offset);
  EXPECT_EQ(a2.data, a.data);

  Version v;
  v.capabilities_json = R"({"capabilities":{}})";
  bytes = encode(v);
  EXPECT_EQ(bytes.back(), 0) << "the JSON string is NUL-terminated";
  r = reader_of(Command::kVersion, bytes);
  EXPECT_EQ(parse_version(r).capabilities_json, v.capabilities_json);
}

TEST(VfioProtocol, TruncatedPayloadsNameTheMissingField) {
  RegionAccess a;
  a.count = 8;  // but no data follows
  auto bytes = encode(a);
  Reader r = reader_of(Command::kRegionWrite, bytes);
  const std::string e = error_of([&] { parse_region_access(r, true); });
  EXPECT_NE(e.find("VFIO_USER_REGION_WRITE: field data needs 8 bytes"), std::string::npos) << e;

  std::vector<std::uint8_t> shortmap = {32, 0, 0, 0, 1, 0};
  r = reader_of(Command::kDmaMap, shortmap);
  EXPECT_NE(error_of([&] { parse_dma_map(r); }).find("field flags"), std::string::npos);
}

TEST(VfioProtocol, ValuesOutOfRangeAreNamed) {
  DmaMap m{0, 0, 0x1000, 4096};  // neither read nor write
  auto bytes = encode(m);
  Reader r = reader_of(Command::kDmaMap, bytes);
  EXPECT_NE(error_of([&] { parse_dma_map(r); }).find("field flags is 0x0"), std::string::npos);
  m = {kDmaRead, 0, ~0ull - 10, 4096};  // wraps
  bytes = encode(m);
  r = reader_of(Command::kDmaMap, bytes);
  EXPECT_NE(error_of([&] { parse_dma_map(r); }).find("wraps"), std::string::npos);
  IrqSet s{kIrqDataEventfd | kIrqDataBool | kIrqActionTrigger, kMsixIrqIndex, 0, 3};
  bytes = encode(s);
  r = reader_of(Command::kDeviceSetIrqs, bytes);
  EXPECT_NE(error_of([&] { parse_irq_set(r); }).find("exactly one DATA_"), std::string::npos);
  // A capability chain that points backwards never ends.
  RegionInfo info;
  info.has_type = true;
  bytes = encode(info);
  bytes[36] = 32;  // the capability's next: itself
  r = reader_of(Command::kDeviceGetRegionInfo, bytes);
  EXPECT_NE(error_of([&] { parse_region_info(r); }).find("forwards"), std::string::npos);
}

}  // namespace
