// The worker process pool of worker_pool.hpp: fork() and the pipes to each worker, the worker's
// loop (read a task, run it, write its result line), and the parent's poll loop that hands out
// tasks, collects results and deals with workers that die or hang.
#include "worker_pool.hpp"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <system_error>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

namespace spyre_dma::regress {
namespace {

using Clock = std::chrono::steady_clock;

struct Worker {
  pid_t pid = -1;
  int to = -1, from = -1;
  std::optional<std::uint64_t> task;  // the task it runs
  Clock::time_point started;
  std::string buffer;
};

std::string describe_exit(int status) {
  if (WIFSIGNALED(status)) return fmt::format("killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  return "ended";
}

// The worker process: reads tasks (8 bytes each) from `in`, writes one JSON result line per task
// to `out`, and leaves when `in` is closed.
[[noreturn]] void worker_main(const WorkerPoolTasks& tasks, int in, int out) {
  // The parent's handlers (a regression's stop on SIGINT) are not the worker's: a signal to the
  // process group ends it, and the parent, stopping, does not count its task as lost.
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  try {
    if (tasks.worker_init) tasks.worker_init();
    std::uint64_t task = 0;
    while (true) {
      const ssize_t n = ::read(in, &task, sizeof task);
      if (n == 0) ::_exit(0);
      if (n != static_cast<ssize_t>(sizeof task)) {
        if (n < 0 && errno == EINTR) continue;
        ::_exit(3);
      }
      const std::string line = tasks.work(task).dump() + "\n";
      for (std::size_t done = 0; done < line.size();) {
        const ssize_t w = ::write(out, line.data() + done, line.size() - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) ::_exit(3);
        done += static_cast<std::size_t>(w);
      }
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "worker process {}: {}\n", ::getpid(), e.what());
  } catch (...) {
    fmt::print(stderr, "worker process {}: an unknown exception\n", ::getpid());
  }
  std::fflush(stderr);
  ::_exit(3);
}

class Pool {
 public:
  Pool(const WorkerPoolOptions& options, const WorkerPoolTasks& tasks) : options_(options), tasks_(tasks) {}
  ~Pool() {
    // Only when leaving early (an exception): a normal run ends with every worker retired.
    while (!workers_.empty()) (void)retire(workers_.size() - 1, true);
  }
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  std::size_t run() {
    std::signal(SIGPIPE, SIG_IGN);
    for (unsigned j = 0; j < options_.jobs && more(); ++j) {
      if (!spawn()) throw std::system_error(errno, std::generic_category(), "cannot start a worker process");
      assign(workers_.back());
    }
    while (!workers_.empty()) {
      if (stopping()) {
        while (!workers_.empty()) (void)retire(workers_.size() - 1, true);
        break;
      }
      std::vector<pollfd> fds;
      for (const Worker& w : workers_) fds.push_back(pollfd{w.from, POLLIN, 0});
      (void)::poll(fds.data(), fds.size(), 200);
      // From the back: retire() erases, spawn() appends, and neither moves the workers before i.
      for (std::size_t i = workers_.size(); i-- > 0;) serve(i, fds[i].revents);
    }
    return next_;
  }

 private:
  // Whether another task is to start.
  bool more() const { return !stopping() && tasks_.task_at(next_).has_value(); }
  bool stopping() const { return options_.stop && options_.stop(); }

  bool spawn() {
    int to[2], from[2];
    if (::pipe(to) != 0) return false;
    if (::pipe(from) != 0) {
      ::close(to[0]), ::close(to[1]);
      return false;
    }
    std::fflush(stdout), std::fflush(stderr);
    const pid_t pid = ::fork();
    if (pid < 0) {
      const int e = errno;
      ::close(to[0]), ::close(to[1]), ::close(from[0]), ::close(from[1]);
      errno = e;
      return false;
    }
    if (pid == 0) {
      ::close(to[1]), ::close(from[0]);
      for (const Worker& w : workers_) ::close(w.to), ::close(w.from);
      worker_main(tasks_, to[0], from[1]);
    }
    ::close(to[0]), ::close(from[1]);
    Worker w;
    w.pid = pid, w.to = to[1], w.from = from[0];
    workers_.push_back(std::move(w));
    return true;
  }

  void assign(Worker& w) {
    if (stopping()) return;
    const std::optional<std::uint64_t> task = tasks_.task_at(next_);
    if (!task) return;
    ++next_;
    w.task = *task;
    w.started = Clock::now();
    if (::write(w.to, &*task, sizeof *task) != static_cast<ssize_t>(sizeof *task)) w.task.reset(), --next_;
  }

  // Stops worker i (kill_it: at once) and waits for it; returns how it ended.
  std::string retire(std::size_t i, bool kill_it) {
    Worker& w = workers_[i];
    if (kill_it) ::kill(w.pid, SIGKILL);
    ::close(w.to), ::close(w.from);
    int status = 0;
    while (::waitpid(w.pid, &status, 0) < 0 && errno == EINTR) {
    }
    workers_.erase(workers_.begin() + static_cast<std::ptrdiff_t>(i));
    return describe_exit(status);
  }

  void lose(std::uint64_t task, LostTask::Reason reason, std::string detail) {
    tasks_.on_lost(LostTask{task, reason, std::move(detail)});
  }

  // Worker i after a poll: its result lines, its end, its timeout, or its retirement when idle
  // with nothing left to do.
  void serve(std::size_t i, short revents) {
    Worker& w = workers_[i];
    bool eof = false;
    if (revents & (POLLIN | POLLHUP | POLLERR)) {
      char buf[65536];
      const ssize_t n = ::read(w.from, buf, sizeof buf);
      if (n > 0) w.buffer.append(buf, static_cast<std::size_t>(n));
      else if (n == 0 || errno != EINTR) eof = true;
    }
    for (std::size_t nl; (nl = w.buffer.find('\n')) != std::string::npos;) {
      const std::string line = w.buffer.substr(0, nl);
      w.buffer.erase(0, nl + 1);
      try {
        tasks_.on_result(w.pid, nlohmann::json::parse(line));
      } catch (const std::exception& e) {
        if (w.task) lose(*w.task, LostTask::Reason::kUnreadable, e.what());
      }
      w.task.reset();
      assign(w);
    }
    if (eof) {
      const std::optional<std::uint64_t> task = w.task;
      std::string how = retire(i, false);
      if (task && !stopping()) {  // a worker the same signal ended is not a lost task
        lose(*task, LostTask::Reason::kEnded, std::move(how));
        if (more() && spawn()) assign(workers_.back());
      }
      return;
    }
    if (w.task && Clock::now() - w.started > options_.timeout) {
      const std::uint64_t task = *w.task;
      (void)retire(i, true);
      lose(task, LostTask::Reason::kTimedOut, {});
      if (more() && spawn()) assign(workers_.back());
      return;
    }
    if (!w.task && !more()) (void)retire(i, false);  // nothing left for it
  }

  const WorkerPoolOptions& options_;
  const WorkerPoolTasks& tasks_;
  std::vector<Worker> workers_;
  std::size_t next_ = 0;  // tasks handed out
};

}  // namespace

std::size_t run_worker_pool(const WorkerPoolOptions& options, const WorkerPoolTasks& tasks) {
  return Pool(options, tasks).run();
}

}  // namespace spyre_dma::regress
