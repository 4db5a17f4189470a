// Ring helpers, byte counts, little-endian helpers, the BAR0 register map and the stable numbers
// of every enumeration that crosses the wire.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "spyre_dma/hw/contract.hpp"

namespace hw = spyre_dma::hw;
namespace reg = spyre_dma::hw::reg;

// ---------------------------------------------------------------------------------------------
// Byte counts and address helpers
// ---------------------------------------------------------------------------------------------

TEST(ByteCount, WholeAndPartialLastFlit) {
  hw::DmaSection s;
  s.length_flits = 0;
  EXPECT_EQ(s.byte_count(), 0u);
  s.length_flits = 1;
  EXPECT_EQ(s.byte_count(), 128u);
  s.last_flit_bytes = 1;
  EXPECT_EQ(s.byte_count(), 1u);
  s.last_flit_bytes = 127;
  EXPECT_EQ(s.byte_count(), 127u);
  s.length_flits = 3;
  EXPECT_EQ(s.byte_count(), 2u * 128 + 127);
  s.last_flit_bytes = 0;
  EXPECT_EQ(s.byte_count(), 384u);
  s.length_flits = hw::kLengthFlitsMax;
  EXPECT_EQ(s.byte_count(), std::uint64_t(hw::kLengthFlitsMax) * 128);  // no 32-bit overflow
  s.last_flit_bytes = 64;
  EXPECT_EQ(s.byte_count(), std::uint64_t(hw::kLengthFlitsMax - 1) * 128 + 64);
}

TEST(ByteCount, EveryLengthRoundTripsThroughFlits) {
  // A transfer of n bytes is flits_for(n) flits with last = n % 128.
  for (std::uint64_t n : {1ull, 127ull, 128ull, 129ull, 4096ull, 4097ull, 4194304ull, 4194305ull}) {
    hw::DmaSection s;
    s.length_flits = static_cast<std::uint32_t>(hw::flits_for(n));
    s.last_flit_bytes = static_cast<std::uint8_t>(n % hw::kFlitBytes);
    EXPECT_EQ(s.byte_count(), n);
  }
}

TEST(AddressHelpers, FlitsForAndAlignment) {
  EXPECT_EQ(hw::flits_for(0), 0u);
  EXPECT_EQ(hw::flits_for(1), 1u);
  EXPECT_EQ(hw::flits_for(128), 1u);
  EXPECT_EQ(hw::flits_for(129), 2u);
  EXPECT_EQ(hw::flits_for(4ull << 20), 32768u);
  EXPECT_TRUE(hw::flit_aligned(0));
  EXPECT_TRUE(hw::flit_aligned(256));
  EXPECT_FALSE(hw::flit_aligned(64));
  EXPECT_FALSE(hw::flit_aligned(129));
}

