// IOMMU discipline: the device reaches only host memory the engine mapped, and only while the op
// that needs it lives (registered buffers while registered; staging buffers for the one CB that
// uses them). From the device side (misbehave rogue_dma, on refdev or on the SystemC model with
// SPYRE_DMA_TEST_BACKEND=sim) the CB's DMA is pointed at IOVAs the engine never mapped, unmapped
// after their op, or past the end of a mapping, and at device addresses outside the allocation:
// each is refused and reported in the RB, and no byte outside changes.
//
// The rogue IOVAs come from a first run without the misbehaviour: the IOVA allocator is
// deterministic, so the second run (checked to map the same IOVAs) sends the CB exactly there.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine_fixture.hpp"
#include "spyre_dma/device_core/misbehave.hpp"
#include "spyre_dma/refdev/ref_device.hpp"
#include "spyre_dma/spyre_dma.hpp"

namespace spyre_dma::test {
namespace {

using namespace std::chrono_literals;
using device_core::Misbehave;
using device_core::MisbehaveKind;

constexpr auto kWaitLimit = 10s;
constexpr std::size_t kPage = 4096;
constexpr std::uint8_t kCanaryByte = 0xC5;
constexpr std::uint8_t kUntouched = 0x5A;
constexpr std::uint32_t kFillB = 0xB0B1B2B3u;

bool on_sim() {
  const char* b = std::getenv("SPYRE_DMA_TEST_BACKEND");
  return b != nullptr && std::string(b) == "sim";
}

// Forwards to the backend and records every mapping: what the engine made reachable, in order,
// and what is reachable now.
class MappingRecorder final : public ForwardingDevice {
 public:
  using ForwardingDevice::ForwardingDevice;
  std::uint64_t map(void* host, std::size_t bytes, DmaAccess access) override {
    const std::uint64_t iova = ForwardingDevice::map(host, bytes, access);
    std::lock_guard lock(mu_);
    order_.push_back({iova, bytes});
    live_[iova] = bytes;
    return iova;
  }
  void unmap(std::uint64_t iova) override {
    ForwardingDevice::unmap(iova);
    std::lock_guard lock(mu_);
    live_.erase(iova);
  }
  struct Mapping {
    std::uint64_t iova;
    std::size_t bytes;
    bool operator==(const Mapping& o) const { return iova == o.iova && bytes == o.bytes; }
  };
  std::vector<Mapping> order() const {
    std::lock_guard lock(mu_);
    return order_;
  }
  std::size_t live() const {
    std::lock_guard lock(mu_);
    return live_.size();
  }
  bool is_live(std::uint64_t iova) const {
    std::lock_guard lock(mu_);
    return live_.count(iova) != 0;
  }

 private:
  mutable std::mutex mu_;
  std::vector<Mapping> order_;
  std::map<std::uint64_t, std::size_t> live_;
};

// Page-aligned host memory: page 0 and page 2 are canaries, page 1 is what gets registered.
class GuardedPages {
 public:
  GuardedPages() : p_(static_cast<std::uint8_t*>(std::aligned_alloc(kPage, 3 * kPage))) {
    if (!p_) throw std::bad_alloc();
    std::memset(p_, kCanaryByte, 3 * kPage);
    std::memset(p_ + kPage, kUntouched, kPage);
  }
  ~GuardedPages() { std::free(p_); }
  GuardedPages(const GuardedPages&) = delete;
  GuardedPages& operator=(const GuardedPages&) = delete;
  std::uint8_t* page() const noexcept { return p_ + kPage; }
  bool canaries_intact() const {
    return std::all_of(p_, p_ + kPage, [](std::uint8_t b) { return b == kCanaryByte; }) &&
           std::all_of(p_ + 2 * kPage, p_ + 3 * kPage, [](std::uint8_t b) { return b == kCanaryByte; });
  }
  bool page_untouched() const {
    return std::all_of(page(), page() + kPage, [](std::uint8_t b) { return b == kUntouched; });
  }

