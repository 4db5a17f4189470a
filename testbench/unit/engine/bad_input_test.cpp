// Bad input: every invalid request throws its typed exception with a message naming the offending
// value, and nothing reaches the engine's queues or the device.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "engine_fixture.hpp"

namespace spyre_dma::test {
namespace {

constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();

// Runs `f`, which must throw `Ex` whose message contains every needle, and checks that nothing
// was submitted (engine stats and device counters unchanged).
template <class Ex, class F>
void expect_rejected(Rig& rig, F&& f, const std::vector<std::string>& needles) {
  const EngineStats before = rig.engine->stats();
  const refdev::RefDeviceCounters dev_before = rig.dev().counters();
  try {
    f();
    ADD_FAILURE() << "no exception";
  } catch (const Ex& e) {
    const std::string what = e.what();
    for (const std::string& n : needles) {
      EXPECT_NE(what.find(n), std::string::npos) << "message \"" << what << "\" does not name " << n;
    }
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
  const EngineStats after = rig.engine->stats();
  EXPECT_EQ(after.ops_submitted, before.ops_submitted);
  EXPECT_EQ(after.ops_completed, before.ops_completed);
  EXPECT_EQ(after.cbs_submitted, before.cbs_submitted);
  EXPECT_EQ(after.doorbells, before.doorbells);
  EXPECT_EQ(after.device_memory_allocated, before.device_memory_allocated);
  EXPECT_EQ(rig.dev().counters().total_cbs(), dev_before.total_cbs());
}

class BadInput : public ::testing::Test {
 protected:
  static constexpr std::uint64_t kBuf = 64 * KiB;
  Rig rig_ = make_rig();
  Engine& e_ = *rig_.engine;
  Stream s_ = e_.create_stream();
  DeviceBuffer buf_ = e_.allocate(kBuf);
  std::vector<std::uint8_t> host_ = std::vector<std::uint8_t>(kBuf, 1);
  void* wrap_ = reinterpret_cast<void*>(std::numeric_limits<std::uintptr_t>::max() - 63);
};

TEST_F(BadInput, CopyH2d) {
  auto* p = host_.data();
  expect_rejected<InvalidArgument>(rig_, [&] { s_.copy_h2d(buf_, 0, nullptr, 128); }, {"copy_h2d", "null"});
  expect_rejected<InvalidArgument>(rig_, [&] { s_.copy_h2d(buf_, 0, p, 0); }, {"zero bytes"});
  expect_rejected<InvalidArgument>(rig_, [&] { s_.copy_h2d(buf_, 64, p, 128); }, {"offset 64", "128"});
  expect_rejected<InvalidArgument>(rig_, [&] { s_.copy_h2d(buf_, 0, p, kBuf + 1); },
                                   {"+65537", "65536-byte"});
  expect_rejected<InvalidArgument>(rig_, [&] { s_.copy_h2d(buf_, kBuf, p, 1); }, {"[65536, +1)"});
  expect_rejected<InvalidArgument>(rig_, [&] { s_.copy_h2d(buf_, kMax - 127, p, 256); },
                                   {std::to_string(kMax - 127)});
  expect_rejected<InvalidArgument>(rig_, [&] { s_.copy_h2d(buf_, 128, p, kMax); }, {std::to_string(kMax)});
  expect_rejected<InvalidArgument>(rig_, [&] { s_.copy_h2d(DeviceBuffer{}, 0, p, 128); }, {"empty"});
  expect_rejected<InvalidArgument>(rig_, [&] { s_.copy_h2d(buf_, 0, wrap_, 128); }, {"wraps"});
}

TEST_F(BadInput, CopyD2h) {
  auto* p = host_.data();
  expect_rejected<InvalidArgument>(rig_, [&] { s_.copy_d2h(nullptr, buf_, 0, 128); }, {"copy_d2h", "null"});
  expect_rejected<InvalidArgument>(rig_, [&] { s_.copy_d2h(p, buf_, 0, 0); }, {"zero bytes"});
  expect_rejected<InvalidArgument>(rig_, [&] { s_.copy_d2h(p, buf_, 64, 128); }, {"offset 64"});
  expect_rejected<InvalidArgument>(rig_, [&] { s_.copy_d2h(p, buf_, 4096, kBuf); }, {"[4096, +65536)"});
  expect_rejected<InvalidArgument>(rig_, [&] { s_.copy_d2h(p, buf_, kMax - 127, 256); },
                                   {std::to_string(kMax - 127)});
  expect_rejected<InvalidArgument>(rig_, [&] { s_.copy_d2h(p, buf_, 128, kMax - 64); },
                                   {std::to_string(kMax - 64)});
  expect_rejected<InvalidArgument>(rig_, [&] { s_.copy_d2h(p, DeviceBuffer{}, 0, 128); }, {"empty"});
  expect_rejected<InvalidArgument>(rig_, [&] { s_.copy_d2h(wrap_, buf_, 0, 128); }, {"wraps"});
}

TEST_F(BadInput, CopyD2d) {
  DeviceBuffer other = e_.allocate(kBuf);
  expect_rejected<InvalidArgument>(rig_, [&] { s_.copy_d2d(other, 0, buf_, 0, 0); }, {"zero bytes"});
  expect_rejected<InvalidArgument>(rig_, [&] { s_.copy_d2d(other, 64, buf_, 0, 128); },
                                   {"destination offset 64"});
  expect_rejected<InvalidArgument>(rig_, [&] { s_.copy_d2d(other, 0, buf_, 192, 128); }, {"source offset 192"});
  expect_rejected<InvalidArgument>(rig_, [&] { s_.copy_d2d(other, 0, buf_, 128, kBuf); },
                                   {"source range [128, +65536)"});
  expect_rejected<InvalidArgument>(rig_, [&] { s_.copy_d2d(other, kMax - 127, buf_, 0, 256); },
                                   {"destination", std::to_string(kMax - 127)});
  expect_rejected<InvalidArgument>(rig_, [&] { s_.copy_d2d(DeviceBuffer{}, 0, buf_, 0, 128); },
                                   {"destination DeviceBuffer is empty"});
  expect_rejected<InvalidArgument>(rig_, [&] { s_.copy_d2d(other, 0, DeviceBuffer{}, 0, 128); },
                                   {"source DeviceBuffer is empty"});
  // Overlap within one allocation, in both directions and by a single byte.
  expect_rejected<InvalidArgument>(rig_, [&] { s_.copy_d2d(buf_, 128, buf_, 0, 256); },
                                   {"overlap", "[0, +256)", "[128, +256)"});
  expect_rejected<InvalidArgument>(rig_, [&] { s_.copy_d2d(buf_, 0, buf_, 128, 129); }, {"overlap"});
  expect_rejected<InvalidArgument>(rig_, [&] { s_.copy_d2d(buf_, 0, buf_, 0, 128); }, {"overlap"});
  // Adjacent ranges do not overlap.
  SPYRE_EXPECT_OK(s_.copy_d2d(buf_, 256, buf_, 0, 256).wait(kWait));
}

TEST_F(BadInput, FillComputeCallbackEvents) {
  expect_rejected<InvalidArgument>(rig_, [&] { s_.fill(buf_, 0, 0, 1); }, {"fill", "zero bytes"});
  expect_rejected<InvalidArgument>(rig_, [&] { s_.fill(buf_, 100, 128, 1); }, {"offset 100"});
  expect_rejected<InvalidArgument>(rig_, [&] { s_.fill(buf_, 0, kBuf + 128, 1); }, {"+65664"});
  expect_rejected<InvalidArgument>(rig_, [&] { s_.fill(buf_, kMax - 127, 128, 1); }, {std::to_string(kMax - 127)});
  expect_rejected<InvalidArgument>(rig_, [&] { s_.fill(DeviceBuffer{}, 0, 128, 1); }, {"empty"});
  expect_rejected<InvalidArgument>(rig_, [&] { s_.compute(-5ns); }, {"negative duration -5"});
  expect_rejected<InvalidArgument>(rig_, [&] { s_.host_callback({}); }, {"empty function"});
  expect_rejected<InvalidArgument>(rig_, [&] { s_.record(Event{}); }, {"record", "empty Event"});
  expect_rejected<InvalidArgument>(rig_, [&] { s_.wait(Event{}); }, {"wait", "empty Event"});
  Stream empty;
  EXPECT_FALSE(empty.valid());
  expect_rejected<InvalidArgument>(rig_, [&] { empty.copy_h2d(buf_, 0, host_.data(), 128); }, {"empty Stream"});
  expect_rejected<InvalidArgument>(rig_, [&] { empty.fill(buf_, 0, 128, 1); }, {"empty Stream"});
  expect_rejected<InvalidArgument>(rig_, [&] { (void)empty.options(); }, {"empty Stream"});
  EXPECT_FALSE(Op{}.done());
  EXPECT_EQ(Op{}.wait(1ms).code(), ErrorCode::kInvalidArgument);
}

// Buffers and events belong to the engine that made them.
TEST_F(BadInput, HandlesOfAnotherEngine) {
  Rig other = make_rig();
  DeviceBuffer foreign = other.engine->allocate(kBuf);
  Event foreign_event = other.engine->create_event();
  auto* p = host_.data();
  const std::string id = std::to_string(foreign.id());
  expect_rejected<InvalidArgument>(rig_, [&] { s_.copy_h2d(foreign, 0, p, 128); }, {"another engine", id});
  expect_rejected<InvalidArgument>(rig_, [&] { s_.copy_d2h(p, foreign, 0, 128); }, {"another engine"});
  expect_rejected<InvalidArgument>(rig_, [&] { s_.copy_d2d(buf_, 0, foreign, 0, 128); }, {"another engine"});
  expect_rejected<InvalidArgument>(rig_, [&] { s_.copy_d2d(foreign, 0, buf_, 0, 128); }, {"another engine"});
  expect_rejected<InvalidArgument>(rig_, [&] { s_.fill(foreign, 0, 128, 1); }, {"another engine"});
  expect_rejected<InvalidArgument>(rig_, [&] { s_.record(foreign_event); }, {"another engine"});
  expect_rejected<InvalidArgument>(rig_, [&] { s_.wait(foreign_event); }, {"another engine"});
  EXPECT_EQ(other.engine->stats().ops_submitted, 0u);
}

TEST(BadAllocation, SizesChunksAndCapacity) {
  EngineOptions o;
  o.device_memory_bytes = 64 * MiB;  // 8 MiB per segment
  Rig rig = make_rig(o);
  Engine& e = *rig.engine;
  expect_rejected<InvalidArgument>(rig, [&] { e.allocate(0); }, {"0 bytes"});
  expect_rejected<InvalidArgument>(rig, [&] { e.allocate(4096, AllocOptions{1000}); },
                                   {"max_chunk_bytes 1000", "128"});
  expect_rejected<OutOfMemory>(rig, [&] { e.allocate(65 * MiB); },
                               {std::to_string(65 * MiB), std::to_string(64 * MiB)});
  // Sizes whose rounding up to a flit would wrap around.
  for (const std::uint64_t huge : {~std::uint64_t{0}, ~std::uint64_t{0} - 126, std::uint64_t{1} << 63}) {
    expect_rejected<OutOfMemory>(rig, [&] { e.allocate(huge); }, {std::to_string(huge)});
  }
  DeviceBuffer a = e.allocate(40 * MiB);  // spans segments: scatter-gather
  EXPECT_GT(a.address().chunks().size(), 1u);
  EXPECT_EQ(e.stats().device_memory_allocated, 40 * MiB);
  expect_rejected<OutOfMemory>(rig, [&] { e.allocate(30 * MiB); },
                               {std::to_string(30 * MiB), std::to_string(24 * MiB) + " of"});
  DeviceBuffer b = e.allocate(24 * MiB);  // exactly what is left
  EXPECT_EQ(e.stats().device_memory_allocated, 64 * MiB);
  expect_rejected<OutOfMemory>(rig, [&] { e.allocate(1); }, {"only 0 of"});
  b = DeviceBuffer{};  // the last handle returns the memory
  EXPECT_EQ(e.stats().device_memory_allocated, 40 * MiB);
  EXPECT_NO_THROW(e.allocate(24 * MiB));
}

TEST(BadRegistration, NullZeroOverlapWrap) {
  Rig rig = make_rig();
  Engine& e = *rig.engine;
  AlignedHost mem(64 * KiB);
  expect_rejected<InvalidArgument>(rig, [&] { e.register_host(nullptr, 4096); }, {"null"});
  expect_rejected<InvalidArgument>(rig, [&] { e.register_host(mem.data(), 0); }, {"zero bytes"});
  expect_rejected<InvalidArgument>(rig, [&] { e.allocate_host(0); }, {"zero bytes"});
  expect_rejected<InvalidArgument>(
      rig, [&] { e.register_host(reinterpret_cast<void*>(std::numeric_limits<std::uintptr_t>::max() - 4095), 8192); },
      {"wraps"});
  const auto base = reinterpret_cast<std::uintptr_t>(mem.data());
  HostBuffer first = e.register_host(mem.data() + 8 * KiB, 16 * KiB);
  const std::vector<std::string> names{"overlaps", std::to_string(base + 8 * KiB), std::to_string(16 * KiB)};
  expect_rejected<InvalidArgument>(rig, [&] { e.register_host(mem.data(), 8 * KiB + 1); }, names);
  expect_rejected<InvalidArgument>(rig, [&] { e.register_host(mem.data() + 24 * KiB - 1, 4096); }, names);
  expect_rejected<InvalidArgument>(rig, [&] { e.register_host(mem.data() + 12 * KiB, 128); }, names);
  expect_rejected<InvalidArgument>(rig, [&] { e.register_host(mem.data(), 64 * KiB); }, names);
  // Touching but disjoint ranges are fine, and a released range can be registered again.
  HostBuffer before = e.register_host(mem.data(), 8 * KiB);
  HostBuffer after = e.register_host(mem.data() + 24 * KiB, 8 * KiB);
  first.release();
  EXPECT_NO_THROW(e.register_host(mem.data() + 8 * KiB, 16 * KiB));
}

// Engine::open refuses options the device cannot honour, before it touches the rings; the device
// is left usable.
TEST(BadOptions, OpenRefusesAndNamesTheOption) {
  auto spy = std::make_shared<SpyDevice>();
  auto expect_open_fails = [&](EngineOptions o, std::vector<std::string> needles) {
    try {
      (void)Engine::open(spy, o);
      ADD_FAILURE() << "open succeeded";
    } catch (const InvalidArgument& e) {
      for (const std::string& n : needles) {
        EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what() << " lacks " << n;
      }
    } catch (const std::exception& e) {
      ADD_FAILURE() << "wrong exception type: " << e.what();
    }
  };
  EngineOptions o;
  o.ring_slots = {0, 12, 0};
  expect_open_fails(o, {"ring_slots[DMAI] = 12", "power of two"});
  o.ring_slots = {0, 0, 2048};
  expect_open_fails(o, {"ring_slots[DMAO] = 2048", "1024"});
  o.ring_slots = {512, 0, 0};
  expect_open_fails(o, {"ring_slots[COMPUTE] = 512", "256"});
  o = {};
  o.max_cb_bytes = 0;
  expect_open_fails(o, {"max_cb_bytes = 0"});
  o.max_cb_bytes = 4 * MiB + 1;
  expect_open_fails(o, {"max_cb_bytes = " + std::to_string(4 * MiB + 1), "multiple of 128"});
  o = {};
  o.staging_buffers = 0;
  expect_open_fails(o, {"staging_buffers = 0"});
  o = {};
  o.staging_buffer_bytes = 1000;
  expect_open_fails(o, {"staging_buffer_bytes = 1000"});
  o = {};
  o.staging_threads = 65;
  expect_open_fails(o, {"staging_threads = 65", "at most 64"});
  o = {};
  o.cb_timeout = 0ns;
  expect_open_fails(o, {"cb_timeout"});
  o = {};
  o.device_memory_bytes = 200ull << 30;
  expect_open_fails(o, {"device_memory_bytes = " + std::to_string(200ull << 30)});
  EXPECT_EQ(spy->ref().counters().total_cbs(), 0u);
  EXPECT_TRUE(spy->cbs().empty());

  // Valid options afterwards: the device works.
  o = {};
  o.ring_slots = {1, 1, 1};
  o.max_cb_bytes = 128;
  auto engine = Engine::open(spy, o);
  EXPECT_EQ(engine->limits().ring_slots, (std::array<std::uint32_t, 3>{1, 1, 1}));
  EXPECT_EQ(engine->limits().max_cb_bytes, 128u);
  Stream s = engine->create_stream();
  DeviceBuffer buf = engine->allocate(1000);
  std::vector<std::uint8_t> in = pattern(1000, 3), out(1000, 0);
  s.copy_h2d(buf, 0, in.data(), in.size());
  s.copy_d2h(out.data(), buf, 0, out.size());
  SPYRE_ASSERT_OK(s.synchronize(kWait));
  EXPECT_EQ(in, out);
  EXPECT_EQ(engine->stats().cbs_completed, 16u);  // 8 pieces of 128 B each way
  EXPECT_EQ(spy->overruns(), 0u);
}

// A capability the device lacks is refused at submission.
TEST(BadInputCapabilities, MissingCapabilityRejected) {
  refdev::RefDeviceConfig cfg;
  cfg.capabilities = 0;
  Rig rig = make_rig({}, cfg);
  Engine& e = *rig.engine;
  Stream s = e.create_stream();
  DeviceBuffer a = e.allocate(4096), b = e.allocate(4096);
  expect_rejected<InvalidArgument>(rig, [&] { s.fill(a, 0, 128, 1); }, {"does not support fills"});
  expect_rejected<InvalidArgument>(rig, [&] { s.copy_d2d(a, 0, b, 0, 128); }, {"does not support device copies"});
  expect_rejected<InvalidArgument>(rig, [&] { s.compute(1us); }, {"does not support compute"});
  std::vector<std::uint8_t> h(4096, 7);
  SPYRE_EXPECT_OK(s.copy_h2d(a, 0, h.data(), h.size()).wait(kWait));
}

// Handles outlive the engine: requests then fail with Closed; finished ops keep their status.
TEST(BadInputClosed, HandlesAfterTheEngineIsGone) {
  Rig rig = make_rig();
  Stream s = rig.engine->create_stream();
  Event ev = rig.engine->create_event();
  DeviceBuffer buf = rig.engine->allocate(4096);
  std::vector<std::uint8_t> h(4096, 1);
  Op op = s.copy_h2d(buf, 0, h.data(), h.size());
  SPYRE_ASSERT_OK(op.wait(kWait));
  rig.engine.reset();
  EXPECT_THROW(s.copy_h2d(buf, 0, h.data(), h.size()), Closed);
  EXPECT_THROW(s.fill(buf, 0, 128, 1), Closed);
  EXPECT_THROW((void)s.query(), Closed);
  EXPECT_THROW(s.synchronize(1ms), Closed);
  SPYRE_EXPECT_OK(op.wait(1ms));
  EXPECT_TRUE(op.done());
  EXPECT_TRUE(ev.query());
  EXPECT_EQ(buf.size(), 4096u);
}

}  // namespace
}  // namespace spyre_dma::test
