// Concurrency: many submitting threads on own and shared streams with mixed ops, checked against a
// host-side model of each thread's device memory; exactly one completion per op; shutdown with
// work in flight, also while other threads are still submitting.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "engine_fixture.hpp"

namespace spyre_dma::test {
namespace {

constexpr std::size_t kThreads = 16;
constexpr std::size_t kStreams = 12;  // threads t and t + 12 share stream t (t < 4)
constexpr std::size_t kOpsPerThread = 240;
constexpr std::size_t kSlots = 8;
constexpr std::size_t kSlotBytes = 16 * KiB;

// One submitting thread: its own device buffer of kSlots slots, a model of that buffer's contents,
// and the results its D2Hs must produce.
struct Worker {
  std::size_t index = 0;
  DeviceBuffer buf;
  HostBuffer arena;  // registered host memory, carved up so no two ops share bytes
  std::size_t arena_used = 0;
  std::vector<std::uint8_t> model;
  struct Read {
    std::uint8_t* dst;
    std::vector<std::uint8_t> expected;
    std::unique_ptr<std::vector<std::uint8_t>> pageable;  // when the read went to pageable memory
  };
  std::vector<Read> reads;
  std::vector<std::unique_ptr<std::vector<std::uint8_t>>> sources;  // pageable H2D sources
  std::vector<Op> ops;
  std::atomic<int> callbacks{0};

  std::uint8_t* carve(std::size_t n, std::size_t align_offset) {
    arena_used = (arena_used + 127) / 128 * 128 + align_offset;
    std::uint8_t* p = static_cast<std::uint8_t*>(arena.data()) + arena_used;
    arena_used += n;
    if (arena_used > arena.size()) throw std::runtime_error("arena exhausted");
    return p;
  }
};

void run_worker(Worker& w, Stream s, CompletionLog& log) {
  std::mt19937_64 rng(1000 + w.index);
  const std::size_t sizes[] = {1, 100, 128, 129, 1000, 4096, 5000, kSlotBytes};
  auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
  for (std::size_t i = 0; i < kOpsPerThread; ++i) {
    const std::size_t id = w.index * kOpsPerThread + i;
    const std::size_t slot = pick(kSlots);
    const std::size_t bytes = sizes[pick(std::size(sizes))];
    const std::size_t off = slot * kSlotBytes + (bytes <= kSlotBytes - 256 ? 128 * pick(2) : 0);
    const bool registered = pick(2) == 0;
    switch (pick(6)) {
      case 0: {  // H2D
        std::uint8_t* src;
        if (registered) {
          src = w.carve(bytes, pick(3) == 0 ? 1 : 0);  // sometimes unaligned: staged
        } else {
          w.sources.push_back(std::make_unique<std::vector<std::uint8_t>>(bytes));
          src = w.sources.back()->data();
        }
        fill_pattern(src, bytes, id);
        std::memcpy(w.model.data() + off, src, bytes);
        w.ops.push_back(s.copy_h2d(w.buf, off, src, bytes, log.callback(id)));
        break;
      }
      case 1: {  // D2H
        Worker::Read r;
        if (registered) {
          r.dst = w.carve(bytes, 0);
        } else {
          r.pageable = std::make_unique<std::vector<std::uint8_t>>(bytes, 0);
          r.dst = r.pageable->data();
        }
        r.expected.assign(w.model.begin() + off, w.model.begin() + off + bytes);
        w.ops.push_back(s.copy_d2h(r.dst, w.buf, off, bytes, log.callback(id)));
        w.reads.push_back(std::move(r));
        break;
      }
      case 2: {  // fill
        const auto pat = static_cast<std::uint32_t>(rng());
        fill32_reference(w.model.data() + off, bytes, pat);
        w.ops.push_back(s.fill(w.buf, off, bytes, pat, log.callback(id)));
        break;
      }
      case 3: {  // D2D between two different slots
        const std::size_t other = (slot + 1 + pick(kSlots - 1)) % kSlots;
        const std::size_t dst_off = other * kSlotBytes;
        std::memmove(w.model.data() + dst_off, w.model.data() + off, bytes);
        w.ops.push_back(s.copy_d2d(w.buf, dst_off, w.buf, off, bytes, log.callback(id)));
        break;
      }
      case 4:
        w.ops.push_back(s.host_callback([&w] { ++w.callbacks; }, log.callback(id)));
        break;
      default:
        w.ops.push_back(s.compute(std::chrono::nanoseconds(pick(1000)), log.callback(id)));
        break;
    }
  }
}

TEST(Concurrency, SixteenThreadsMixedOpsExactlyOnce) {
  Rig rig = make_rig();
  Engine& e = *rig.engine;
  std::vector<Stream> streams;
  for (std::size_t i = 0; i < kStreams; ++i) {
    StreamOptions so;
    so.ordering = i % 3 == 2 ? Ordering::kOpOrdered : Ordering::kStrict;
    so.priority = static_cast<int>(i % 2);
    streams.push_back(e.create_stream(so));
  }
  std::vector<std::unique_ptr<Worker>> workers;
  for (std::size_t t = 0; t < kThreads; ++t) {
    auto w = std::make_unique<Worker>();
    w->index = t;
    w->buf = e.allocate(kSlots * kSlotBytes, AllocOptions{t % 2 ? 5 * KiB + 128 : 0});
    w->arena = e.allocate_host(kOpsPerThread * (kSlotBytes + 256));
    w->model.assign(kSlots * kSlotBytes, 0);
    SPYRE_ASSERT_OK(streams[t % kStreams].fill(w->buf, 0, kSlots * kSlotBytes, 0).wait(kWait));
    workers.push_back(std::move(w));
  }
  const EngineStats start = e.stats();
  CompletionLog log(kThreads * kOpsPerThread);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] { run_worker(*workers[t], streams[t % kStreams], log); });
  }
  for (auto& th : threads) th.join();
  SPYRE_ASSERT_OK(e.synchronize(kWait));
  for (Stream& s : streams) SPYRE_EXPECT_OK(s.synchronize(kWait));
  ASSERT_TRUE(eventually([&] { return log.order().size() == kThreads * kOpsPerThread; }));
  EXPECT_TRUE(log.exactly_once());

  std::size_t callbacks = 0;
  for (const auto& w : workers) {
    SCOPED_TRACE(w->index);
    for (const Op& op : w->ops) {
      ASSERT_TRUE(op.done());
      SPYRE_ASSERT_OK(op.status());
    }
    for (std::size_t r = 0; r < w->reads.size(); ++r) {
      const auto& rd = w->reads[r];
      ASSERT_TRUE(bytes_equal(rd.expected.data(), rd.dst, rd.expected.size())) << "read " << r;
    }
    std::vector<std::uint8_t> final_image(w->model.size());
    SPYRE_ASSERT_OK(streams[0].copy_d2h(final_image.data(), w->buf, 0, final_image.size()).wait(kWait));
    EXPECT_TRUE(bytes_equal(w->model.data(), final_image.data(), final_image.size())) << "final image";
    callbacks += static_cast<std::size_t>(w->callbacks.load());
  }
  const EngineStats st = e.stats();
  EXPECT_EQ(st.ops_completed, st.ops_submitted);
  EXPECT_EQ(st.ops_submitted - start.ops_submitted, kThreads * kOpsPerThread + kThreads);  // + final reads
  EXPECT_EQ(st.ops_failed, 0u);
  EXPECT_EQ(st.tags_in_use, 0u);
  EXPECT_EQ(st.device_faults, 0u);
  EXPECT_GT(callbacks, 0u);
  EXPECT_EQ(rig.spy->overruns(), 0u);
}