 private:
  std::uint8_t* p_;
};

// The mappings of one run, by their order: the engine's six rings, then these.
constexpr std::size_t kRingMaps = 6;
constexpr std::size_t kRegistered = kRingMaps;        // the page ops use directly
constexpr std::size_t kUnregistered = kRingMaps + 1;  // registered, then released before any CB
constexpr std::size_t kStagingOfCb1 = kRingMaps + 2;  // CB 1's staging buffer (a pageable H2D)

enum class Probe { kDeviceWrites, kDeviceReads };  // CB 3: D2H into the page, or H2D from it

struct Outcome {
  Status probe;
  std::vector<MappingRecorder::Mapping> maps;
  bool canaries = false, page_untouched = false, a_intact = false, b_intact = false;
  std::size_t live_after_cb1 = 0;
  bool staging_live_after_cb1 = true;
  std::uint64_t refdev_iommu_faults = 0;
};

// CB 1: pageable H2D into A (through a staging buffer); CB 2: fill B (A's neighbour); CB 3: the
// probe, between A and the registered page. Then A and B are read back to check them.
Outcome run(const Misbehave& m, Probe probe) {
  std::shared_ptr<Device> backend;
  std::shared_ptr<refdev::RefDevice> ref;
  if (!on_sim()) {
    ref = std::make_shared<refdev::RefDevice>();
    ref->set_misbehave(m);
    backend = ref;
  } else {
    backend = misbehaving_device(m);
  }
  auto rec = std::make_shared<MappingRecorder>(backend);
  Outcome out;
  EngineOptions o;
  o.cb_timeout = 2s;
  std::unique_ptr<Engine> engine = Engine::open(rec, o);
  Engine& e = *engine;
  Stream s = e.create_stream();
  GuardedPages pages, other;
  HostBuffer reg = e.register_host(pages.page(), kPage);
  { HostBuffer released = e.register_host(other.page(), kPage); }
  DeviceBuffer a = e.allocate(kPage), b = e.allocate(kPage);

  std::vector<std::uint8_t> pageable(kPage);
  for (std::size_t i = 0; i < kPage; ++i) pageable[i] = static_cast<std::uint8_t>(i * 13 + 1);
  if (!s.copy_h2d(a, 0, pageable.data(), kPage).wait(kWaitLimit).ok()) return out;  // CB 1
  out.live_after_cb1 = rec->live();
  const auto maps = rec->order();
  out.staging_live_after_cb1 = maps.size() > kStagingOfCb1 && rec->is_live(maps[kStagingOfCb1].iova);
  if (!s.fill(b, 0, kPage, kFillB).wait(kWaitLimit).ok()) return out;  // CB 2
  out.probe = probe == Probe::kDeviceWrites ? s.copy_d2h(pages.page(), a, 0, kPage).wait(kWaitLimit)
                                            : s.copy_h2d(a, 0, pages.page(), kPage).wait(kWaitLimit);  // CB 3
  out.page_untouched = pages.page_untouched();  // a refused D2H wrote nothing; an H2D only reads
  std::vector<std::uint8_t> back_a(kPage), back_b(kPage);
  (void)s.copy_d2h(back_a.data(), a, 0, kPage).wait(kWaitLimit);
  (void)s.copy_d2h(back_b.data(), b, 0, kPage).wait(kWaitLimit);
  // A keeps CB 1's data unless the probe was a good H2D from the (untouched) page.
  const bool a_rewritten = probe == Probe::kDeviceReads && out.probe.ok();
  out.a_intact = a_rewritten ? std::all_of(back_a.begin(), back_a.end(), [](std::uint8_t x) { return x == kUntouched; })
                             : back_a == pageable;
  std::vector<std::uint8_t> want_b(kPage);
  for (std::size_t i = 0; i < kPage; ++i) want_b[i] = static_cast<std::uint8_t>(kFillB >> (8 * (i % 4)));
  out.b_intact = back_b == want_b;
  out.canaries = pages.canaries_intact() && other.canaries_intact();
  out.maps = rec->order();
  if (ref) out.refdev_iommu_faults = ref->iommu().faults();
  (void)reg;
  return out;
}

struct Rogue {
  const char* name;
  Probe probe;
  std::function<Misbehave(const std::vector<MappingRecorder::Mapping>&)> aim;
  ErrorCode code;
  hw::ErrorKind kind;
};

Misbehave rogue_iova(std::uint64_t iova) {
  Misbehave m;
  m.kind = MisbehaveKind::kRogueDma;
  m.at_cb = 3;
  m.rogue_iova = iova;
  return m;
}

Misbehave rogue_offset(std::uint64_t bytes) {
  Misbehave m;
  m.kind = MisbehaveKind::kRogueDma;
  m.at_cb = 3;
  m.rogue_device_offset = bytes;
  return m;
}

const Rogue kRogues[] = {
    {"NeverMappedWrite", Probe::kDeviceWrites, [](const auto&) { return rogue_iova(0x1000); },
     ErrorCode::kIommuFault, hw::ErrorKind::kIommuFault},
    {"NeverMappedRead", Probe::kDeviceReads, [](const auto&) { return rogue_iova(0x1000); },
     ErrorCode::kIommuFault, hw::ErrorKind::kIommuFault},
    {"StagingAfterItsOpWrite", Probe::kDeviceWrites, [](const auto& m) { return rogue_iova(m[kStagingOfCb1].iova); },
     ErrorCode::kIommuFault, hw::ErrorKind::kIommuFault},
    {"StagingAfterItsOpRead", Probe::kDeviceReads, [](const auto& m) { return rogue_iova(m[kStagingOfCb1].iova); },
     ErrorCode::kIommuFault, hw::ErrorKind::kIommuFault},
    {"UnregisteredWrite", Probe::kDeviceWrites, [](const auto& m) { return rogue_iova(m[kUnregistered].iova); },
     ErrorCode::kIommuFault, hw::ErrorKind::kIommuFault},
    {"UnregisteredRead", Probe::kDeviceReads, [](const auto& m) { return rogue_iova(m[kUnregistered].iova); },
     ErrorCode::kIommuFault, hw::ErrorKind::kIommuFault},
    {"PastTheEndWrite", Probe::kDeviceWrites, [](const auto& m) { return rogue_iova(m[kRegistered].iova + kPage); },
     ErrorCode::kIommuFault, hw::ErrorKind::kIommuFault},
    {"StraddlingTheEndWrite", Probe::kDeviceWrites,
     [](const auto& m) { return rogue_iova(m[kRegistered].iova + kPage - 128); }, ErrorCode::kIommuFault,
     hw::ErrorKind::kIommuFault},
    {"StraddlingTheEndRead", Probe::kDeviceReads,
     [](const auto& m) { return rogue_iova(m[kRegistered].iova + kPage - 128); }, ErrorCode::kIommuFault,
     hw::ErrorKind::kIommuFault},
    {"DeviceMemoryWritePastTheAllocation", Probe::kDeviceReads, [](const auto&) { return rogue_offset(kPage); },
     ErrorCode::kDeviceError, hw::ErrorKind::kXlatFault},
    {"DeviceMemoryReadPastTheAllocation", Probe::kDeviceWrites, [](const auto&) { return rogue_offset(kPage); },
     ErrorCode::kDeviceError, hw::ErrorKind::kXlatFault},
};

class IommuDiscipline : public ::testing::TestWithParam<Rogue> {};

TEST_P(IommuDiscipline, RefusedReportedNothingOutsideChanges) {
  const Rogue& r = GetParam();
  const Outcome plain = run(Misbehave{}, r.probe);
  ASSERT_TRUE(plain.probe.ok()) << plain.probe.to_string();
  ASSERT_GT(plain.maps.size(), kStagingOfCb1);
  // Per-op mappings: after CB 1 only the rings and the one registration remain mapped.
  EXPECT_FALSE(plain.staging_live_after_cb1);
  EXPECT_EQ(plain.live_after_cb1, kRingMaps + 1);

  const Misbehave m = r.aim(plain.maps);
  const Outcome rogue = run(m, r.probe);
  ASSERT_GE(rogue.maps.size(), kStagingOfCb1 + 1);
  for (std::size_t i = 0; i <= kStagingOfCb1; ++i) {
    ASSERT_EQ(rogue.maps[i], plain.maps[i]) << "mapping " << i << " differs between the runs";
  }
  EXPECT_EQ(rogue.probe.code(), r.code) << rogue.probe.to_string();
  ASSERT_TRUE(rogue.probe.device().has_value()) << rogue.probe.to_string();
  EXPECT_EQ(rogue.probe.device()->kind, r.kind);
  if (r.kind == hw::ErrorKind::kIommuFault) {
    EXPECT_GE(rogue.probe.device()->detail, m.rogue_iova);  // the IOVA refused (the range start or the first bad byte)
    EXPECT_LT(rogue.probe.device()->detail, m.rogue_iova + kPage);
    if (!on_sim()) {
      EXPECT_GE(rogue.refdev_iommu_faults, 1u);
    }
  }
  EXPECT_TRUE(rogue.canaries) << "a canary page around a registered buffer changed";
  EXPECT_TRUE(rogue.page_untouched) << "the registered page changed";
  EXPECT_TRUE(rogue.a_intact) << "allocation A changed";
  EXPECT_TRUE(rogue.b_intact) << "allocation B (A's neighbour) changed";
}

INSTANTIATE_TEST_SUITE_P(Rogue, IommuDiscipline, ::testing::ValuesIn(kRogues),
                         [](const ::testing::TestParamInfo<Rogue>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace spyre_dma::test
