// Deliberate bugs for negative tests: each flag breaks one protocol rule inside the running model
// so a test can prove the checker catches it. Not part of SimConfig (no configuration file can
// turn them on); a test sets them through debug_hooks() before it builds the model, and the
// components copy them at construction, so the hot paths test a member, not a global.
#pragma once

#include <string>

namespace spyre_dma::model {

struct DebugHooks {
  bool lenient_checker = false;       // count violations instead of throwing ProtocolError
  bool writes_over_mps = false;       // the DMAO write engine cuts MWr at 2 x MPS
  bool reads_over_mrrs = false;       // the DMAI read engine cuts MRd at 2 x MRRS
  bool writes_cross_4k = false;       // the DMAO write engine cuts MWr 128 bytes off MPS alignment
  bool completions_off_rcb = false;   // the completer cuts a request's first CplD at half the RCB
  bool ignore_posted_credits = false; // the link sends MWr without waiting for posted credits
  bool release_tags_at_issue = false; // the read engine frees a tag when it sends the request
  bool reads_pass_posted = false;     // a BAR0 read completes without waiting for posted writes
  bool rb_before_data = false;        // the RB writer issues an RB when its CB starts
  bool drop_partial_flit_rb = false;  // the first good CB of a partial last flit gets no RB (a lost
                                      // completion, once)
};

// The hooks the next model built in this process takes (one SimDevice at a time).
DebugHooks& debug_hooks() noexcept;

// The hooks by name (the members above), for the backends' `debug-hook` setting: a self-test of a
// bench, which must find the bug. Empty when `name` is none of them.
bool DebugHooks::* debug_hook_named(const std::string& name) noexcept;
std::string debug_hook_list();  // the names, comma-separated

// Sets one hook (by name; empty: none) while a model is built, and puts the hooks back after.
class ScopedDebugHook {
 public:
  explicit ScopedDebugHook(const std::string& name);  // std::invalid_argument for an unknown name
  ~ScopedDebugHook() { debug_hooks() = saved_; }
  ScopedDebugHook(const ScopedDebugHook&) = delete;
  ScopedDebugHook& operator=(const ScopedDebugHook&) = delete;

 private:
  DebugHooks saved_;
};

}  // namespace spyre_dma::model