// Destroying the engine with work in flight (running device): every op completes exactly once,
// ok or cancelled, and its handle stays usable.
TEST(Concurrency, DestroyWithWorkInFlight) {
  constexpr std::size_t kStreamsHere = 4, kOps = 200;
  std::vector<Op> ops;
  CompletionLog log(kStreamsHere * kOps);
  std::vector<std::vector<std::uint8_t>> hosts(kStreamsHere, std::vector<std::uint8_t>(1 * MiB, 3));
  {
    Rig rig = make_rig();
    Engine& e = *rig.engine;
    DeviceBuffer buf = e.allocate(kStreamsHere * MiB);
    std::vector<Stream> streams;
    for (std::size_t i = 0; i < kStreamsHere; ++i) streams.push_back(e.create_stream());
    for (std::size_t k = 0; k < kOps; ++k) {
      for (std::size_t i = 0; i < kStreamsHere; ++i) {
        const std::size_t id = i * kOps + k;
        Stream& s = streams[i];
        auto* h = hosts[i].data();
        switch (k % 4) {
          case 0: ops.push_back(s.copy_h2d(buf, i * MiB, h, 256 * KiB + 1, log.callback(id))); break;
          case 1: ops.push_back(s.copy_d2h(h, buf, i * MiB, 256 * KiB, log.callback(id))); break;
          case 2: ops.push_back(s.fill(buf, i * MiB, MiB, 5, log.callback(id))); break;
          default: ops.push_back(s.host_callback([] {}, log.callback(id))); break;
        }
      }
    }
    rig.engine.reset();  // destroys the engine now, with most of that still queued
  }
  EXPECT_TRUE(log.exactly_once());
  EXPECT_EQ(log.order().size(), ops.size());
  for (const Op& op : ops) {
    ASSERT_TRUE(op.done());
    const ErrorCode c = op.status().code();
    EXPECT_TRUE(c == ErrorCode::kOk || c == ErrorCode::kCancelled) << to_string(c);
    EXPECT_EQ(op.wait(1ms).code(), c);
  }
}

