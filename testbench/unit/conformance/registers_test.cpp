// Conformance: BAR0 (docs/programming-model.md, section 10). Every register's value after reset and
// its access rule, on every backend, then the access routine's rules for the offsets around them.
#include "conformance.hpp"

namespace spyre_dma::device_core {
// How GoogleTest prints a register parameter (in CTest's test names): its name.
void PrintTo(Reg r, std::ostream* os) { *os << spec(r).name; }
}  // namespace spyre_dma::device_core

namespace conformance {
namespace {

using dc::Reg;

// --- Every register of the table, on every backend ---------------------------------------------

class RegisterRules : public DeviceFixture,
                      public ::testing::WithParamInterface<std::tuple<BackendUnderTest, Reg>> {
 protected:
  void SetUp() override { open(std::get<0>(GetParam())); }
  const dc::RegisterSpec& spec() const { return dc::spec(std::get<1>(GetParam())); }
  std::vector<Pipeline> pipelines() const {
    if (!dc::per_pipeline(spec().id)) return {Pipeline::kCompute};
    return {Pipeline::kCompute, Pipeline::kDmai, Pipeline::kDmao};
  }
  std::uint64_t read(Pipeline p) {
    const std::uint64_t at = dc::offset_of(spec().id, p);
    return spec().width == 8 ? dev().read64(at) : dev().read32(at);
  }
  void write(Pipeline p, std::uint64_t v) {
    const std::uint64_t at = dc::offset_of(spec().id, p);
    spec().width == 8 ? dev().write64(at, v) : dev().write32(at, static_cast<std::uint32_t>(v));
  }
  std::uint64_t all_ones() const { return spec().width == 8 ? ~std::uint64_t{0} : 0xFFFF'FFFFull; }
};

TEST_P(RegisterRules, ValueAfterReset) {
  const dc::RegisterSpec& s = spec();
  for (Pipeline p : pipelines()) {
    SCOPED_TRACE(std::string(s.name) + " of " + std::string(hw::to_string(p)));
    const std::uint64_t v = read(p);
    switch (s.source) {
      case dc::Source::kConstant:
      case dc::Source::kStored: EXPECT_EQ(v, s.reset_value); break;
      case dc::Source::kStatus: EXPECT_EQ(v, 0u) << "not enabled, not resetting, not fatal"; break;
      case dc::Source::kClock: EXPECT_LE(v, read(p)) << "the clock never runs backwards"; break;
      case dc::Source::kIdentity:
        switch (s.id) {
          case Reg::kCapabilities: EXPECT_EQ(v & ~std::uint64_t{0xF}, 0u) << "only the contract's bits"; break;
          case Reg::kDepthCompute:
          case Reg::kDepthDmai:
          case Reg::kDepthDmao: EXPECT_TRUE(hw::is_power_of_two(v)) << v; break;
          case Reg::kDeviceMemUsable: EXPECT_LE(v, memory_bytes()); [[fallthrough]];
          default: EXPECT_GT(v, 0u);
        }
        break;
    }
  }
}

TEST_P(RegisterRules, AccessRule) {
  const dc::RegisterSpec& s = spec();
  for (Pipeline p : pipelines()) {
    SCOPED_TRACE(std::string(s.name) + " of " + std::string(hw::to_string(p)));
    const std::uint64_t before = read(p);
    write(p, all_ones());
    const std::uint64_t after = read(p);
    switch (s.access) {
      case dc::Access::kReadOnly:
        if (s.source == dc::Source::kClock) {
          EXPECT_NE(after, all_ones()) << "a write does not set the clock";
        } else {
          EXPECT_EQ(after, before) << "a write to a read-only register changes nothing";
        }
        break;
      case dc::Access::kReadWrite:
        EXPECT_EQ(after, all_ones() & s.write_mask) << "stores the written bits its mask lets through";
        write(p, 0);
        EXPECT_EQ(read(p), 0u);
        break;
      case dc::Access::kWrite1Clear: EXPECT_EQ(after, 0u) << "a write only ever clears it"; break;
    }
  }
}

std::vector<Reg> all_registers() {
  std::vector<Reg> out;
  for (const dc::RegisterSpec& s : dc::kRegisterMap) out.push_back(s.id);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Backends, RegisterRules,
                         ::testing::Combine(::testing::ValuesIn(backends_under_test()),
                                            ::testing::ValuesIn(all_registers())),
                         [](const ::testing::TestParamInfo<std::tuple<BackendUnderTest, Reg>>& p) {
                           return std::get<0>(p.param).label + "_" + std::string(dc::spec(std::get<1>(p.param)).name);
                         });

// --- The access routine --------------------------------------------------------------------------

class Bar0 : public Conformance {};

TEST_P(Bar0, IdentifiesTheSpyrePciFunction) {
  EXPECT_EQ(dev().read32(reg::kId), 0x06A7'1014u);
  EXPECT_EQ(dev().read32(reg::kVersion) >> 16, 1u);
}

TEST_P(Bar0, MisalignedAccessesReadZeroAndWriteNothing) {
  EXPECT_EQ(dev().read32(reg::kId + 2), 0u);
  EXPECT_EQ(dev().read64(reg::kDepthCompute + 1), 0u);
  dev().write32(reg::kControl + 1, hw::kControlEnable);
  dev().write32(reg::pipe(Pipeline::kDmai, reg::kIrqVector) + 2, 7);
  EXPECT_EQ(dev().read32(reg::kControl), 0u);
  EXPECT_EQ(dev().read32(reg::pipe(Pipeline::kDmai, reg::kIrqVector)), 0u);
}

TEST_P(Bar0, UnassignedOffsetsReadZeroAndIgnoreWrites) {
  for (std::uint64_t at : {std::uint64_t{0x24}, std::uint64_t{0x200}, reg::pipe(Pipeline::kDmai, 0x3C),
                           std::uint64_t{0x1300}, reg::kBar0Bytes - 4}) {
    SCOPED_TRACE(at);
    dev().write32(at, 0xDEAD'BEEF);
    EXPECT_EQ(dev().read32(at), 0u);
  }
}

TEST_P(Bar0, AccessesBeyondTheBarThrow) {
  EXPECT_THROW((void)dev().read32(reg::kBar0Bytes), std::out_of_range);
  EXPECT_THROW(dev().write32(reg::kBar0Bytes, 1), std::out_of_range);
  EXPECT_THROW((void)dev().read64(reg::kBar0Bytes - 4), std::out_of_range);
  EXPECT_THROW(dev().write64(~std::uint64_t{0} - 3, 1), std::out_of_range);
}

TEST_P(Bar0, A64BitReadOfTwo32BitRegistersCombinesThem) {
  const std::uint64_t lo = dev().read32(reg::kDepthCompute), hi = dev().read32(reg::kDepthDmai);
  EXPECT_EQ(dev().read64(reg::kDepthCompute), lo | (hi << 32));
}

TEST_P(Bar0, A64BitWriteOfTwo32BitRegistersSetsBoth) {
  dev().write64(reg::pipe(Pipeline::kDmao, reg::kIrqEnable), (std::uint64_t{42} << 32) | 1);
  EXPECT_EQ(dev().read32(reg::pipe(Pipeline::kDmao, reg::kIrqEnable)), 1u);
  EXPECT_EQ(dev().read32(reg::pipe(Pipeline::kDmao, reg::kIrqVector)), 42u);
}

TEST_P(Bar0, The32BitHalvesOfA64BitRegisterAreWrittenAndReadApart) {
  const std::uint64_t at = reg::pipe(Pipeline::kDmai, reg::kCbRingBase_64);
  dev().write32(at, 0x1234'5000);
  dev().write32(at + 4, 0x0000'00AB);
  EXPECT_EQ(dev().read64(at), 0x0000'00AB'1234'5000ull);
  dev().write32(at + 4, 0x0000'00CD);  // the low half stays
  EXPECT_EQ(dev().read64(at), 0x0000'00CD'1234'5000ull);
  EXPECT_EQ(dev().read32(at), 0x1234'5000u);
  EXPECT_EQ(dev().read32(at + 4), 0xCDu);
}

TEST_P(Bar0, TheHighHalfOfAReadOnly64BitRegisterReadsApart) {
  EXPECT_EQ(dev().read32(reg::kDeviceMemBytes_64 + 4), memory_bytes() >> 32);
  EXPECT_EQ(dev().read32(reg::kDeviceMemBytes_64), memory_bytes() & 0xFFFF'FFFFull);
  dev().write32(reg::kDeviceMemBytes_64 + 4, 0);
  EXPECT_EQ(dev().read64(reg::kDeviceMemBytes_64), memory_bytes());
}

TEST_P(Bar0, RingSizesReadBackAsWrittenEvenWhenUnusable) {
  dev().write32(reg::pipe(Pipeline::kDmai, reg::kCbRingSize), 3);
  dev().write32(reg::pipe(Pipeline::kDmai, reg::kRbRingSize), 1u << 30);
  EXPECT_EQ(dev().read32(reg::pipe(Pipeline::kDmai, reg::kCbRingSize)), 3u);
  EXPECT_EQ(dev().read32(reg::pipe(Pipeline::kDmai, reg::kRbRingSize)), 1u << 30);
}

TEST_P(Bar0, StatusReadsReadyOnceEnabled) {
  dev().write32(reg::kControl, hw::kControlEnable);
  EXPECT_EQ(status(), hw::kStatusReady);
  dev().write32(reg::kControl, 0);
  EXPECT_EQ(status(), 0u);
}

TEST_P(Bar0, ResetKeepsTheEnableBitWrittenWithIt) {
  dev().write32(reg::kControl, hw::kControlReset | hw::kControlEnable);
  EXPECT_EQ(dev().read32(reg::kControl), hw::kControlEnable) << "RESET clears itself";
  EXPECT_EQ(status(), hw::kStatusReady);
}

TEST_P(Bar0, TheDeviceClockIsTheRbClock) {
  RingDriver& r = ring();
  HostBuffer src(dev(), 4096, spyre_dma::DmaAccess::kDeviceReads, 0x11);
  const hw::ResponseBlock rb = run_cb(Pipeline::kDmai, h2d(1, src.iova(), 0, 4096));
  ASSERT_EQ(rb.status, hw::RbStatus::kGood);
  EXPECT_LE(rb.start_ns, rb.end_ns);
  EXPECT_GE(dev().read64(reg::kTimestampNs_64), rb.end_ns);
  (void)r;
}

INSTANTIATE_TEST_SUITE_P(Backends, Bar0, ::testing::ValuesIn(backends_under_test()), backend_label);

}  // namespace
}  // namespace conformance
