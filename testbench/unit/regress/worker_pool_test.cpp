// The worker process pool: every task's result comes back from the worker that ran it, no more
// workers run than asked (nor than there are tasks), and a task whose worker dies, hangs, throws
// or sends back what cannot be taken is reported as lost while the other tasks go on.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "worker_pool.hpp"

namespace spyre_dma::regress {
namespace {

using Clock = std::chrono::steady_clock;

// A pool run over tasks 0..count-1, with what came back.
struct Outcome {
  std::size_t handed_out = 0;
  std::map<std::uint64_t, nlohmann::json> results;  // by task
  std::map<std::uint64_t, LostTask> lost;            // by task
  std::set<pid_t> workers;                           // that sent results
  bool result_from_its_worker = true;                // on_result's pid is the one that ran the task
};

WorkerPoolTasks numbered_tasks(std::size_t count, Outcome& out) {
  WorkerPoolTasks t;
  t.task_at = [count](std::size_t k) -> std::optional<std::uint64_t> {
    if (k >= count) return std::nullopt;
    return k;
  };
  t.on_result = [&out](pid_t worker, const nlohmann::json& r) {
    out.workers.insert(worker);
    if (r.at("pid").get<pid_t>() != worker) out.result_from_its_worker = false;
    out.results[r.at("task").get<std::uint64_t>()] = r;
  };
  t.on_lost = [&out](const LostTask& l) { out.lost[l.task] = l; };
  return t;
}

nlohmann::json result_of(std::uint64_t task) {
  const auto now = Clock::now().time_since_epoch();
  return {{"task", task}, {"square", task * task}, {"pid", ::getpid()}, {"ns", now.count()}};
}

// Runs tasks 0..count-1 with `work` in the workers.
Outcome run_tasks(std::size_t count, unsigned jobs, std::function<nlohmann::json(std::uint64_t)> work,
                  std::chrono::duration<double> timeout = std::chrono::seconds(600)) {
  Outcome out;
  WorkerPoolTasks t = numbered_tasks(count, out);
  t.work = std::move(work);
  WorkerPoolOptions o;
  o.jobs = jobs;
  o.timeout = timeout;
  out.handed_out = run_worker_pool(o, t);
  return out;
}

// Whether `task` was lost for `reason`, with `detail` in what the pool said about it.
::testing::AssertionResult lost(const Outcome& out, std::uint64_t task, LostTask::Reason reason,
                                const std::string& detail) {
  const auto it = out.lost.find(task);
  if (it == out.lost.end()) return ::testing::AssertionFailure() << "task " << task << " was not lost";
  if (it->second.reason != reason) {
    return ::testing::AssertionFailure() << "task " << task << " was lost for reason "
                                         << static_cast<int>(it->second.reason);
  }
  if (it->second.detail.find(detail) == std::string::npos) {
    return ::testing::AssertionFailure() << "task " << task << ": '" << it->second.detail << "' does not say '"
                                         << detail << "'";
  }
  return ::testing::AssertionSuccess();
}

TEST(WorkerPool, EveryResultComesBack) {
  const Outcome out = run_tasks(20, 3, result_of);
  EXPECT_EQ(out.handed_out, 20u);
  EXPECT_TRUE(out.lost.empty());
  ASSERT_EQ(out.results.size(), 20u);
  for (const auto& [task, r] : out.results) EXPECT_EQ(r.at("square").get<std::uint64_t>(), task * task);
  EXPECT_TRUE(out.result_from_its_worker);
  for (pid_t w : out.workers) EXPECT_NE(w, ::getpid());
}

TEST(WorkerPool, RunsNoMoreWorkersThanTheJobCount) {
  for (unsigned jobs : {1u, 3u}) {
    // Each task reports when it started and ended; the steady clock is the same in every process.
    const Outcome out = run_tasks(12, jobs, [](std::uint64_t task) {
      nlohmann::json r = result_of(task);
      r["start"] = r["ns"];
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      r["end"] = Clock::now().time_since_epoch().count();
      return r;
    });
    ASSERT_EQ(out.results.size(), 12u) << "jobs " << jobs;
    EXPECT_EQ(out.workers.size(), jobs);
    // The most tasks running at one time.
    std::vector<std::pair<long long, int>> edges;
    for (const auto& [task, r] : out.results) {
      edges.emplace_back(r.at("start").get<long long>(), +1);
      edges.emplace_back(r.at("end").get<long long>(), -1);
    }
    std::sort(edges.begin(), edges.end());  // an end before a start at the same instant
    int running = 0, most = 0;
    for (const auto& e : edges) most = std::max(most, running += e.second);
    EXPECT_LE(most, static_cast<int>(jobs));
  }
}

TEST(WorkerPool, StartsNoMoreWorkersThanThereAreTasks) {
  const Outcome out = run_tasks(2, 8, result_of);
  EXPECT_EQ(out.handed_out, 2u);
  EXPECT_EQ(out.results.size(), 2u);
  EXPECT_LE(out.workers.size(), 2u);
}

TEST(WorkerPool, NoTasksNoWorkers) {
  const Outcome out =
      run_tasks(0, 1, [](std::uint64_t) -> nlohmann::json { throw std::logic_error("no task was handed out"); });
  EXPECT_EQ(out.handed_out, 0u);
  EXPECT_TRUE(out.results.empty());
  EXPECT_TRUE(out.lost.empty());
}

TEST(WorkerPool, AWorkerThatDiesLosesOnlyItsTask) {
  const Outcome out = run_tasks(10, 2, [](std::uint64_t task) {
    if (task == 4) ::kill(::getpid(), SIGKILL);
    if (task == 7) ::_exit(7);
    return result_of(task);
  });
  EXPECT_EQ(out.handed_out, 10u);
  EXPECT_EQ(out.results.size(), 8u);
  EXPECT_EQ(out.lost.size(), 2u);
  EXPECT_TRUE(lost(out, 4, LostTask::Reason::kEnded, "killed by signal 9"));
  EXPECT_TRUE(lost(out, 7, LostTask::Reason::kEnded, "exited with status 7"));
  // Two workers died with a task in hand: fresh ones took over.
  EXPECT_GE(out.workers.size(), 2u);
}

TEST(WorkerPool, AnExceptionInATaskEndsItsWorker) {
  const Outcome out = run_tasks(5, 1, [](std::uint64_t task) {
    if (task == 3) throw std::runtime_error("task 3 fails");
    return result_of(task);
  });
  EXPECT_EQ(out.handed_out, 5u);
  EXPECT_EQ(out.results.size(), 4u);
  EXPECT_TRUE(lost(out, 3, LostTask::Reason::kEnded, "exited with status 3"));
}

TEST(WorkerPool, AHungTaskIsKilledAtTheTimeout) {
  const auto t0 = Clock::now();
  const Outcome out = run_tasks(
      4, 2,
      [](std::uint64_t task) {
        if (task == 1) std::this_thread::sleep_for(std::chrono::seconds(60));
        return result_of(task);
      },
      std::chrono::milliseconds(500));
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(20));
  EXPECT_EQ(out.handed_out, 4u);
  EXPECT_EQ(out.results.size(), 3u);
  EXPECT_TRUE(lost(out, 1, LostTask::Reason::kTimedOut, ""));
}

TEST(WorkerPool, AResultTheParentCannotTakeIsALostTask) {
  Outcome out;
  WorkerPoolTasks t = numbered_tasks(6, out);
  t.work = result_of;
  const auto take = t.on_result;
  t.on_result = [take](pid_t worker, const nlohmann::json& r) {
    if (r.at("task").get<std::uint64_t>() == 2) throw std::invalid_argument("result 2 is unreadable");
    take(worker, r);
  };
  EXPECT_EQ(run_worker_pool(WorkerPoolOptions{}, t), 6u);
  EXPECT_EQ(out.results.size(), 5u);
  EXPECT_TRUE(lost(out, 2, LostTask::Reason::kUnreadable, "result 2 is unreadable"));
}

TEST(WorkerPool, TheTaskListCanEndEarly) {
  // task_at decides what runs: here the tasks are 0, 10, ..., 40 and then none.
  Outcome out;
  WorkerPoolTasks t = numbered_tasks(0, out);
  t.task_at = [](std::size_t k) -> std::optional<std::uint64_t> {
    if (k >= 5) return std::nullopt;
    return k * 10;
  };
  t.work = result_of;
  WorkerPoolOptions o;
  o.jobs = 2;
  EXPECT_EQ(run_worker_pool(o, t), 5u);
  std::set<std::uint64_t> got;
  for (const auto& [task, r] : out.results) got.insert(task);
  EXPECT_EQ(got, (std::set<std::uint64_t>{0, 10, 20, 30, 40}));
}

TEST(WorkerPool, StopsWhenAskedAndDropsWhatIsRunning) {
  // Stop once 3 results are in: tasks that hang (task 3 on) are dropped, not lost, and the pool
  // returns long before any task timeout.
  Outcome out;
  WorkerPoolTasks t = numbered_tasks(100, out);
  t.work = [](std::uint64_t task) {
    if (task >= 3) std::this_thread::sleep_for(std::chrono::hours(1));
    return result_of(task);
  };
  WorkerPoolOptions o;
  o.jobs = 2;
  o.stop = [&out] { return out.results.size() >= 3; };
  const auto t0 = Clock::now();
  const std::size_t handed_out = run_worker_pool(o, t);
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(30));
  EXPECT_EQ(out.results.size(), 3u);
  EXPECT_TRUE(out.lost.empty());
  EXPECT_GE(handed_out, 3u);
  EXPECT_LE(handed_out, 5u);  // the three that finished and at most the two running at the stop
}

}  // namespace
}  // namespace spyre_dma::regress
