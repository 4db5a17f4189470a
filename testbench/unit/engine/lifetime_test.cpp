// The engine's lifetime against its own callbacks and against several threads: an Engine may be
// destroyed from one of its completion callbacks, host callbacks or observer calls, on whichever
// thread runs it (the poller, a staging thread, a thread that waits or submits). What is queued
// or in flight then completes exactly once (cancelled, or done if it finished first), later
// submissions throw Closed, and the device is let go once the callback has returned.
#include <condition_variable>

#include "engine_fixture.hpp"

namespace spyre_dma::test {
namespace {

// A one-shot flag a test thread can wait on with a bound.
class Flag {
 public:
  void set() {
    // Notified under the lock: the waiter may destroy the flag as soon as it sees it set.
    std::lock_guard lock(mu_);
    set_ = true;
    cv_.notify_all();
  }
  bool wait(std::chrono::nanoseconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return set_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool set_ = false;
};

// The device goes once the engine's last reference (held by the thread that ran the callback)
// goes: polled, with a bound, since that thread finishes on its own after the callback.
::testing::AssertionResult released(const std::weak_ptr<Device>& device) {
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  while (!device.expired()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return ::testing::AssertionFailure() << "the device was still held " << kWait.count() << " s after the engine closed";
    }
    std::this_thread::sleep_for(1ms);
  }
  return ::testing::AssertionSuccess();
}

// The test's own handles go too (a stream or buffer handle also keeps the engine's state); then
// the device must be released.
::testing::AssertionResult released_after_dropping(Stream& s, DeviceBuffer& buf, std::vector<Op>& ops,
                                                   const std::weak_ptr<Device>& device) {
  buf = DeviceBuffer();
  s = Stream();
  ops.clear();
  return released(device);
}

// Every op completes, ok or cancelled. Waited for: what the closing callback cancelled completes
// once that callback has returned (a host callback holds its stream's later ops until then).
void expect_settled(const std::vector<Op>& ops) {
  for (const Op& op : ops) {
    ASSERT_TRUE(eventually([&] { return op.done(); })) << "op " << op.id();
    const ErrorCode c = op.status().code();
    EXPECT_TRUE(c == ErrorCode::kOk || c == ErrorCode::kCancelled) << "op " << op.id() << ": " << to_string(c);
  }
}

// The first op's callback destroys the engine while more work is queued behind it; the waiting
// thread is the test's (or the poller, on a self-timed device), and the engine must neither
// join the thread it runs on nor wait for the callback it is called from.
TEST(Lifetime, EngineDestroyedInItsCompletionCallback) {
  Rig rig = make_rig();
  std::weak_ptr<Device> device = rig.spy;
  Stream s = rig.engine->create_stream();
  DeviceBuffer buf = rig.engine->allocate(1 * MiB);
  CompletionLog log(17);
  Flag destroyed;
  std::vector<Op> ops;
  {
    auto batch = rig.engine->batch();  // nothing reaches the device before all is queued
    ops.push_back(s.fill(buf, 0, 4 * KiB, 0x11223344u, [&](const Status& st) {
      log.callback(0)(st);
      rig.engine.reset();  // from inside the callback
      destroyed.set();
    }));
    for (std::size_t i = 1; i < 17; ++i) {
      // Fills: a staged copy would ring the doorbell as its piece is copied in, batch or not.
      ops.push_back(s.fill(buf, 64 * KiB * (i % 8), 64 * KiB, static_cast<std::uint32_t>(i), log.callback(i)));
    }
  }
  rig.spy.reset();
  // Waiting on the op drives a host-driven device and runs the callback on this thread; on a
  // self-timed one the poller (or this waiter) runs it.
  (void)ops.back().wait(kWait);
  ASSERT_TRUE(destroyed.wait(kWait));
  expect_settled(ops);
  // The cancelled ops' callbacks run after the one that closed the engine has returned.
  ASSERT_TRUE(eventually([&] { return log.order().size() == 17; }));
  EXPECT_TRUE(log.exactly_once());
  EXPECT_THROW(s.fill(buf, 0, 128, 0), Closed);
  EXPECT_TRUE(released_after_dropping(s, buf, ops, device));
}

// The same from a host callback, which runs on a thread inside the engine in stream order.
TEST(Lifetime, EngineDestroyedInAHostCallback) {
  Rig rig = make_rig();
  std::weak_ptr<Device> device = rig.spy;
  Stream s = rig.engine->create_stream();
  DeviceBuffer buf = rig.engine->allocate(256 * KiB);
  CompletionLog log(3);
  Flag destroyed;
  std::vector<Op> ops;
  {
    auto batch = rig.engine->batch();
    ops.push_back(s.fill(buf, 0, 64 * KiB, 1, log.callback(0)));
    ops.push_back(s.host_callback([&] {
      rig.engine.reset();
      destroyed.set();
    }, log.callback(1)));
    ops.push_back(s.fill(buf, 64 * KiB, 64 * KiB, 2, log.callback(2)));
  }
  rig.spy.reset();
  (void)ops.back().wait(kWait);
  ASSERT_TRUE(destroyed.wait(kWait));
  expect_settled(ops);
  ASSERT_TRUE(eventually([&] { return log.order().size() == 3; }));
  EXPECT_TRUE(log.exactly_once());
  EXPECT_EQ(ops[0].status().code(), ErrorCode::kOk);  // it finished before the callback ran
  EXPECT_TRUE(released_after_dropping(s, buf, ops, device));
}

// The same from the observer, whose on_complete runs where completion callbacks run.
TEST(Lifetime, EngineDestroyedInTheObserver) {
  struct Closer : OpObserver {
    std::unique_ptr<Engine>* engine = nullptr;
    Flag destroyed;
    std::atomic<int> calls{0};
    void on_submit(const OpInfo&) override {}
    void on_complete(std::uint64_t, const Status&, std::uint64_t, std::uint64_t) override {
      if (calls++ == 0) {
        engine->reset();
        destroyed.set();
      }
    }
  };
  auto closer = std::make_shared<Closer>();
  EngineOptions o;
  o.observer = closer;
  Rig rig = make_rig(o);
  closer->engine = &rig.engine;
  std::weak_ptr<Device> device = rig.spy;
  Stream s = rig.engine->create_stream();
  DeviceBuffer buf = rig.engine->allocate(256 * KiB);
  std::vector<Op> ops;
  {
    auto batch = rig.engine->batch();
    for (std::uint32_t i = 0; i < 8; ++i) ops.push_back(s.fill(buf, i * 32 * KiB, 32 * KiB, i));
  }
  rig.spy.reset();
  (void)ops.back().wait(kWait);
  ASSERT_TRUE(closer->destroyed.wait(kWait));
  expect_settled(ops);
  // The cancelled ones are still reported, once each, after the call that closed the engine.
  EXPECT_TRUE(eventually([&] { return closer->calls.load() >= 8; }));
  EXPECT_EQ(closer->calls.load(), 8);
  EXPECT_TRUE(released_after_dropping(s, buf, ops, device));
}

// Handles dropped from several threads at once while their ops run, then the engine destroyed
// while other threads still wait on their streams: every op completes once, every wait returns.
TEST(Lifetime, HandlesDroppedAndWaitedOnFromSeveralThreads) {
  constexpr std::size_t kThreads = 4;
  CompletionLog log(kThreads * 16);
  std::vector<std::thread> threads;
  std::vector<std::uint8_t> host = pattern(32 * KiB, 9);
  std::atomic<std::size_t> waits_returned{0};
  {
    Rig rig = make_rig();
    std::vector<Stream> streams;
    for (std::size_t t = 0; t < kThreads; ++t) streams.push_back(rig.engine->create_stream());
    for (std::size_t t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        Stream s = streams[t];
        DeviceBuffer buf = rig.engine->allocate(512 * KiB);
        for (std::size_t i = 0; i < 16; ++i) {
          // The op handle, the buffer's last handle and the stream's go while the op runs.
          (void)s.copy_h2d(buf, (i % 16) * 32 * KiB, host.data(), host.size(), log.callback(t * 16 + i));
        }
        buf = DeviceBuffer();
        (void)s.synchronize(kWait);
        ++waits_returned;
      });
    }
    for (auto& th : threads) th.join();
  }
  EXPECT_EQ(waits_returned.load(), kThreads);
  EXPECT_TRUE(log.exactly_once());
}

