// Injected faults seen through the engine on the SystemC model: the CB a fault hits fails with
// the right error, every other operation completes with the right bytes, the statistics count
// what was injected, the same seed gives the same faults and timestamps, and after
// Engine::reset() new work succeeds.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "spyre_dma/model/sim_device.hpp"
#include "spyre_dma/spyre_dma.hpp"

namespace spyre_dma::model {
namespace {

using namespace std::chrono_literals;

constexpr std::size_t kOps = 3;         // H2D ops, then as many D2H ops of the same buffers
constexpr std::size_t kBytes = 64 << 10;  // one CB each
constexpr std::uint8_t kUntouched = 0xEE;

std::uint8_t pattern(std::size_t op, std::size_t i) { return static_cast<std::uint8_t>(i * 31 + op * 7 + 1); }

struct Outcome {
  std::vector<Status> h2d, d2h;
  std::vector<std::vector<std::uint8_t>> out;  // what each D2H brought back
  std::vector<std::uint64_t> stamps;           // device start and end of every op
  nlohmann::json stats;
  std::uint32_t status_reg = 0;
  std::uint32_t fatal_cause = 0;
  bool after_reset_ok = false;
};

// CBs in execution order: 1..kOps the H2Ds (DMAI), kOps + 1 .. 2 kOps the D2Hs (DMAO, the first
// behind a barrier).
Outcome run(const SimConfig& config, std::size_t ops = kOps, std::size_t bytes = kBytes) {
  auto dev = std::make_shared<SimDevice>(config);
  EngineOptions options;
  options.cb_timeout = 2s;  // bounds a CB the device never answers
  auto engine = Engine::open(dev, options);
  auto stream = engine->create_stream();
  std::vector<DeviceBuffer> buf;
  std::vector<HostBuffer> in, out;
  for (std::size_t k = 0; k < ops; ++k) {
    buf.push_back(engine->allocate(bytes));
    in.push_back(engine->allocate_host(bytes));
    out.push_back(engine->allocate_host(bytes));
    auto* p = static_cast<std::uint8_t*>(in.back().data());
    for (std::size_t i = 0; i < bytes; ++i) p[i] = pattern(k, i);
    std::memset(out.back().data(), kUntouched, bytes);
  }
  std::vector<Op> h2d, d2h;
  for (std::size_t k = 0; k < ops; ++k) h2d.push_back(stream.copy_h2d(buf[k], 0, in[k].data(), bytes));
  for (std::size_t k = 0; k < ops; ++k) d2h.push_back(stream.copy_d2h(out[k].data(), buf[k], 0, bytes));
  (void)stream.synchronize(60s);
  Outcome r;
  for (std::size_t k = 0; k < ops; ++k) {
    r.h2d.push_back(h2d[k].status());
    r.d2h.push_back(d2h[k].status());
    auto* p = static_cast<std::uint8_t*>(out[k].data());
    r.out.emplace_back(p, p + bytes);
  }
  for (const std::vector<Op>* v : {&h2d, &d2h}) {
    for (const Op& op : *v) r.stamps.push_back(op.device_start_ns()), r.stamps.push_back(op.device_end_ns());
  }
  r.stats = dev->statistics();
  r.status_reg = dev->read32(hw::reg::kStatus);
  r.fatal_cause = dev->read32(hw::reg::kFatalCause);
  // Recovery: a reset, then a clean round trip.
  EXPECT_TRUE(engine->reset(10s).ok());
  std::memset(out[0].data(), 0, bytes);
  stream.copy_h2d(buf[0], 0, in[0].data(), bytes);
  stream.copy_d2h(out[0].data(), buf[0], 0, bytes);
  const Status s = stream.synchronize(60s);
  r.after_reset_ok = s.ok() && std::memcmp(in[0].data(), out[0].data(), bytes) == 0;
  return r;
}

bool data_ok(const Outcome& r, std::size_t op) {
  for (std::size_t i = 0; i < r.out[op].size(); ++i) {
    if (r.out[op][i] != pattern(op, i)) return false;
  }
  return true;
}

SimConfig at_cb(std::uint64_t n, const char* kind) {
  SimConfig c;
  c.faults.at_cb = n;
  c.faults.at_cb_fault = kind;
  return c;
}

std::uint64_t injected(const Outcome& r, const char* kind) { return r.stats["faults"]["injected"][kind].get<std::uint64_t>(); }

// Exactly `kind` was injected, `count` times, and nothing else.
void expect_only(const Outcome& r, const char* kind, std::uint64_t count) {
  for (const auto& [k, v] : r.stats["faults"]["injected"].items()) {
    EXPECT_EQ(v.get<std::uint64_t>(), k == kind ? count : 0u) << k;
  }
  EXPECT_EQ(r.stats["link"]["protocol"]["violations"], 0) << r.stats["link"]["protocol"]["last_violation"];
}

void expect_device_error(const Status& s, ErrorCode code, hw::ErrorKind kind, hw::CbField field) {
  EXPECT_EQ(s.code(), code) << s.to_string();
  ASSERT_TRUE(s.device().has_value()) << s.to_string();
  EXPECT_EQ(s.device()->status, hw::RbStatus::kError);
  EXPECT_EQ(s.device()->kind, kind) << s.to_string();
  EXPECT_EQ(s.device()->field, field) << s.to_string();
  EXPECT_NE(s.device()->detail, 0u);
}

// One H2D fails (CB `failing`, 1-based, an H2D); everything else completes; the D2H of the
// failed buffer moves whatever the device holds, the others bring back the right bytes.
void expect_one_h2d_failed(const Outcome& r, std::size_t failing, hw::ErrorKind kind) {
  for (std::size_t k = 0; k < kOps; ++k) {
    if (k + 1 == failing) {
      expect_device_error(r.h2d[k], ErrorCode::kDeviceError, kind, hw::CbField::kDmiHostIova);
    } else {
      EXPECT_TRUE(r.h2d[k].ok()) << k << ": " << r.h2d[k].to_string();
      EXPECT_TRUE(data_ok(r, k)) << k;
    }
    EXPECT_TRUE(r.d2h[k].ok()) << k << ": " << r.d2h[k].to_string();
  }
  EXPECT_EQ(r.stats["faults"]["affected_cbs"], 1);
  EXPECT_TRUE(r.after_reset_ok);
}

TEST(FaultInjection, NoFaultsByDefault) {
  const Outcome r = run(SimConfig{});
  for (std::size_t k = 0; k < kOps; ++k) {
    EXPECT_TRUE(r.h2d[k].ok() && r.d2h[k].ok());
    EXPECT_TRUE(data_ok(r, k));
  }
  expect_only(r, "none", 0);
  EXPECT_EQ(r.stats["faults"]["affected_cbs"], 0);
  EXPECT_EQ(r.stats["faults"]["injected"].size(), 8u);
  EXPECT_EQ(r.status_reg, hw::kStatusReady);
}

TEST(FaultInjection, PoisonedReadCompletion) {
  const Outcome r = run(at_cb(2, "poisoned"));
  expect_one_h2d_failed(r, 2, hw::ErrorKind::kPcieError);
  expect_only(r, "poisoned", 1);
}

// The second D2H's first MWr is poisoned: that CB fails, host memory keeps its bytes for that TLP
// and takes the rest, and everything else completes. At burst fidelity the D2H's bytes otherwise
// move straight from device memory to host memory; a CB with poisoned MWrs carries them in a
// buffer for the root complex to write all but those.
void expect_poisoned_write_leaves_its_tlp_untouched(Fidelity fidelity) {
  SimConfig c = at_cb(kOps + 2, "poisoned");
  c.fidelity = fidelity;
  const Outcome r = run(c);
  for (std::size_t k = 0; k < kOps; ++k) {
    EXPECT_TRUE(r.h2d[k].ok()) << r.h2d[k].to_string();
    if (k == 1) continue;
    EXPECT_TRUE(r.d2h[k].ok()) << r.d2h[k].to_string();
    EXPECT_TRUE(data_ok(r, k)) << k;
  }
  expect_device_error(r.d2h[1], ErrorCode::kDeviceError, hw::ErrorKind::kPcieError, hw::CbField::kDmoHostIova);
  const std::uint32_t mps = c.link.mps;
  for (std::size_t i = 0; i < kBytes; ++i) {  // the first MWr was dropped, the rest landed
    ASSERT_EQ(r.out[1][i], i < mps ? kUntouched : pattern(1, i)) << i;
  }
  expect_only(r, "poisoned", 1);
  EXPECT_TRUE(r.after_reset_ok);
}

TEST(FaultInjection, PoisonedWriteLeavesHostMemoryUntouchedForItsTlp) {
  expect_poisoned_write_leaves_its_tlp_untouched(Fidelity::kTlp);
}

TEST(FaultInjection, BurstPoisonedWriteLeavesHostMemoryUntouchedForItsTlp) {
  expect_poisoned_write_leaves_its_tlp_untouched(Fidelity::kBurst);
}

TEST(FaultInjection, UnsupportedRequestCompletion) {
  const Outcome r = run(at_cb(1, "unsupported_request"));
  expect_one_h2d_failed(r, 1, hw::ErrorKind::kPcieError);
  expect_only(r, "unsupported_request", 1);
}

TEST(FaultInjection, CompleterAbortCompletion) {
  const Outcome r = run(at_cb(3, "completer_abort"));
  expect_one_h2d_failed(r, 3, hw::ErrorKind::kPcieError);
  expect_only(r, "completer_abort", 1);
}

TEST(FaultInjection, DroppedCompletionTimesOutAndHoldsTheTag) {
  SimConfig c = at_cb(2, "dropped_completion");
  c.faults.completion_timeout_ns = 20000;
  const Outcome r = run(c);
  expect_one_h2d_failed(r, 2, hw::ErrorKind::kCompletionTimeout);
  expect_only(r, "dropped_completion", 1);
  // The CB ends when the timer expires, not when the other requests' data is in.
  EXPECT_GE(r.stamps[3] - r.stamps[2], 20000u);
  const Outcome clean = run(SimConfig{});
  EXPECT_LT(clean.stamps[3] - clean.stamps[2], 5000u);
}

TEST(FaultInjection, ForcedLcrcErrorCostsTimeNotData) {
  // 4 KiB ops: one MRd each, so the replay of the first TLP shows in the CB's time.
  const std::size_t bytes = 4096;
  const Outcome r = run(at_cb(2, "lcrc"), kOps, bytes);
  const Outcome clean = run(SimConfig{}, kOps, bytes);
  for (std::size_t k = 0; k < kOps; ++k) {
    EXPECT_TRUE(r.h2d[k].ok() && r.d2h[k].ok());
    EXPECT_TRUE(data_ok(r, k));
  }
  expect_only(r, "lcrc", 1);
  EXPECT_EQ(r.stats["link"]["replays"], 1);
  EXPECT_EQ(r.stats["faults"]["affected_cbs"], 1);
  EXPECT_GT(r.stamps[3] - r.stamps[2], clean.stamps[3] - clean.stamps[2] + 400) << "most of a replay timer more";
}

TEST(FaultInjection, IommuRefusal) {
  const Outcome r = run(at_cb(kOps + 1, "iommu"));  // the first D2H
  for (std::size_t k = 0; k < kOps; ++k) EXPECT_TRUE(r.h2d[k].ok());
  expect_device_error(r.d2h[0], ErrorCode::kIommuFault, hw::ErrorKind::kIommuFault, hw::CbField::kDmoHostIova);
  for (std::size_t i = 0; i < kBytes; ++i) ASSERT_EQ(r.out[0][i], kUntouched) << "nothing moved";
  for (std::size_t k = 1; k < kOps; ++k) EXPECT_TRUE(r.d2h[k].ok() && data_ok(r, k));
  expect_only(r, "iommu", 1);
  EXPECT_TRUE(r.after_reset_ok);
}

TEST(FaultInjection, MalformedCbStillNamesItsTag) {
  const Outcome r = run(at_cb(2, "malformed_cb"));
  expect_device_error(r.h2d[1], ErrorCode::kDeviceError, hw::ErrorKind::kMalformedCb, hw::CbField::kReservedWord);
  for (std::size_t k = 0; k < kOps; ++k) {
    if (k != 1) {
      EXPECT_TRUE(r.h2d[k].ok() && data_ok(r, k));
    }
    EXPECT_TRUE(r.d2h[k].ok());
  }
  expect_only(r, "malformed_cb", 1);
  EXPECT_TRUE(r.after_reset_ok);
}

TEST(FaultInjection, TlpKindsSkipCbsTheyDoNotApplyTo) {
  // CB 1 is a D2H here (the H2Ds come first only in `run`): the read-only kind moves on to the
  // next H2D, which is the second op of this workload.
  auto dev = std::make_shared<SimDevice>(at_cb(1, "completer_abort"));
  auto engine = Engine::open(dev);
  auto stream = engine->create_stream();
  auto buf = engine->allocate(kBytes);
  auto host = engine->allocate_host(kBytes);
  Op d2h = stream.copy_d2h(host.data(), buf, 0, kBytes);
  Op h2d = stream.copy_h2d(buf, 0, host.data(), kBytes);
  (void)stream.synchronize(60s);
  EXPECT_TRUE(d2h.status().ok()) << d2h.status().to_string();
  expect_device_error(h2d.status(), ErrorCode::kDeviceError, hw::ErrorKind::kPcieError, hw::CbField::kDmiHostIova);
  EXPECT_EQ(dev->statistics()["faults"]["injected"]["completer_abort"], 1);
}

TEST(FaultInjection, DeviceResetAbendsEveryFetchedCbThenReadsFatal) {
  const Outcome r = run(at_cb(2, "device_reset"));
  EXPECT_TRUE(r.h2d[0].ok()) << "retired before the reset";
  std::vector<const Status*> aborted{&r.h2d[1], &r.h2d[2]};
  for (const Status& s : r.d2h) aborted.push_back(&s);
  for (const Status* s : aborted) {
    EXPECT_FALSE(s->ok());
    // The engine's code for an Abend RB is its own business; what the device said is in the RB.
    EXPECT_TRUE(s->code() == ErrorCode::kDeviceError || s->code() == ErrorCode::kCancelled) << s->to_string();
    ASSERT_TRUE(s->device().has_value()) << s->to_string();
    EXPECT_EQ(s->device()->status, hw::RbStatus::kAbend) << s->to_string();
    EXPECT_EQ(s->device()->kind, hw::ErrorKind::kReset) << s->to_string();
  }
  EXPECT_EQ(r.status_reg, hw::kStatusFatal);
  EXPECT_EQ(r.fatal_cause, static_cast<std::uint32_t>(hw::ErrorKind::kReset));
  expect_only(r, "device_reset", 1);
  EXPECT_EQ(r.stats["faults"]["affected_cbs"], 2 * kOps - 1);
  EXPECT_TRUE(r.after_reset_ok) << "CONTROL.RESET clears the fatal state";
}

TEST(FaultInjection, SameSeedSameFaultsAndTimestamps) {
  SimConfig c;
  c.faults.poisoned_rate = 0.002;
  c.faults.unsupported_request_rate = 0.01;
  c.faults.dropped_completion_rate = 0.01;
  c.faults.completion_timeout_ns = 5000;
  c.faults.iommu_fault_rate = 0.1;
  c.faults.malformed_cb_rate = 0.05;
  c.link.lcrc_error_rate = 0.001;
  const Outcome a = run(c, 8);
  const Outcome b = run(c, 8);
  EXPECT_EQ(a.stamps, b.stamps);
  EXPECT_EQ(a.stats["faults"], b.stats["faults"]);
  for (std::size_t k = 0; k < 8; ++k) {
    EXPECT_EQ(a.h2d[k].to_string(), b.h2d[k].to_string());
    EXPECT_EQ(a.d2h[k].to_string(), b.d2h[k].to_string());
    EXPECT_EQ(a.out[k], b.out[k]);
  }
  std::uint64_t total = 0;
  for (const auto& [k, v] : a.stats["faults"]["injected"].items()) total += v.get<std::uint64_t>();
  EXPECT_GT(total, 0u);
  c.seed = 2;
  const Outcome other = run(c, 8);
  EXPECT_NE(other.stats["faults"], a.stats["faults"]) << "another seed, other faults";
}

TEST(FaultInjection, RandomIommuRefusalsMatchTheCount) {
  SimConfig c;
  c.faults.iommu_fault_rate = 0.3;
  const std::size_t ops = 10;
  const Outcome r = run(c, ops);
  std::uint64_t failed = 0;
  for (std::size_t k = 0; k < ops; ++k) {
    for (const Status* s : {&r.h2d[k], &r.d2h[k]}) {
      if (s->ok()) continue;
      ++failed;
      ASSERT_TRUE(s->device().has_value());
      EXPECT_EQ(s->device()->kind, hw::ErrorKind::kIommuFault);
    }
    if (r.h2d[k].ok() && r.d2h[k].ok()) {
      EXPECT_TRUE(data_ok(r, k)) << k;
    }
  }
  EXPECT_GT(failed, 0u);
  EXPECT_EQ(injected(r, "iommu"), failed);
  EXPECT_EQ(r.stats["faults"]["affected_cbs"], failed);
  EXPECT_TRUE(r.after_reset_ok);
}

TEST(FaultInjection, RandomPoisonedTlpsFailTheirCbs) {
  SimConfig c;
  c.faults.poisoned_rate = 0.004;  // about one in two 64 KiB CBs (128 CplD or MWr each)
  const std::size_t ops = 8;
  const Outcome r = run(c, ops);
  std::uint64_t failed = 0;
  for (std::size_t k = 0; k < ops; ++k) {
    for (const Status* s : {&r.h2d[k], &r.d2h[k]}) {
      if (s->ok()) continue;
      ++failed;
      ASSERT_TRUE(s->device().has_value());
      EXPECT_EQ(s->device()->kind, hw::ErrorKind::kPcieError);
    }
  }
  EXPECT_GT(failed, 0u);
  EXPECT_GE(injected(r, "poisoned"), failed);  // a CB may take more than one
  EXPECT_EQ(r.stats["faults"]["affected_cbs"], failed);
}

TEST(FaultInjection, BurstFidelityFailsTheSameCbs) {
  for (const char* kind : {"poisoned", "unsupported_request", "dropped_completion", "iommu", "malformed_cb"}) {
    SimConfig c = at_cb(2, kind);
    c.fidelity = Fidelity::kBurst;
    const Outcome r = run(c);
    EXPECT_FALSE(r.h2d[1].ok()) << kind;
    EXPECT_TRUE(r.h2d[0].ok() && r.h2d[2].ok()) << kind;
    EXPECT_EQ(injected(r, kind), 1u) << kind;
    EXPECT_TRUE(r.after_reset_ok) << kind;
  }
}

}  // namespace
}  // namespace spyre_dma::model
