#include "soak.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <fstream>

#include <malloc.h>
#include <unistd.h>

#include "buffer_pool.hpp"
#include "spyre_dma/device_core/sparse_memory.hpp"

namespace spyre_dma_cli {

using spyre_dma::regress::CaseResult;
using spyre_dma::regress::Finding;
using spyre_dma::regress::FindingKind;
using spyre_dma::regress::Report;

void prepare_soak_worker() {
  // glibc raises its mmap threshold to the largest block freed so far (up to 32 MiB), after which
  // big buffers come from the heap and stay resident in it; each new largest test then shows as a
  // step in RSS that is the allocator's, not ours. A fixed threshold and one arena keep the RSS
  // what the process holds.
  ::mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  ::mallopt(M_ARENA_MAX, 1);
}

void add_heap_in_use(nlohmann::json& result) {
  // The parent samples this process's RSS between tests: hand freed heap (and the regression
  // bench's buffer pool, and the pages device memories keep) back to the system first, so that
  // what it sees is what the process still holds, not the allocators' caches; and tell it the
  // bytes still allocated, which tell a leak from fragmentation.
  spyre_dma::regress::PooledBuffer::release_pooled();
  spyre_dma::device_core::SparseMemory::release_pooled_pages();
  ::malloc_trim(0);
  const struct mallinfo2 mi = ::mallinfo2();
  result[kHeapInUseKey] = mi.uordblks + mi.hblkhd;
}

std::optional<std::chrono::seconds> parse_duration(const std::string& text) {
  if (text.empty()) return std::nullopt;
  std::uint64_t total = 0, number = 0;
  bool have_number = false, any_unit = false;
  for (char c : text) {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      if (number > 100'000'000) return std::nullopt;  // beyond any sensible soak
      number = number * 10 + static_cast<std::uint64_t>(c - '0');
      have_number = true;
      continue;
    }
    if (!have_number) return std::nullopt;
    std::uint64_t unit = 0;
    switch (c) {
      case 's': unit = 1; break;
      case 'm': unit = 60; break;
      case 'h': unit = 3600; break;
      default: return std::nullopt;
    }
    total += number * unit;
    number = 0, have_number = false, any_unit = true;
  }
  if (have_number) {
    if (any_unit) return std::nullopt;  // "1h30" is ambiguous
    total = number;
  }
  if (total == 0) return std::nullopt;
  return std::chrono::seconds(static_cast<std::chrono::seconds::rep>(total));
}

std::uint64_t resident_bytes(pid_t pid) {
  std::ifstream f(fmt::format("/proc/{}/statm", pid));
  std::uint64_t size = 0, resident = 0;
  if (!(f >> size >> resident)) return 0;
  return resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

void SoakMonitor::sample(pid_t worker, std::uint64_t heap_in_use) {
  const std::uint64_t rss = resident_bytes(worker);
  if (rss == 0) return;
  Memory& m = workers_[worker];
  if (m.samples++ == 0) m.first = rss, m.heap_first = heap_in_use;
  if (m.settled == 0) {
    if (Clock::now() >= settled_at_) m.settled = rss, m.heap_settled = heap_in_use;
    else ++m.warmup_samples;
  }
  m.last = rss;
  m.heap_last = heap_in_use;
  m.peak = std::max(m.peak, rss);
  m.series.push_back(rss);
  m.heap_series.push_back(heap_in_use);
}

double SoakMonitor::worst_growth_percent() const {
  double worst = 0;
  for (const auto& [pid, m] : workers_) {
    (void)pid;
    const std::uint64_t base = baseline(m);
    if (base > 0 && m.samples > 1) {
      worst = std::max(worst, 100.0 * (static_cast<double>(m.last) - static_cast<double>(base)) /
                                  static_cast<double>(base));
    }
  }
  return worst;
}

SoakMonitor::Invariants SoakMonitor::invariants(const Report& report) {
  Invariants v;
  for (const CaseResult& c : report.cases) {
    for (const Finding& f : c.findings) {
      switch (f.kind) {
        case FindingKind::kLostCompletion: ++v.lost; break;
        case FindingKind::kDuplicateCompletion: ++v.duplicated; break;
        case FindingKind::kNotCopied:
        case FindingKind::kCorrupted:
        case FindingKind::kOutOfRangeWrite:
        case FindingKind::kSourceOverwritten:
        case FindingKind::kEpochMismatch: ++v.corrupted; break;
        default: break;
      }
    }
  }
  return v;
}

namespace {

std::string mib(std::uint64_t bytes) { return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20)); }

}  // namespace

std::string SoakMonitor::summary(const Report& report, std::chrono::seconds duration) const {
  const Invariants v = invariants(report);
  std::string out = fmt::format("soak: {} s asked, {:.0f} s elapsed, {} tests\n", duration.count(), report.wall_s,
                                report.cases.size());
  out += fmt::format("  {:<24} {}\n", "lost completions", v.lost);
  out += fmt::format("  {:<24} {}\n", "duplicated completions", v.duplicated);
  out += fmt::format("  {:<24} {}\n", "corrupted data", v.corrupted);
  for (const auto& [pid, m] : workers_) {
    out += fmt::format(
        "  worker {:<17} RSS {} after its first test, {} after the warm-up ({} tests), {} after its last ({} "
        "tests), peak {}\n",
        pid, mib(m.first), mib(baseline(m)), m.warmup_samples, mib(m.last), m.samples, mib(m.peak));
    out += fmt::format("  {:<24} heap in use {} after its first test, {} after the warm-up, {} after its last\n",
                       "", mib(m.heap_first), mib(heap_baseline(m)), mib(m.heap_last));
  }
  out += fmt::format("  {:<24} {:+.2f}% (largest growth of one worker, end of the warm-up to its last test)\n",
                     "RSS growth", worst_growth_percent());
  out += fmt::format("  {:<24} {}\n", "parent RSS", mib(resident_bytes(::getpid())));
  return out;
}

nlohmann::json SoakMonitor::to_json(const Report& report, std::chrono::seconds duration) const {
  const Invariants v = invariants(report);
  nlohmann::json workers = nlohmann::json::array();
  for (const auto& [pid, m] : workers_) {
    workers.push_back({{"pid", pid},
                       {"tests", m.samples},
                       {"warmup_tests", m.warmup_samples},
                       {"rss_first_bytes", m.first},
                       {"rss_baseline_bytes", baseline(m)},
                       {"rss_last_bytes", m.last},
                       {"rss_peak_bytes", m.peak},
                       {"rss_bytes", m.series},
                       {"heap_in_use_first_bytes", m.heap_first},
                       {"heap_in_use_baseline_bytes", heap_baseline(m)},
                       {"heap_in_use_last_bytes", m.heap_last},
                       {"heap_in_use_bytes", m.heap_series}});
  }
  return {{"duration_s", duration.count()},
          {"lost", v.lost},
          {"duplicated", v.duplicated},
          {"corrupted", v.corrupted},
          {"rss_growth_percent", worst_growth_percent()},
          {"workers", workers}};
}

}  // namespace spyre_dma_cli
