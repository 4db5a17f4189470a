#include "shrink.hpp"

#include <algorithm>
#include <map>
#include <vector>

namespace spyre_dma::regress {
namespace {

using Clock = std::chrono::steady_clock;

class Shrinker {
 public:
  Shrinker(const Program& p, const std::function<bool(const Program&)>& fails, const ShrinkOptions& o)
      : original_(p), fails_(fails), options_(o), t0_(Clock::now()) {}

  ShrinkResult run() {
    std::vector<std::size_t> kept(original_.ops.size());
    for (std::size_t i = 0; i < kept.size(); ++i) kept[i] = i;
    kept = ddmin(std::move(kept));
    kept = one_by_one(std::move(kept));
    ShrinkResult r;
    r.program = build(kept);
    r.runs = runs_;
    r.skipped = skipped_;
    r.exhausted = exhausted_;
    return r;
  }

 private:
  Program build(const std::vector<std::size_t>& kept) const {
    Program p = original_;
    p.ops.clear();
    for (std::size_t i : kept) p.ops.push_back(original_.ops[i]);
    // The final sync is implied: a program that lost it gets it back (the directed format's rule).
    if (p.ops.empty() || p.ops.back().type != OpType::kSync) p.ops.push_back(OpSpec{});
    return p;
  }

  bool out_of_budget() {
    if (runs_ >= options_.max_runs || Clock::now() - t0_ >= options_.budget) exhausted_ = true;
    return exhausted_;
  }

  // Whether the program of these ops fails as the original did; programs the bench cannot check
  // exactly count as passing, without a run. Each set is run at most once.
  bool fails(const std::vector<std::size_t>& kept) {
    if (kept.empty()) return false;
    if (const auto it = seen_.find(kept); it != seen_.end()) return it->second;
    const Program p = build(kept);
    bool f = false;
    if (!check_program(p).empty() || !check_hazards(p).empty()) {
      ++skipped_;
    } else if (!out_of_budget()) {
      ++runs_;
      f = fails_(p);
    }
    seen_[kept] = f;
    return f;
  }

  std::vector<std::size_t> ddmin(std::vector<std::size_t> ops) {
    std::size_t n = 2;
    while (ops.size() >= 2 && !out_of_budget()) {
      const std::size_t chunk = (ops.size() + n - 1) / n;
      bool reduced = false;
      for (std::size_t start = 0; start < ops.size() && !reduced; start += chunk) {  // a subset alone
        std::vector<std::size_t> subset(ops.begin() + static_cast<std::ptrdiff_t>(start),
                                        ops.begin() + static_cast<std::ptrdiff_t>(std::min(ops.size(), start + chunk)));
        if (subset.size() < ops.size() && fails(subset)) ops = std::move(subset), n = 2, reduced = true;
      }
      for (std::size_t start = 0; start < ops.size() && !reduced && n > 2; start += chunk) {  // a complement
        std::vector<std::size_t> rest(ops.begin(), ops.begin() + static_cast<std::ptrdiff_t>(start));
        rest.insert(rest.end(), ops.begin() + static_cast<std::ptrdiff_t>(std::min(ops.size(), start + chunk)),
                    ops.end());
        if (fails(rest)) ops = std::move(rest), n = std::max<std::size_t>(n - 1, 2), reduced = true;
      }
      if (reduced) continue;
      if (n >= ops.size()) break;
      n = std::min(ops.size(), 2 * n);
    }
    return ops;
  }

  // Each op in turn, from the last: left out where the rest still fails.
  std::vector<std::size_t> one_by_one(std::vector<std::size_t> ops) {
    for (std::size_t k = ops.size(); k-- > 0 && ops.size() > 1 && !out_of_budget();) {
      std::vector<std::size_t> rest = ops;
      rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(k));
      if (fails(rest)) ops = std::move(rest);
    }
    return ops;
  }

  const Program& original_;
  const std::function<bool(const Program&)>& fails_;
  const ShrinkOptions& options_;
  const Clock::time_point t0_;
  std::map<std::vector<std::size_t>, bool> seen_;
  std::size_t runs_ = 0, skipped_ = 0;
  bool exhausted_ = false;
};

}  // namespace

std::size_t working_ops(const Program& program) {
  return static_cast<std::size_t>(std::count_if(program.ops.begin(), program.ops.end(),
                                                [](const OpSpec& op) { return op.type != OpType::kSync; }));
}

ShrinkResult shrink_program(const Program& failing, const std::function<bool(const Program&)>& still_fails,
                            const ShrinkOptions& options) {
  return Shrinker(failing, still_fails, options).run();
}

}  // namespace spyre_dma::regress
