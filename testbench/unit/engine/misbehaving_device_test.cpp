// A device that breaks the ring contract (spyre_dma/device_core/misbehave.hpp), one kind at a time, on
// the backend of the run (refdev, or the SystemC model with SPYRE_DMA_TEST_BACKEND=sim): the engine
// names what the device did in a kDeviceFault (a stopped device: kDeviceTimeout), completes every
// op exactly once, never writes a host buffer after the op that owns it has completed, touches no
// byte around any host buffer, and works again after Engine::reset().
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
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
constexpr std::size_t kBytes = 64 * 1024;  // one CB per op
constexpr std::size_t kCanary = 4096;
constexpr std::uint8_t kCanaryByte = 0xC5;
constexpr std::uint8_t kUntouched = 0x5A;

EngineOptions short_timeout() {
  EngineOptions o;
  o.cb_timeout = 300ms;  // the kinds that stop a pipeline are caught by it
  return o;
}

// Host memory of `n` bytes between two canary pages; `fill` is what the buffer starts as.
class GuardedHost {
 public:
  GuardedHost(std::size_t n, std::uint8_t fill) : n_(n), mem_(n + 2 * kCanary) {
    std::memset(mem_.data(), kCanaryByte, kCanary);
    std::memset(mem_.data() + kCanary, fill, n);
    std::memset(mem_.data() + kCanary + n, kCanaryByte, kCanary);
  }
  std::uint8_t* data() noexcept { return mem_.data() + kCanary; }
  std::size_t size() const noexcept { return n_; }
  ::testing::AssertionResult canaries_intact() const {
    for (std::size_t i = 0; i < kCanary; ++i) {
      if (mem_[i] != kCanaryByte) return ::testing::AssertionFailure() << "canary before the buffer changed at -" << (kCanary - i);
      if (mem_[kCanary + n_ + i] != kCanaryByte) return ::testing::AssertionFailure() << "canary after the buffer changed at +" << i;
    }
    return ::testing::AssertionSuccess();
  }

 private:
  std::size_t n_;
  std::vector<std::uint8_t> mem_;
};

