// The conformance suite: the contract's rules (docs/programming-model.md) run against every backend
// of the build, opened by name through the backend registry, through the Device interface alone
// (and, where a rule needs it, the registry's capabilities: memory backdoor, misbehaviour). Every
// test is a TEST_P over the backends, so each backend runs the same tests; a rule a backend breaks
// fails on that backend only.
//
// Backends: every backend the registry has and this machine can open; vfio-user (a transport to
// another backend) serving refdev from a private `spyre-dma serve`, with its doorbell region
// mapped and without (where the build has the server); the cuda backend on its host executor (the CUDA one
// needs a GPU and is covered by the cuda tests); vfio only where a card is bound to vfio-pci.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "ring_driver.hpp"
#include "spyre_dma/backend/builtin.hpp"
#include "spyre_dma/device_core/misbehave.hpp"
#include "spyre_dma/device_core/register_map.hpp"

namespace conformance {

using namespace device_test;
namespace reg = hw::reg;
namespace dc = spyre_dma::device_core;

struct BackendUnderTest {
  std::string name;
  spyre_dma::backend::Settings settings;
  std::string label;  // the test-name suffix
};

inline std::vector<BackendUnderTest> backends_under_test() {
  std::vector<BackendUnderTest> out;
  for (const std::string& name : spyre_dma::backend::builtin().names()) {
    BackendUnderTest b{name, {}, name};
    if (name == "vfio-user") {
#ifdef SPYRE_DMA_TEST_SERVER_PROGRAM
      b.settings.values["vfio-serve"] = "refdev";
      b.settings.values["vfio-server"] = SPYRE_DMA_TEST_SERVER_PROGRAM;
      b.label = "vfio_user_refdev";
      // And once more with every BAR0 write a message (a client that does not map the region).
      BackendUnderTest messages = b;
      messages.settings.values["vfio-doorbells"] = "messages";
      messages.label = "vfio_user_refdev_messages";
      out.push_back(messages);
#else
      continue;
#endif
    }
    if (name == "cuda") {
      b.settings.values["executor"] = "host";
      b.label = "cuda_host";
    }
    // A backend this machine cannot open (vfio without a card) is not a backend under test here.
    if (!spyre_dma::backend::builtin().check(b.name, b.settings).empty()) continue;
    out.push_back(b);
  }
  return out;
}

inline std::string backend_label(const ::testing::TestParamInfo<BackendUnderTest>& info) { return info.param.label; }

// How GoogleTest prints the parameters (in CTest's test names): the label, not the object's bytes.
inline void PrintTo(const BackendUnderTest& b, std::ostream* os) { *os << b.label; }

// A fresh device of the backend, reset and identified, for each test.
class DeviceFixture : public ::testing::Test {
 protected:
  void open(const BackendUnderTest& b) {
    name_ = b.name;
    watchdog_ = std::make_unique<Watchdog>(std::chrono::seconds(60), "conformance test");
    instance_ = spyre_dma::backend::builtin().open(b.name, b.settings);
    dev().write32(reg::kControl, hw::kControlReset);
    memory_bytes_ = dev().read64(reg::kDeviceMemBytes_64);
    max_cb_bytes_ = dev().read32(reg::kMaxCbBytes);
    for (unsigned p = 0; p < hw::kNumPipelines; ++p) depth_[p] = dev().read32(reg::kDepthCompute + 4 * p);
  }
  // (No TearDown: members go in reverse order, a test's host buffers before the rings before the
  // device, whose mappings they are.)

  spyre_dma::Device& dev() { return *instance_.device; }
  spyre_dma::backend::Instance& instance() { return instance_; }
  // One driver per test, programmed with `opt` (queues and device enabled unless told otherwise).
  RingDriver& ring(RingOptions opt = {}) {
    ring_ = std::make_unique<RingDriver>(dev(), opt);
    return *ring_;
  }
  RingDriver& driver() { return *ring_; }
  std::uint32_t status() { return dev().read32(reg::kStatus); }
  std::uint32_t error_status(Pipeline p) { return dev().read32(reg::pipe(p, reg::kErrorStatus)); }
  std::uint32_t index(Pipeline p, std::uint64_t offset) { return dev().read32(reg::pipe(p, offset)); }
  std::uint64_t memory_bytes() const { return memory_bytes_; }
  std::uint32_t max_cb_bytes() const { return max_cb_bytes_; }
  std::uint32_t depth(Pipeline p) const { return depth_[idx(p)]; }
  // A device reset and a freshly programmed ring driver.
  void reset_and_reprogram() {
    dev().write32(reg::kControl, hw::kControlReset);
    driver().program();
  }
  // Arms a misbehaviour (every backend of this build has the capability).
  void misbehave(dc::MisbehaveKind kind, std::uint64_t at_cb = 1, std::uint64_t rogue_iova = 0,
                 std::uint64_t rogue_offset = 0) {
    ASSERT_NE(instance_.misbehave, nullptr) << name_ << " cannot misbehave";
    instance_.misbehave->arm_misbehave(dc::Misbehave{kind, at_cb, rogue_iova, rogue_offset});
  }
  // Device memory read behind the device's back.
  std::vector<std::uint8_t> backdoor(std::uint64_t phys, std::size_t n) {
    std::vector<std::uint8_t> out(n);
    instance_.memory->backdoor_read(phys, out.data(), n);
    return out;
  }

  // Submits one CB on `p` and returns its RB (tag 0 and status Good on a timeout: the caller's
  // expectations then fail).
  hw::ResponseBlock run_cb(Pipeline p, const hw::ControlBlock& cb) {
    driver().submit(p, cb);
    return driver().next_rb(p);
  }
  hw::ResponseBlock run_cb(Pipeline p, const hw::CbBytes& raw) {
    driver().submit(p, raw);
    return driver().next_rb(p);
  }

 private:
  std::string name_;
  std::unique_ptr<Watchdog> watchdog_;
  spyre_dma::backend::Instance instance_;
  std::unique_ptr<RingDriver> ring_;
  std::uint64_t memory_bytes_ = 0;
  std::uint32_t max_cb_bytes_ = 0;
  std::array<std::uint32_t, hw::kNumPipelines> depth_{};
};

// The behaviour tests: one device per test, the backend the parameter names.
class Conformance : public DeviceFixture, public ::testing::WithParamInterface<BackendUnderTest> {
 protected:
  void SetUp() override { open(GetParam()); }
};

// Expects an Error RB of `kind` naming `field` (and, when given, `detail`).
inline void expect_error(const hw::ResponseBlock& rb, hw::ErrorKind kind, hw::CbField field,
                         std::optional<std::uint64_t> detail = std::nullopt) {
  EXPECT_EQ(rb.status, hw::RbStatus::kError);
  EXPECT_EQ(rb.error, kind) << hw::to_string(rb.error);
  EXPECT_EQ(rb.field, field) << hw::to_string(rb.field);
  if (detail) {
    EXPECT_EQ(rb.detail, *detail);
  }
  EXPECT_EQ(rb.bytes, 0u);
}

}  // namespace conformance
