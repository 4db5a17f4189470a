// Private to the runner: the state of one test run (run_program() in runner.hpp) and the steps it
// goes through. Its member functions are defined by role:
//   runner.cpp           the run itself: setup of engine, streams and buffers, one op per step,
//                        teardown and the result;
//   test_run_checks.cpp  the checkers: completions (exactly once, FIFO, expected status), the end
//                        of an epoch (lost completions, synchronize() results, reset after a
//                        device fault), device-side ordering, and the model's own verdicts;
//   test_run_coverage.cpp  coverage bins and the figures gathered at the end of a run.
#pragma once

#include <chrono>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include <nlohmann/json.hpp>

#include "device_monitor.hpp"
#include "memory_ports.hpp"
#include "runner.hpp"
#include "scoreboard.hpp"
#include "spyre_dma/spyre_dma.hpp"

namespace spyre_dma::regress::detail {

// Everything one test run holds.
class TestRun {
 public:
  TestRun(const Program& p, const BackendFactory& open, const RunOptions& o) : p_(p), open_(open), o_(o) {}

  TestResult run();

  // The same run in steps that never wait for the device, for several runs driven in turn from one
  // thread (one per device of a server): begin(), advance() until it returns true, then end().
  // Each advance() submits one op, or polls the streams once where the program waits for them (a
  // sync, the end), so the runs' ops interleave and every device's host work keeps up.
  void begin();
  bool advance();
  TestResult end();

 private:
  using Clock = std::chrono::steady_clock;

  struct Record {
    Op op;
    Access access;
    bool has_access = false;
    bool has_callback = false;
    int callbacks = 0;
    std::int64_t prev = -1;  // the stream's previous op with a callback (strict, op-ordered)
    Status status;
    // How the op ended: as its callback saw it where it has one, else as the op says.
    Status result() const { return has_callback ? status : op.status(); }
  };
  struct Wait {
    std::size_t wait, record;
  };

  // The run (runner.cpp).
  void setup();
  void step(std::size_t i);
  TestResult finish(Clock::time_point t0);

  int host_region(std::uint32_t h) const { return static_cast<int>(h); }
  int dev_region(std::uint32_t d) const { return static_cast<int>(p_.host_buffers.size() + d); }
  Callback done_callback(std::size_t i) {
    return [this, i](const Status& s) { on_done(i, s); };
  }

  // The checkers (test_run_checks.cpp).
  void on_done(std::size_t i, const Status& s);
  void check_status(std::size_t i, const Status& s);
  // Host callbacks run once every earlier op of their stream has completed.
  void host_callback_ran(std::size_t i);
  std::vector<std::size_t> epoch_ops_snapshot(std::size_t upto);
  void end_epoch(std::size_t at);
  // FIFO within a stream, event order and strict-mode barriers, from completion order and from
  // the device's own timestamps.
  void check_order(const std::vector<std::size_t>& ops);
  // Failures that travel: every kDependencyFailed names a root of the epoch, and nothing after a
  // root runs on a propagating stream.
  void check_propagation(const std::vector<std::size_t>& ops);
  // With ordering by footprint: ops touching the same bytes (one writing) ran in submission order.
  void check_footprint_order(const std::vector<std::size_t>& ops);
  // The model's own verdicts: its protocol checker, and whether the faults it injected show up
  // as failed ops (and only then).
  void model_checks(const nlohmann::json& stats);
  static const nlohmann::json* find(const nlohmann::json& j, std::initializer_list<const char*> path);

  // Coverage and figures (test_run_coverage.cpp).
  // Coverage is hit from completions on engine threads too.
  void cover(const char* bin, std::uint64_t n = 1);
  void cover_data_op(const OpSpec& op);
  void cover_event(const OpSpec& op, const char* use);  // xorder: a record or a wait of op's stream
  void cover_recoveries();                              // xfault, at the end of the run
  void final_checks();

  // advance(): whether every stream is idle, each polled once (a step of a simulated device).
  bool streams_idle();

  const Program& p_;
  const BackendFactory& open_;
  const RunOptions& o_;
  Findings findings_;
  Scoreboard scoreboard_{findings_};
  TestBackend backend_;
  std::shared_ptr<DeviceMonitor> monitor_;
  // The memory of registered host buffers: declared before the engine, so that it outlives the
  // engine (and the device's last DMA) on every way out.
  std::vector<PooledBuffer> shareable_;
  std::unique_ptr<Engine> engine_;
  std::uint64_t max_cb_ = 0;
  std::vector<Stream> streams_;
  std::vector<Event> events_;
  std::vector<DeviceBuffer> device_;
  std::vector<HostBuffer> registered_;
  std::vector<std::unique_ptr<PageableBuffer>> pageable_;
  std::vector<std::uint8_t*> host_;
  std::vector<Record> records_;
  std::map<std::uint32_t, std::size_t> last_record_;
  std::map<std::uint32_t, std::int64_t> last_callback_op_;
  std::vector<Wait> waits_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::uint64_t callbacks_expected_ = 0, callbacks_done_ = 0;
  std::vector<std::size_t> epoch_ops_;
  TestMetrics metrics_;
  Coverage coverage_;
  Digest memory_digest_;  // filled by the final check of every region
  bool memory_checked_ = false;
  Clock::time_point t0_, lap_;  // begin() / advance() / end()
  std::size_t next_ = 0;        // advance(): the next op
  bool stopped_ = false;        // advance(): the run stopped (a setup finding) or is over
  // RunOptions::kill_device_at_op: the device was killed (completions read it on engine threads),
  // and the epoch it happened in has ended (no op is submitted after it).
  std::atomic<bool> device_killed_{false};
  bool device_gone_ = false;
};

}  // namespace spyre_dma::regress::detail
