// The progress display of `spyre-dma regress` (regress_progress.hpp).
#include "regress_progress.hpp"

#include <cstdio>
#include <string>

#include <fmt/format.h>

#include <unistd.h>

namespace spyre_dma_cli {

Progress::Progress(const std::string& mode, std::size_t total) : total_(total), t0_(Clock::now()) {
  bar_ = mode == "bar" || (mode == "auto" && ::isatty(STDERR_FILENO));
  quiet_ = mode == "none";
}

namespace {
// What failed, as the summary says it: the first finding (a failure line stands on its own).
std::string first_finding(const spyre_dma::regress::CaseResult& c) {
  return c.findings.empty() ? std::string() : ": " + c.findings.front().message;
}
}  // namespace

void Progress::done(const spyre_dma::regress::CaseResult& c) {
  ++done_;
  failed_ += c.passed() ? 0 : 1;
  ops_ += c.metrics.ops;
  if (quiet_) return;
  if (bar_) {
    const double s = std::chrono::duration<double>(Clock::now() - t0_).count();
    const std::size_t width = 30, fill = total_ ? done_ * width / total_ : width;
    const double eta = done_ ? s / static_cast<double>(done_) * static_cast<double>(total_ - done_) : 0;
    if (!c.passed()) fmt::print(stderr, "\r\033[KFAIL {} [{}]{}; reproduce: {}\n", c.name, c.status, first_finding(c), c.repro);
    fmt::print(stderr, "\r[{}{}] {}/{} tests, {} failed, {:.0f} ops/s, ETA {:.0f} s ", std::string(fill, '#'),
               std::string(width - fill, '.'), done_, total_, failed_, s > 0 ? static_cast<double>(ops_) / s : 0.0,
               eta);
  } else {
    fmt::print(stderr, "{} {} {} {}: {} ops, {:.2f} s{}\n", c.passed() ? (c.status == "skip" ? "SKIP" : "PASS") : "FAIL",
               c.suite, c.backend, c.name, c.metrics.ops, c.metrics.wall_s,
               c.passed() ? "" : fmt::format(" [{}]{}; reproduce: {}", c.status, first_finding(c), c.repro));
  }
}

void Progress::finish() {
  if (bar_ && !quiet_) fmt::print(stderr, "\n");
}

}  // namespace spyre_dma_cli
