// Runs one Program on one device backend with every checker attached: the scoreboard, the
// engine invariants (exactly-once completion, FIFO within a stream, event order, strict-mode
// barriers, stream error state), the engine-device boundary monitor and, on sim, the model's own
// protocol checker and fault accounting. The result is a pass or a list of findings, with the
// figures and coverage of the run.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "coverage.hpp"
#include "findings.hpp"
#include "program.hpp"
#include "spyre_dma/backend/registry.hpp"
#include "spyre_dma/device.hpp"

namespace spyre_dma::regress {

// A device opened for one test, with the capabilities the checkers need besides the Device seam:
// its memory backdoor (required; never the DMA path), and where the backend has them its
// statistics (the model's tree) and simulated clock.
using TestBackend = backend::Instance;
// Opens a fresh backend for a program (its faults, its seed).
using BackendFactory = std::function<TestBackend(const Program&)>;

struct RunOptions {
  std::chrono::milliseconds wait_timeout{60000};  // per stream synchronisation
  std::chrono::milliseconds cb_timeout{20000};    // EngineOptions::cb_timeout
  // Self-test of the scoreboard: the destination of the data op at this index gets one byte
  // flipped behind the engine's back as it completes; -1: off.
  std::int64_t corrupt_op = -1;
  // A soak across processes: before the op at this index, `kill_device` kills the device's
  // process (the vfio-user server behind it, SIGKILL); -1: never. From then on the test asks only
  // that every op ends exactly once, done or with a typed error (DeviceFault, Cancelled,
  // DependencyFailed) and that no submission is refused otherwise, then ends with the epoch: the
  // memory behind a dead device cannot be checked.
  std::int64_t kill_device_at_op = -1;
  std::function<void(Device&)> kill_device;
};

struct TestMetrics {
  std::uint64_t ops = 0;        // operations submitted (events included)
  std::uint64_t data_ops = 0;   // copies and fills
  std::uint64_t bytes = 0;      // bytes the data ops moved
  std::uint64_t cbs = 0;
  std::uint64_t failed_ops = 0;             // failed first (a fault, a refusal): the roots
  std::uint64_t dependency_failed_ops = 0;  // kDependencyFailed: behind a root on a propagating stream
  std::uint64_t epochs = 0;
  std::uint64_t resets = 0;
  std::uint64_t bytes_checked = 0;
  double sim_time_ns = 0;       // 0 when the backend is not simulated
  double wall_s = 0;
  // wall_s by phase: opening the backend, engine, streams and buffers (each buffer's scoreboard
  // region filled); running the ops (submission, completion and the checks at each epoch's end);
  // the final check of every region and of the device; closing the engine and the backend.
  double setup_s = 0, run_s = 0, check_s = 0, teardown_s = 0;
  std::map<std::string, std::uint64_t> faults_injected;  // sim: by kind
  nlohmann::json to_json() const;
  TestMetrics& operator+=(const TestMetrics& o);  // totals over tests
};

// The test's determinism digest (digest.hpp), by part. Zero parts were not reached (a test that
// stopped before its final check has no memory part).
struct TestDigest {
  std::uint64_t rbs = 0;          // every RB consumed, each pipeline's in order
  std::uint64_t memory = 0;       // every byte of every region at the end
  std::uint64_t sim_time_ps = 0;  // when the test ended, simulated (0: not a simulated backend)
  std::uint64_t value() const;    // the three folded
  nlohmann::json to_json() const;
  // Throws std::invalid_argument naming the key that is missing or not a digest.
  static TestDigest from_json(const nlohmann::json& j);
};

struct TestResult {
  bool passed = false;
  std::vector<Finding> findings;  // the first ones in full
  std::uint64_t finding_count = 0;
  TestMetrics metrics;
  Coverage coverage;
  TestDigest digest;
};

TestResult run_program(const Program& program, const BackendFactory& open, const RunOptions& options = {});

// The program on every device of `devices` at once (the devices of one server,
// Registry::open_devices), each with every checker of its own, driven in turn from the calling
// thread: one op (or one poll of the streams where the program waits for them) per device per
// round, so the run is deterministic. Result i is device i's.
std::vector<TestResult> run_program_together(const Program& program, std::vector<TestBackend> devices,
                                             const RunOptions& options = {});

}  // namespace spyre_dma::regress
