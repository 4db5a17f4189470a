#include "base/debug_hooks.hpp"

#include <stdexcept>
#include <utility>

namespace spyre_dma::model {
namespace {

const std::pair<const char*, bool DebugHooks::*> kHooks[] = {
    {"lenient_checker", &DebugHooks::lenient_checker},
    {"writes_over_mps", &DebugHooks::writes_over_mps},
    {"reads_over_mrrs", &DebugHooks::reads_over_mrrs},
    {"writes_cross_4k", &DebugHooks::writes_cross_4k},
    {"completions_off_rcb", &DebugHooks::completions_off_rcb},
    {"ignore_posted_credits", &DebugHooks::ignore_posted_credits},
    {"release_tags_at_issue", &DebugHooks::release_tags_at_issue},
    {"reads_pass_posted", &DebugHooks::reads_pass_posted},
    {"rb_before_data", &DebugHooks::rb_before_data},
    {"drop_partial_flit_rb", &DebugHooks::drop_partial_flit_rb},
};

}  // namespace

DebugHooks& debug_hooks() noexcept {
  static DebugHooks hooks;
  return hooks;
}

bool DebugHooks::* debug_hook_named(const std::string& name) noexcept {
  for (const auto& [n, member] : kHooks) {
    if (name == n) return member;
  }
  return nullptr;
}

std::string debug_hook_list() {
  std::string out;
  for (const auto& [n, member] : kHooks) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

ScopedDebugHook::ScopedDebugHook(const std::string& name) : saved_(debug_hooks()) {
  if (name.empty()) return;
  bool DebugHooks::* member = debug_hook_named(name);
  if (!member) {
    throw std::invalid_argument("debug-hook '" + name + "': no such hook (have: " + debug_hook_list() + ")");
  }
  debug_hooks().*member = true;
}

}  // namespace spyre_dma::model