TEST(LittleEndian, LoadAndStore) {
  std::uint8_t b[8];
  hw::store_le64(b, 0x0102030405060708ull);
  const std::uint8_t want[8] = {0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(b[i], want[i]) << i;
  EXPECT_EQ(hw::load_le64(want), 0x0102030405060708ull);
  const std::uint8_t high[8] = {0, 0, 0, 0, 0, 0, 0, 0x80};
  EXPECT_EQ(hw::load_le64(high), 0x8000000000000000ull);
}

// ---------------------------------------------------------------------------------------------
// Ring helpers
// ---------------------------------------------------------------------------------------------

TEST(Rings, ExpectedPhaseOverLaps) {
  // Lap 0 carries phase 1, lap 1 phase 0, lap 2 phase 1, ...
  for (std::uint32_t i = 0; i < 8; ++i) EXPECT_TRUE(hw::expected_phase(i, 8)) << i;
  for (std::uint32_t i = 8; i < 16; ++i) EXPECT_FALSE(hw::expected_phase(i, 8)) << i;
  for (std::uint32_t i = 16; i < 24; ++i) EXPECT_TRUE(hw::expected_phase(i, 8)) << i;
  EXPECT_TRUE(hw::expected_phase(0, 1));
  EXPECT_FALSE(hw::expected_phase(1, 1));
  EXPECT_TRUE(hw::expected_phase(2, 1));
}

TEST(Rings, ExpectedPhaseAcrossIndexWrap) {
  // 2^32 is an even number of laps for every power-of-two size, so the phase keeps alternating
  // when the free-running index wraps.
  for (std::uint32_t size : {1u, 2u, 8u, 1024u, 1u << 31}) {
    SCOPED_TRACE(size);
    EXPECT_FALSE(hw::expected_phase(0xFFFFFFFFu, size));
    EXPECT_TRUE(hw::expected_phase(0u, size));
    EXPECT_FALSE(hw::expected_phase(0u - size, size));
    EXPECT_TRUE(hw::expected_phase(0u - 2 * size, size));
  }
  EXPECT_TRUE(hw::expected_phase(0x7FFFFFFFu, 1u << 31));
  EXPECT_FALSE(hw::expected_phase(0x80000000u, 1u << 31));
}

TEST(Rings, FullAndEmpty) {
  EXPECT_TRUE(hw::ring_empty(0, 0));
  EXPECT_TRUE(hw::ring_empty(0xFFFFFFFFu, 0xFFFFFFFFu));
  EXPECT_FALSE(hw::ring_empty(1, 0));
  EXPECT_FALSE(hw::ring_empty(0, 0xFFFFFFFFu));
  EXPECT_FALSE(hw::ring_full(0, 0, 8));
  EXPECT_FALSE(hw::ring_full(7, 0, 8));
  EXPECT_TRUE(hw::ring_full(8, 0, 8));
  EXPECT_TRUE(hw::ring_full(1, 0, 1));
  EXPECT_FALSE(hw::ring_full(100, 100, 1));
}

TEST(Rings, FullWithWrappedIndices) {
  // The producer has wrapped past 2^32, the consumer has not.
  const std::uint32_t ci = 0xFFFFFFF0u;
  EXPECT_TRUE(hw::ring_full(0x10u, ci, 32));   // 32 outstanding
  EXPECT_FALSE(hw::ring_full(0x10u, ci, 64));
  EXPECT_FALSE(hw::ring_full(0x0Fu, ci, 32));  // 31 outstanding
  EXPECT_FALSE(hw::ring_empty(0x10u, ci));
  // Neither index has wrapped yet, but ci + size would: 8 outstanding is not full.
  EXPECT_FALSE(hw::ring_full(0xFFFFFFF8u, ci, 32));
  EXPECT_TRUE(hw::ring_full(0xFFFFFFF8u, ci, 8));
  EXPECT_TRUE(hw::ring_full(0u, 0xFFFFFFFFu, 1));
  EXPECT_FALSE(hw::ring_full(0u, 0xFFFFFFFFu, 2));
  // The slot of a wrapped index is index & (size - 1).
  EXPECT_EQ(0xFFFFFFFFu & 31u, 31u);
  EXPECT_EQ((0xFFFFFFFFu + 1u) & 31u, 0u);
}

TEST(Rings, PowerOfTwo) {
  EXPECT_FALSE(hw::is_power_of_two(0));
  EXPECT_TRUE(hw::is_power_of_two(1));
  EXPECT_TRUE(hw::is_power_of_two(2));
  EXPECT_FALSE(hw::is_power_of_two(3));
  EXPECT_FALSE(hw::is_power_of_two(6));
  EXPECT_TRUE(hw::is_power_of_two(1ull << 31));
  EXPECT_TRUE(hw::is_power_of_two(1ull << 63));
  EXPECT_FALSE(hw::is_power_of_two((1ull << 63) + 1));
  EXPECT_FALSE(hw::is_power_of_two(~0ull));
}

// ---------------------------------------------------------------------------------------------
// BAR0 register map
// ---------------------------------------------------------------------------------------------
namespace {

struct Reg {
  std::string name;
  std::uint64_t offset;
  unsigned width;  // bytes
};

std::vector<Reg> global_regs() {
  return {
      {"ID", reg::kId, 4},
      {"VERSION", reg::kVersion, 4},
      {"CAPABILITIES", reg::kCapabilities_64, 8},
      {"DEPTH_COMPUTE", reg::kDepthCompute, 4},
      {"DEPTH_DMAI", reg::kDepthDmai, 4},
      {"DEPTH_DMAO", reg::kDepthDmao, 4},
      {"MAX_CB_BYTES", reg::kMaxCbBytes, 4},
      {"NUM_TAGS", reg::kNumTags, 4},
      {"DEVICE_MEM_BYTES", reg::kDeviceMemBytes_64, 8},
      {"DEVICE_MEM_USABLE", reg::kDeviceMemUsable_64, 8},
      {"TIMESTAMP_NS", reg::kTimestampNs_64, 8},
      {"CONTROL", reg::kControl, 4},
      {"STATUS", reg::kStatus, 4},
      {"FATAL_CAUSE", reg::kFatalCause, 4},
      {"FATAL_DETAIL", reg::kFatalDetail_64, 8},
  };
}
std::vector<Reg> pipe_regs() {
  return {
      {"CB_RING_BASE", reg::kCbRingBase_64, 8}, {"CB_RING_SIZE", reg::kCbRingSize, 4},
      {"CB_PI", reg::kCbPi, 4},                 {"CB_CI", reg::kCbCi, 4},
      {"RB_RING_BASE", reg::kRbRingBase_64, 8}, {"RB_RING_SIZE", reg::kRbRingSize, 4},
      {"RB_PI", reg::kRbPi, 4},                 {"RB_CI", reg::kRbCi, 4},
      {"IRQ_ENABLE", reg::kIrqEnable, 4},       {"IRQ_VECTOR", reg::kIrqVector, 4},
      {"ERROR_STATUS", reg::kErrorStatus, 4},   {"QUEUE_CONTROL", reg::kQueueControl, 4},
  };
}

std::vector<Reg> all_regs() {
  std::vector<Reg> all = global_regs();
  for (hw::Pipeline p : {hw::Pipeline::kCompute, hw::Pipeline::kDmai, hw::Pipeline::kDmao}) {
    for (const Reg& r : pipe_regs()) {
      all.push_back({std::string(hw::to_string(p)) + "." + r.name, reg::pipe(p, r.offset), r.width});
    }
  }
  return all;
}

}  // namespace

TEST(Registers, PinnedOffsets) {
  EXPECT_EQ(reg::kId, 0x0000u);
  EXPECT_EQ(reg::kVersion, 0x0004u);
  EXPECT_EQ(reg::kCapabilities_64, 0x0008u);
  EXPECT_EQ(reg::kDepthCompute, 0x0010u);
  EXPECT_EQ(reg::kDepthDmai, 0x0014u);
  EXPECT_EQ(reg::kDepthDmao, 0x0018u);
  EXPECT_EQ(reg::kMaxCbBytes, 0x001Cu);
  EXPECT_EQ(reg::kNumTags, 0x0020u);
  EXPECT_EQ(reg::kDeviceMemBytes_64, 0x0028u);
  EXPECT_EQ(reg::kDeviceMemUsable_64, 0x0030u);
  EXPECT_EQ(reg::kTimestampNs_64, 0x0038u);
  EXPECT_EQ(reg::kControl, 0x0100u);
  EXPECT_EQ(reg::kStatus, 0x0104u);
  EXPECT_EQ(reg::kFatalCause, 0x0108u);
  EXPECT_EQ(reg::kFatalDetail_64, 0x0110u);
  EXPECT_EQ(reg::kPipeBase, 0x1000u);
  EXPECT_EQ(reg::kPipeStride, 0x100u);
  EXPECT_EQ(reg::kBar0Bytes, 4u << 20);
  EXPECT_EQ(reg::pipe(hw::Pipeline::kCompute, reg::kCbRingBase_64), 0x1000u);
  EXPECT_EQ(reg::pipe(hw::Pipeline::kDmai, reg::kCbPi), 0x110Cu);
  EXPECT_EQ(reg::pipe(hw::Pipeline::kDmao, reg::kRbCi), 0x1228u);
  EXPECT_EQ(reg::pipe(hw::Pipeline::kDmao, reg::kQueueControl), 0x1238u);
}

TEST(Registers, NaturallyAlignedAndInsideBar0) {
  for (const Reg& r : all_regs()) {
    EXPECT_EQ(r.offset % r.width, 0u) << r.name;
    EXPECT_LE(r.offset + r.width, reg::kBar0Bytes) << r.name;
  }
}

TEST(Registers, NoTwoRegistersOverlap) {
  std::vector<Reg> all = all_regs();
  std::sort(all.begin(), all.end(), [](const Reg& a, const Reg& b) { return a.offset < b.offset; });
  for (std::size_t i = 1; i < all.size(); ++i) {
    EXPECT_LE(all[i - 1].offset + all[i - 1].width, all[i].offset)
        << all[i - 1].name << " overlaps " << all[i].name;
  }
  EXPECT_EQ(all.size(), global_regs().size() + 3 * pipe_regs().size());
}

TEST(Registers, PipelineBlocksAreDisjointAndAboveGlobals) {
  for (const Reg& r : pipe_regs()) EXPECT_LE(r.offset + r.width, reg::kPipeStride) << r.name;
  for (const Reg& r : global_regs()) EXPECT_LE(r.offset + r.width, reg::kPipeBase) << r.name;
  EXPECT_LE(reg::kPipeBase + hw::kNumPipelines * reg::kPipeStride, reg::kBar0Bytes);
  // Block p spans [base + p*stride, base + (p+1)*stride).
  for (unsigned p = 0; p < hw::kNumPipelines; ++p) {
    const auto pl = static_cast<hw::Pipeline>(p);
    EXPECT_EQ(reg::pipe(pl, 0), reg::kPipeBase + p * reg::kPipeStride);
    EXPECT_LT(reg::pipe(pl, reg::kQueueControl) + 4, reg::pipe(pl, 0) + reg::kPipeStride);
  }
}

TEST(Registers, ControlStatusCapabilityBits) {
  EXPECT_EQ(std::uint32_t(hw::kControlEnable), 1u);
  EXPECT_EQ(std::uint32_t(hw::kControlReset), 2u);
  EXPECT_EQ(std::uint32_t(hw::kStatusReady), 1u);
  EXPECT_EQ(std::uint32_t(hw::kStatusResetting), 2u);
  EXPECT_EQ(std::uint32_t(hw::kStatusFatal), 4u);
  EXPECT_EQ(std::uint64_t(hw::kCapFill), 1u);
  EXPECT_EQ(std::uint64_t(hw::kCapDeviceCopy), 2u);
  EXPECT_EQ(std::uint64_t(hw::kCapCompute), 4u);
  EXPECT_EQ(std::uint64_t(hw::kCapTimestamps), 8u);
  EXPECT_EQ(hw::kQueueEnable, 1u);
  EXPECT_EQ(hw::kPciVendorIbm, 0x1014u);
  EXPECT_EQ(hw::kPciDeviceSpyrePf, 0x06A7u);
  EXPECT_EQ(hw::kContractVersion, 0x00010000u);
}

// ---------------------------------------------------------------------------------------------
// Stable numbers
// ---------------------------------------------------------------------------------------------

TEST(Enums, WireConstants) {
  EXPECT_EQ(hw::kFlitBytes, 128u);
  EXPECT_EQ(hw::kCbBytes, 128u);
  EXPECT_EQ(hw::kRbBytes, 64u);
  EXPECT_EQ(hw::kNumSegments, 8u);
  EXPECT_EQ(hw::kSegmentFlits, 1ull << 27);
  EXPECT_EQ(hw::kSegmentBytes, 16ull << 30);
  EXPECT_EQ(hw::kNumSegments * hw::kSegmentBytes, 128ull << 30);
  EXPECT_EQ(hw::kNumXlatEntries, 8u);
  EXPECT_EQ(hw::kMinTag, 1u);
  EXPECT_EQ(hw::kMaxTag, 32768u);
  EXPECT_EQ(hw::kLengthFlitsMax, (1u << 24) - 1);
  EXPECT_EQ(hw::kIovaFlitBits, 57u);
  EXPECT_EQ(hw::kCbFormat, 0x5C);
  EXPECT_EQ(hw::kRbFormat, 0xA5);
  EXPECT_EQ(hw::kCtrlOffset, 0u);
  EXPECT_EQ(hw::kReservedOffset, 8u);
  EXPECT_EQ(hw::kDmiOffset, 16u);
  EXPECT_EQ(hw::kDmoOffset, 32u);
  EXPECT_EQ(hw::kCmptOffset, 48u);
  EXPECT_EQ(hw::kXlatOffset, 64u);
  EXPECT_EQ(hw::kXlatEntryBytes, 8u);
}

TEST(Enums, PipelineAndStatus) {
  EXPECT_EQ(int(hw::Pipeline::kCompute), 0);
  EXPECT_EQ(int(hw::Pipeline::kDmai), 1);
  EXPECT_EQ(int(hw::Pipeline::kDmao), 2);
  EXPECT_EQ(hw::kNumPipelines, 3u);
  EXPECT_EQ(int(hw::RbStatus::kGood), 0);
  EXPECT_EQ(int(hw::RbStatus::kRetry), 1);
  EXPECT_EQ(int(hw::RbStatus::kAbend), 2);
  EXPECT_EQ(int(hw::RbStatus::kError), 3);
}

TEST(Enums, SectionTypesAndModes) {
  EXPECT_EQ(int(hw::DmaType::kSkip), 0);
  EXPECT_EQ(int(hw::DmaType::kImmediate), 1);
  EXPECT_EQ(int(hw::DmaType::kMemoryFill), 2);
  EXPECT_EQ(int(hw::DmaType::kDeviceCopy), 3);
  EXPECT_EQ(int(hw::ComputeType::kSkip), 0);
  EXPECT_EQ(int(hw::ComputeType::kTimed), 1);
  EXPECT_EQ(int(hw::XlatMode::kInvalid), 0);
  EXPECT_EQ(int(hw::XlatMode::kReadOnly), 1);
  EXPECT_EQ(int(hw::XlatMode::kReadWrite), 2);
}

TEST(Enums, ErrorKinds) {
  EXPECT_EQ(int(hw::ErrorKind::kNone), 0);
  EXPECT_EQ(int(hw::ErrorKind::kMalformedCb), 1);
  EXPECT_EQ(int(hw::ErrorKind::kXlatFault), 2);
  EXPECT_EQ(int(hw::ErrorKind::kIommuFault), 3);
  EXPECT_EQ(int(hw::ErrorKind::kDeviceMemoryFault), 4);
  EXPECT_EQ(int(hw::ErrorKind::kPcieError), 5);
  EXPECT_EQ(int(hw::ErrorKind::kCompletionTimeout), 6);
  EXPECT_EQ(int(hw::ErrorKind::kReset), 7);
  EXPECT_EQ(int(hw::ErrorKind::kQueueFault), 8);
}

TEST(Enums, CbFields) {
  using F = hw::CbField;
  const std::pair<F, int> want[] = {
      {F::kNone, 0},         {F::kCtrlFormat, 1},   {F::kCtrlTag, 2},       {F::kCtrlReserved, 3},
      {F::kReservedWord, 4}, {F::kDmiType, 5},      {F::kDmiLength, 6},     {F::kDmiLastFlit, 7},
      {F::kDmiDeviceVa, 8},  {F::kDmiHostIova, 9},  {F::kDmiReserved, 10},  {F::kDmoType, 11},
      {F::kDmoLength, 12},   {F::kDmoLastFlit, 13}, {F::kDmoDeviceVa, 14},  {F::kDmoHostIova, 15},
      {F::kDmoReserved, 16}, {F::kCmptType, 17},    {F::kCmptReserved, 18}, {F::kXlatMode, 19},
      {F::kXlatLength, 20},  {F::kXlatReserved, 21}, {F::kSections, 22},    {F::kPipeline, 23},
      {F::kDmiSource, 24},
  };
  for (const auto& [f, n] : want) EXPECT_EQ(int(f), n) << hw::to_string(f);
}

TEST(Enums, NamesAreDistinctAndKnown) {
  std::set<std::string_view> names;
  for (int i = 0; i <= 25; ++i) {
    const std::string_view s = hw::to_string(static_cast<hw::CbField>(i));
    EXPECT_NE(s, "unknown") << i;
    EXPECT_TRUE(names.insert(s).second) << s;
  }
  EXPECT_EQ(hw::to_string(static_cast<hw::CbField>(26)), "unknown");
  names.clear();
  for (int i = 0; i <= 8; ++i) {
    const std::string_view s = hw::to_string(static_cast<hw::ErrorKind>(i));
    EXPECT_NE(s, "unknown") << i;
    EXPECT_TRUE(names.insert(s).second) << s;
  }
  EXPECT_EQ(hw::to_string(static_cast<hw::ErrorKind>(9)), "unknown");
  EXPECT_EQ(hw::to_string(hw::RbStatus::kGood), "Good");
  EXPECT_EQ(hw::to_string(hw::RbStatus::kRetry), "Retry");
  EXPECT_EQ(hw::to_string(hw::RbStatus::kAbend), "Abend");
  EXPECT_EQ(hw::to_string(hw::RbStatus::kError), "Error");
  EXPECT_EQ(hw::to_string(hw::Pipeline::kCompute), "COMPUTE");
  EXPECT_EQ(hw::to_string(hw::Pipeline::kDmai), "DMAI");
  EXPECT_EQ(hw::to_string(hw::Pipeline::kDmao), "DMAO");
}