// Counts each op's completions and keeps a copy of its host destination as it was when the op
// completed, to prove later that nothing wrote it after.
class Completions {
 public:
  Callback watch(std::size_t id, const std::uint8_t* dst = nullptr, std::size_t n = 0) {
    std::lock_guard lock(mu_);
    if (calls_.size() <= id) calls_.resize(id + 1, 0), snapshots_.resize(id + 1), codes_.resize(id + 1);
    return [this, id, dst, n](const Status& s) {
      std::lock_guard inner(mu_);
      ++calls_[id];
      codes_[id] = s.code();
      if (dst) snapshots_[id].assign(dst, dst + n);
    };
  }
  int calls(std::size_t id) {
    std::lock_guard lock(mu_);
    return calls_.at(id);
  }
  // A callback runs just after its op is done (outside the engine lock): give the last ones a
  // moment before counting.
  void settle(std::size_t first, std::size_t last) {
    const auto until = std::chrono::steady_clock::now() + 2s;
    for (std::size_t id = first; id <= last; ++id) {
      while (calls(id) == 0 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
    }
  }
  ErrorCode code(std::size_t id) {
    std::lock_guard lock(mu_);
    return codes_.at(id);
  }
  // The destination still holds what it held at completion.
  bool unchanged_since_completion(std::size_t id, const std::uint8_t* dst) {
    std::lock_guard lock(mu_);
    const auto& s = snapshots_.at(id);
    return !s.empty() && std::memcmp(s.data(), dst, s.size()) == 0;
  }

 private:
  std::mutex mu_;
  std::vector<int> calls_;
  std::vector<ErrorCode> codes_;
  std::vector<std::vector<std::uint8_t>> snapshots_;
};

std::vector<std::uint8_t> data_of(std::size_t n, std::uint8_t seed) {
  std::vector<std::uint8_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>(seed + i * 7 + (i >> 9));
  return v;
}

// How the kinds end for the op whose CB the device answered wrongly.
enum class Ends {
  kFault,         // that op fails with kDeviceFault at once
  kFaultOrGood,   // its own RB was right: it may succeed before the extra RB is seen
  kIndexFault,    // no RB: the CB timeout finds the broken index, kDeviceFault
  kTimeout,       // the device went quiet: kDeviceTimeout
};

struct Case {
  MisbehaveKind kind;
  Ends ends;
  const char* says;  // in the error text
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string s(device_core::to_string(info.param.kind));
  for (char& c : s) c = c == '_' ? 'X' : c;
  return s;
}

class Misbehaving : public ::testing::TestWithParam<Case> {};

// CB 1 (H2D, DMAI) and CB 2 (staged D2H, DMAO) are answered properly; CB 3 (staged D2H, DMAO)
// is the one the device answers wrongly; op 4 follows it and must not succeed until the reset.
TEST_P(Misbehaving, FaultNamedOpsFailOnceNothingWrittenAfterCompletionResetRecovers) {
  const Case c = GetParam();
  Misbehave m;
  m.kind = c.kind;
  m.at_cb = 3;
  std::shared_ptr<Device> dev = misbehaving_device(m);
  std::unique_ptr<Engine> engine = Engine::open(dev, short_timeout());
  Engine& e = *engine;
  Stream s = e.create_stream();
  DeviceBuffer buf = e.allocate(2 * kBytes);
  const std::vector<std::uint8_t> src = data_of(kBytes, 3);
  GuardedHost in(kBytes, 0), out2(kBytes, kUntouched), out3(kBytes, kUntouched), out4(kBytes, kUntouched);
  std::memcpy(in.data(), src.data(), kBytes);
  Completions done;

  // CBs 1 and 2: answered as they should be.
  ASSERT_TRUE(s.copy_h2d(buf, 0, in.data(), kBytes, done.watch(1)).wait(kWaitLimit).ok());
  ASSERT_TRUE(s.copy_d2h(out2.data(), buf, 0, kBytes, done.watch(2, out2.data(), kBytes)).wait(kWaitLimit).ok());
  ASSERT_EQ(std::memcmp(out2.data(), src.data(), kBytes), 0);

  // CB 3: the misbehaviour.
  const Status st3 = s.copy_d2h(out3.data(), buf, 0, kBytes, done.watch(3, out3.data(), kBytes)).wait(kWaitLimit);
  switch (c.ends) {
    case Ends::kFault:
    case Ends::kIndexFault:
      EXPECT_EQ(st3.code(), ErrorCode::kDeviceFault) << st3.to_string();
      break;
    case Ends::kFaultOrGood:
      EXPECT_TRUE(st3.ok() || st3.code() == ErrorCode::kDeviceFault) << st3.to_string();
      break;
    case Ends::kTimeout:
      EXPECT_EQ(st3.code(), ErrorCode::kDeviceTimeout) << st3.to_string();
      break;
  }
  if (st3.ok()) {
    EXPECT_EQ(std::memcmp(out3.data(), src.data(), kBytes), 0);
  } else {
    // A failed D2H leaves its destination as it was: nothing was copied out for a wrong RB.
    EXPECT_TRUE(std::all_of(out3.data(), out3.data() + kBytes, [](std::uint8_t b) { return b == kUntouched; }))
        << "the failed D2H's buffer was written";
  }

  // Op 4 on the same queue: fails (the fault, or the timed-out pipeline), never succeeds.
  const Status st4 = s.copy_d2h(out4.data(), buf, 0, kBytes, done.watch(4, out4.data(), kBytes)).wait(kWaitLimit);
  const ErrorCode want4 = c.ends == Ends::kTimeout ? ErrorCode::kDeviceTimeout : ErrorCode::kDeviceFault;
  EXPECT_EQ(st4.code(), want4) << st4.to_string();
  EXPECT_TRUE(std::all_of(out4.data(), out4.data() + kBytes, [](std::uint8_t b) { return b == kUntouched; }))
      << "a D2H that failed on a misbehaving device had its buffer written";

  // The first fault names the queue and what the device did.
  const Status first = c.ends == Ends::kFaultOrGood && st3.ok() ? st4 : st3;
  if (c.ends != Ends::kTimeout) {
    EXPECT_NE(first.message().find("DMAO"), std::string::npos) << first.message();
    EXPECT_NE(first.message().find(c.says), std::string::npos) << first.message();
    ASSERT_TRUE(first.device().has_value());
    EXPECT_EQ(first.device()->pipeline, hw::Pipeline::kDmao);
    EXPECT_GE(e.stats().device_faults, 1u);
  } else {
    EXPECT_EQ(e.stats().device_faults, 0u);
  }
  const Status sync = s.synchronize(kWaitLimit);
  EXPECT_FALSE(sync.ok());

  // Recovery: the reset cancels nothing (all done), the same engine works again.
  ASSERT_TRUE(e.reset().ok());
  GuardedHost back(kBytes, 0);
  const std::vector<std::uint8_t> src2 = data_of(kBytes, 91);
  std::memcpy(in.data(), src2.data(), kBytes);
  EXPECT_TRUE(s.copy_h2d(buf, kBytes, in.data(), kBytes, done.watch(5)).wait(kWaitLimit).ok());
  EXPECT_TRUE(s.copy_d2h(back.data(), buf, kBytes, kBytes, done.watch(6, back.data(), kBytes)).wait(kWaitLimit).ok());
  EXPECT_EQ(std::memcmp(back.data(), src2.data(), kBytes), 0);
  EXPECT_TRUE(s.synchronize(kWaitLimit).ok());

  // Exactly once, each; and nothing written after completion, nothing around any buffer.
  done.settle(1, 6);
  for (std::size_t id = 1; id <= 6; ++id) EXPECT_EQ(done.calls(id), 1) << "op " << id;
  for (auto* g : {&out2, &out3, &out4, &back}) EXPECT_TRUE(g->canaries_intact());
  EXPECT_TRUE(in.canaries_intact());
  EXPECT_TRUE(done.unchanged_since_completion(2, out2.data()));
  EXPECT_TRUE(done.unchanged_since_completion(3, out3.data()));
  EXPECT_TRUE(done.unchanged_since_completion(4, out4.data()));
  const EngineStats st = e.stats();
  EXPECT_EQ(st.ops_completed, st.ops_submitted);
  EXPECT_EQ(st.tags_in_use, 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, Misbehaving,
    ::testing::Values(Case{MisbehaveKind::kUnknownTag, Ends::kFault, "no CB in flight"},
                      Case{MisbehaveKind::kDuplicateRb, Ends::kFaultOrGood, "answered just before"},
                      Case{MisbehaveKind::kStaleTag, Ends::kFault, "answered just before"},
                      Case{MisbehaveKind::kGarbageStatus, Ends::kFault, "malformed (status"},
                      Case{MisbehaveKind::kRbPiBeyondRing, Ends::kIndexFault, "RB_PI"},
                      Case{MisbehaveKind::kCbCiBackwards, Ends::kIndexFault, "CB_CI"},
                      Case{MisbehaveKind::kStopAnswering, Ends::kTimeout, ""},
                      Case{MisbehaveKind::kDropRb, Ends::kTimeout, ""}),
    case_name);

// An RB on a queue with nothing outstanding (COMPUTE, while only DMA runs): the fault names that
// queue. The D2H whose RB was copied may succeed first (its own RB was right).
TEST(MisbehavingQueue, RbOnAQueueWithNothingOutstanding) {
  Misbehave m;
  m.kind = MisbehaveKind::kWrongQueue;
  m.at_cb = 2;
  std::unique_ptr<Engine> engine = Engine::open(misbehaving_device(m), short_timeout());
  Engine& e = *engine;
  Stream s = e.create_stream();
  DeviceBuffer buf = e.allocate(kBytes);
  const std::vector<std::uint8_t> src = data_of(kBytes, 5);
  GuardedHost out2(kBytes, kUntouched), out3(kBytes, kUntouched);
  Completions done;
  ASSERT_TRUE(s.copy_h2d(buf, 0, src.data(), kBytes, done.watch(1)).wait(kWaitLimit).ok());
  const Status st2 = s.copy_d2h(out2.data(), buf, 0, kBytes, done.watch(2, out2.data(), kBytes)).wait(kWaitLimit);
  const Status st3 = s.copy_d2h(out3.data(), buf, 0, kBytes, done.watch(3, out3.data(), kBytes)).wait(kWaitLimit);
  EXPECT_TRUE(st2.ok() || st2.code() == ErrorCode::kDeviceFault) << st2.to_string();
  EXPECT_EQ(st3.code(), ErrorCode::kDeviceFault) << st3.to_string();
  const Status& first = st2.ok() ? st3 : st2;
  EXPECT_NE(first.message().find("COMPUTE"), std::string::npos) << first.message();
  EXPECT_NE(first.message().find("no CB outstanding"), std::string::npos) << first.message();
  ASSERT_TRUE(first.device().has_value());
  EXPECT_EQ(first.device()->pipeline, hw::Pipeline::kCompute);
  if (st2.ok()) {
    EXPECT_EQ(std::memcmp(out2.data(), src.data(), kBytes), 0);
  }
  EXPECT_TRUE(std::all_of(out3.data(), out3.data() + kBytes, [](std::uint8_t b) { return b == kUntouched; }));
  ASSERT_TRUE(e.reset().ok());
  GuardedHost back(kBytes, 0);
  EXPECT_TRUE(s.copy_d2h(back.data(), buf, 0, kBytes, done.watch(4)).wait(kWaitLimit).ok());
  EXPECT_EQ(std::memcmp(back.data(), src.data(), kBytes), 0);
  done.settle(1, 4);
  for (std::size_t id = 1; id <= 4; ++id) EXPECT_EQ(done.calls(id), 1) << "op " << id;
  EXPECT_TRUE(done.unchanged_since_completion(2, out2.data()));
  EXPECT_TRUE(done.unchanged_since_completion(3, out3.data()));
  for (auto* g : {&out2, &out3, &back}) EXPECT_TRUE(g->canaries_intact());
}

// Many ops in flight when the device misbehaves: every one completes exactly once (the ones
// before the fault may succeed), none after the fault succeeds, and the engine runs again after
// reset.
TEST(MisbehavingInFlight, EveryOpInFlightCompletesOnce) {
  Misbehave m;
  m.kind = MisbehaveKind::kUnknownTag;
  m.at_cb = 5;
  std::unique_ptr<Engine> engine = Engine::open(misbehaving_device(m), short_timeout());
  Engine& e = *engine;
  Stream s = e.create_stream(StreamOptions{});
  constexpr std::size_t kOps = 16;
  DeviceBuffer buf = e.allocate(kOps * kBytes);
  const std::vector<std::uint8_t> src = data_of(kOps * kBytes, 9);
  std::vector<GuardedHost> outs;
  outs.reserve(kOps);
  for (std::size_t i = 0; i < kOps; ++i) outs.emplace_back(kBytes, kUntouched);
  Completions done;
  ASSERT_TRUE(s.copy_h2d(buf, 0, src.data(), src.size(), done.watch(0)).wait(kWaitLimit).ok());  // CB 1
  std::vector<Op> ops;
  for (std::size_t i = 0; i < kOps; ++i) {
    ops.push_back(s.copy_d2h(outs[i].data(), buf, i * kBytes, kBytes, done.watch(1 + i, outs[i].data(), kBytes)));
  }
  (void)s.synchronize(kWaitLimit);
  done.settle(1, kOps);
  std::size_t failed = 0;
  for (std::size_t i = 0; i < kOps; ++i) {
    const Status st = ops[i].wait(kWaitLimit);
    EXPECT_EQ(done.calls(1 + i), 1) << "op " << i;
    if (st.ok()) {
      EXPECT_EQ(failed, 0u) << "op " << i << " succeeded after an earlier one failed";
      EXPECT_EQ(std::memcmp(outs[i].data(), src.data() + i * kBytes, kBytes), 0);
    } else {
      ++failed;
      EXPECT_EQ(st.code(), ErrorCode::kDeviceFault) << st.to_string();
      EXPECT_TRUE(std::all_of(outs[i].data(), outs[i].data() + kBytes, [](std::uint8_t b) { return b == kUntouched; }))
          << "op " << i;
    }
    EXPECT_TRUE(done.unchanged_since_completion(1 + i, outs[i].data()));
    EXPECT_TRUE(outs[i].canaries_intact());
  }
  EXPECT_GE(failed, kOps - 3);  // CBs 2..4 may succeed; CB 5 and every later one fail
  ASSERT_TRUE(e.reset().ok());
  GuardedHost back(kBytes, 0);
  EXPECT_TRUE(s.copy_d2h(back.data(), buf, 0, kBytes).wait(kWaitLimit).ok());
  EXPECT_EQ(std::memcmp(back.data(), src.data(), kBytes), 0);
  const EngineStats st = e.stats();
  EXPECT_EQ(st.ops_completed, st.ops_submitted);
  EXPECT_EQ(st.tags_in_use, 0u);
}

}  // namespace
}  // namespace spyre_dma::test