// Forwards to the suite's device, but its interrupt waits of 5 ms and more (what the engine's
// poller sleeps when nothing is in flight) last 10 s unless an interrupt or wake_waiter() ends
// them: an engine that closed without waking its poller would take those 10 s.
class DrowsyWaits final : public ForwardingDevice {
 public:
  using ForwardingDevice::ForwardingDevice;
  std::uint32_t wait_for_interrupt(std::chrono::nanoseconds timeout) override {
    return inner().wait_for_interrupt(timeout >= 5ms ? std::chrono::nanoseconds(10s) : timeout);
  }
};

// Closing an idle engine does not wait for its poller's sleep to run out: the engine wakes it
// through the device. (A host-driven device has no poller; the test then only closes an engine.)
TEST(Lifetime, CloseWakesThePollerFromItsInterruptWait) {
  auto engine = Engine::open(std::make_shared<DrowsyWaits>(make_device({})), EngineOptions{});
  {
    Stream s = engine->create_stream();
    DeviceBuffer buf = engine->allocate(64 * KiB);
    ASSERT_TRUE(s.fill(buf, 0, 64 * KiB, 0x5a5a5a5au).wait(kWait).ok());
  }
  std::this_thread::sleep_for(50ms);  // the poller goes idle, asleep in the device
  const auto t0 = std::chrono::steady_clock::now();
  engine.reset();
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  EXPECT_LT(took.count(), 5000) << "closing took " << took.count() << " ms";
}

// Threads that keep submitting while the engine closes are refused from the moment the close
// begins: the close waits only for what was queued before it, and every thread sees Closed.
TEST(Lifetime, CloseRefusesNewWorkFromThreadsThatKeepSubmitting) {
  auto engine = Engine::open(make_device({}), EngineOptions{});
  DeviceBuffer buf = engine->allocate(64 * KiB);
  std::atomic<int> refused{0};
  std::atomic<bool> started{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    Stream s = engine->create_stream();
    threads.emplace_back([s, buf, &refused, &started]() mutable {
      try {
        for (;;) {
          s.fill(buf, 0, 4 * KiB, 0x01020304u);
          started.store(true);
        }
      } catch (const Closed& e) {
        EXPECT_NE(std::string(e.what()).find("engine clos"), std::string::npos) << e.what();
        refused.fetch_add(1);
      }
    });
  }
  ASSERT_TRUE(eventually([&] { return started.load(); }));
  std::this_thread::sleep_for(50ms);
  const auto t0 = std::chrono::steady_clock::now();
  engine.reset();
  const auto took = std::chrono::steady_clock::now() - t0;
  for (auto& t : threads) t.join();
  EXPECT_EQ(refused.load(), 3);
  EXPECT_LT(took, kWait) << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms";
}

}  // namespace
}  // namespace spyre_dma::test