// The same with the device stopped: the destructor's wait is bounded by cb_timeout; what the
// device never answered fails with kDeviceTimeout, what never started with it or kCancelled.
TEST(Concurrency, DestroyWithDeviceStopped) {
  std::vector<Op> ops;
  CompletionLog log(64);
  std::vector<std::uint8_t> h(64 * KiB, 1);
  {
    EngineOptions o;
    o.cb_timeout = 200ms;
    o.ring_slots = {4, 4, 4};
    Rig rig = make_rig(o);
    Engine& e = *rig.engine;
    Stream s = e.create_stream(), t = e.create_stream();
    DeviceBuffer buf = e.allocate(64 * KiB);
    rig.dev().pause();
    for (std::size_t i = 0; i < 32; ++i) {
      ops.push_back(s.copy_h2d(buf, 0, h.data(), h.size(), log.callback(2 * i)));
      ops.push_back(t.copy_d2h(h.data() + 128, buf, 0, 1024, log.callback(2 * i + 1)));
    }
    rig.engine.reset();
  }
  EXPECT_TRUE(log.exactly_once());
  for (const Op& op : ops) {
    ASSERT_TRUE(op.done());
    const ErrorCode c = op.status().code();
    EXPECT_TRUE(c == ErrorCode::kDeviceTimeout || c == ErrorCode::kCancelled) << to_string(c);
  }
}

// Threads keep submitting while the engine is destroyed: every op that was accepted completes
// exactly once, later submissions throw Closed, nothing crashes.
TEST(Concurrency, DestroyWhileThreadsSubmit) {
  constexpr std::size_t kSubmitters = 4;
  std::atomic<bool> go{false};
  std::vector<std::vector<Op>> accepted(kSubmitters);
  std::vector<std::size_t> closed(kSubmitters, 0);
  std::atomic<std::size_t> completions{0};
  std::vector<std::thread> threads;
  std::vector<std::vector<std::uint8_t>> hosts(kSubmitters, pattern(2 * MiB, 7));
  {
    Rig rig = make_rig();
    Engine& e = *rig.engine;
    DeviceBuffer buf = e.allocate(kSubmitters * 2 * MiB);
    std::vector<Stream> streams;
    for (std::size_t i = 0; i < kSubmitters; ++i) streams.push_back(e.create_stream());
    for (std::size_t i = 0; i < kSubmitters; ++i) {
      threads.emplace_back([&, i] {
        while (!go.load()) std::this_thread::yield();
        for (std::size_t k = 0; closed[i] < 3 && k < 100000; ++k) {
          try {
            Callback cb = [&](const Status&) { ++completions; };
            auto* h = hosts[i].data();
            accepted[i].push_back(k % 2 ? streams[i].copy_h2d(buf, i * 2 * MiB, h, 2 * MiB - 5, cb)
                                        : streams[i].copy_d2h(h, buf, i * 2 * MiB, 2 * MiB - 5, cb));
            // Keep a few ops in flight, not an ever-growing backlog for the destructor to drain.
            if (accepted[i].size() > 8) (void)accepted[i][accepted[i].size() - 9].wait(kWait);
          } catch (const Closed&) {
            ++closed[i];
          }
        }
      });
    }
    go = true;
    std::this_thread::sleep_for(20ms);
    rig.engine.reset();
    for (auto& th : threads) th.join();
  }
  std::size_t total = 0;
  for (std::size_t i = 0; i < kSubmitters; ++i) {
    EXPECT_EQ(closed[i], 3u);
    total += accepted[i].size();
    for (const Op& op : accepted[i]) {
      ASSERT_TRUE(op.done());
      const ErrorCode c = op.status().code();
      EXPECT_TRUE(c == ErrorCode::kOk || c == ErrorCode::kCancelled) << to_string(c);
    }
  }
  EXPECT_GT(total, 0u);
  EXPECT_EQ(completions.load(), total);
}

}  // namespace
}  // namespace spyre_dma::test
