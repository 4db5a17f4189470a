// A pool of forked worker processes for running tests in isolation (what `spyre-dma regress`
// runs its seeds in): a test that crashes or hangs takes only its own process down, and is
// reported as a lost task while the others go on.
//
// Tasks are numbers (a regression's seeds). The parent hands each idle worker the next task
// through a pipe; the worker runs it and writes its result back as one line of JSON; the parent
// polls all workers' pipes, hands out the next task as each result comes in, kills a worker whose
// task ran past the timeout, and starts a fresh worker in place of one that died with a task in
// hand. At most `jobs` workers run at a time, and no more are started than there are tasks.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace spyre_dma::regress {

struct WorkerPoolOptions {
  unsigned jobs = 1;                               // worker processes at the most
  std::chrono::duration<double> timeout{600};      // one task's wall clock: longer is a hang
  // Asked between polls (at least every 200 ms): once true, no task is handed out any more, the
  // workers are killed and the tasks they held are dropped (neither results nor lost), and the
  // pool returns. Empty: never.
  std::function<bool()> stop;
};

// A task that produced no result.
struct LostTask {
  enum class Reason {
    kUnreadable,  // its result line was not JSON, or on_result threw; detail: why
    kEnded,       // its worker process ended first; detail: how ("killed by signal 6 (Aborted)")
    kTimedOut,    // it ran past the timeout and its worker was killed
  };
  std::uint64_t task = 0;
  Reason reason = Reason::kEnded;
  std::string detail;
};

struct WorkerPoolTasks {
  // Parent: the k-th task (k = 0, 1, ...), or nullopt when no k-th task is to start (now or any
  // more, e.g. a time limit has passed). Asked again for the same k until that task is handed out.
  std::function<std::optional<std::uint64_t>(std::size_t k)> task_at;
  // Worker: once, before its first task; may be empty.
  std::function<void()> worker_init;
  // Worker: runs one task. An exception that escapes it ends the worker (the task is then lost).
  std::function<nlohmann::json(std::uint64_t task)> work;
  // Parent: a task's result, with the process that ran it (which now waits for its next task).
  std::function<void(pid_t worker, const nlohmann::json& result)> on_result;
  // Parent: a task that produced no result.
  std::function<void(const LostTask& lost)> on_lost;
};

// Runs tasks.task_at(0), task_at(1), ... until task_at has none left and every worker has
// finished; returns how many tasks were handed out. Worker processes are children of the caller
// and leave through _exit(); SIGPIPE is ignored from the first call on. Throws std::system_error
// when not even the first workers can be started (those that were are stopped first).
std::size_t run_worker_pool(const WorkerPoolOptions& options, const WorkerPoolTasks& tasks);

}  // namespace spyre_dma::regress
