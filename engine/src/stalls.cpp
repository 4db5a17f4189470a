// Stalls named (docs/engine.md, "Stalls"): for a stream that has not moved, the op that holds it,
// what that op waits for, and the streams that hold it in turn through event waits.
#include <algorithm>
#include <cstdio>
#include <set>
#include <string>

#include "engine_core.hpp"

namespace spyre_dma {

std::string StreamStall::to_string() const {
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.3f", std::chrono::duration<double>(idle).count());
  std::string out = "stream " + std::to_string(stream) + (name.empty() ? "" : " (" + name + ")") + ": " +
                    std::to_string(ops_pending) + " op(s) pending, none done for " + seconds + " s; op " +
                    std::to_string(head_op) + " (" + std::string(spyre_dma::to_string(head_kind)) + ") " + waiting_for;
  for (const std::string& link : chain) out += "; behind it, " + link;
  return out;
}

namespace detail {
namespace {

std::string stream_name(const StreamState& s) {
  return "stream " + std::to_string(s.id) + (s.options.name.empty() ? "" : " (" + s.options.name + ")");
}

std::string op_name(const OpState& op) {
  return "op " + std::to_string(op.id) + " (" + std::string(to_string(op.kind)) + ")";
}

// The first op of the stream that has not finished: what its completion order waits on.
const OpState* holding_op(const StreamState& s) {
  for (const auto& op : s.window) {
    if (!op->finished) return op.get();
  }
  return nullptr;
}

// What `op` (unfinished) waits for, in words.
std::string waiting_for(const StreamState& s, const OpState& op) {
  switch (op.kind) {
    case OpKind::kHostCallback:
      return op.started ? "is a host callback still running" : "waits for the ops before it";
    case OpKind::kHostTask:
      return op.started ? "is a host task whose TaskCompletion has not been called" : "waits for the ops before it";
    case OpKind::kEventWait:
      if (op.awaited && op.awaited->stream) {
        return "waits on an event recorded by op " + std::to_string(op.awaited->id) + " on " +
               stream_name(*op.awaited->stream);
      }
      return "waits on an event whose record is done (it starts at the next step)";
    case OpKind::kEventRecord: return "waits for the ops before it";
    default: break;
  }
  if (!op.started) {
    if (s.gate && !s.gate->finished) {
      return "has not started: it waits behind " + op_name(*s.gate);
    }
    return s.blocked ? "has not started: it waits for a queue slot, a tag or a staging buffer"
                     : "has not started: it waits for the ops before it";
  }
  if (!op.fully_issued()) {
    return "is on the device in part (" + std::to_string(op.next) + " of " + std::to_string(op.bytes) +
           " bytes handed over); the rest waits for a queue slot, a tag or a staging buffer";
  }
  if (op.copying_out > 0 && op.copying_out == op.cbs_live) return "is copying its data out of staging";
  return "is on the device: " + std::to_string(op.cbs_live) + " CB(s) on " + std::string(hw::to_string(op.pipe)) +
         " not answered";
}

}  // namespace

StreamStall EngineCore::stall_of(const StreamState& s, Clock::time_point now) const {
  StreamStall st;
  st.stream = s.id;
  st.name = s.options.name;
  st.idle = std::chrono::duration_cast<std::chrono::nanoseconds>(now - s.moved);
  st.ops_pending = s.window.size();
  const OpState* head = holding_op(s);
  if (!head) return st;
  st.head_op = head->id;
  st.head_kind = head->kind;
  st.waiting_for = waiting_for_here(s, *head);
  // Follow event waits and footprint waits to the streams that hold this one, once each (neither
  // can form a cycle, but a chain may come back to a stream already named through another op).
  std::set<const StreamState*> seen{&s};
  for (const OpState* op = head; op;) {
    const OpState* awaited = awaited_op(*op);
    if (!awaited || !awaited->stream) break;
    const StreamState& next = *awaited->stream;
    if (!seen.insert(&next).second) break;
    const OpState* h = holding_op(next);
    if (!h) break;
    st.chain.push_back(stream_name(next) + ": " + op_name(*h) + " " + waiting_for_here(next, *h));
    op = h;
  }
  return st;
}

const OpState* EngineCore::awaited_op(const OpState& op) const {
  if (op.kind == OpKind::kEventWait) return op.awaited.get();
  if (!op.started && op.footprint_waits != 0) return hazards_.first_awaited(op);
  return nullptr;
}

std::string EngineCore::waiting_for_here(const StreamState& s, const OpState& op) const {
  if (!op.started && op.footprint_waits != 0 && !(s.gate && !s.gate->finished)) {
    if (const OpState* a = hazards_.first_awaited(op); a && a->stream) {
      return "has not started: it waits for " + op_name(*a) + " on " + stream_name(*a->stream) +
             ", which touches its bytes (ordering by footprint; " + std::to_string(op.footprint_waits) +
             " op(s) in all)";
    }
  }
  return waiting_for(s, op);
}

std::string EngineCore::stall_report(const StreamState* held) const {
  const auto now = Clock::now();
  std::string out;
  if (held) {
    if (!held->window.empty()) out = "; " + stall_of(*held, now).to_string();
    return out;
  }
  for (const auto& s : streams_) {
    if (!s->window.empty()) out += "; " + stall_of(*s, now).to_string();
  }
  return out;
}

std::vector<StreamStall> EngineCore::stalls(std::chrono::nanoseconds idle_for) {
  Lock lock(mu_);
  const auto now = Clock::now();
  std::vector<StreamStall> out;
  for (const auto& s : streams_) {
    if (s->window.empty() || now - s->moved < idle_for) continue;
    out.push_back(stall_of(*s, now));
  }
  return out;
}

void EngineCore::watch_stalls(Lock& lock) {
  if (options_.stall_watchdog <= std::chrono::nanoseconds::zero()) return;
  const auto now = Clock::now();
  if (now < next_watch_) return;
  next_watch_ = now + std::max<std::chrono::nanoseconds>(options_.stall_watchdog / 4, std::chrono::milliseconds(1));
  std::vector<StreamStall> fresh;
  std::set<std::pair<std::uint64_t, std::uint64_t>> going_on;
  for (const auto& s : streams_) {
    if (s->window.empty() || now - s->moved < options_.stall_watchdog) continue;
    StreamStall st = stall_of(*s, now);
    const auto key = std::make_pair(st.stream, st.head_op);
    going_on.insert(key);
    if (!stalls_reported_.count(key)) fresh.push_back(std::move(st));
  }
  stalls_reported_ = std::move(going_on);  // one that ended is forgotten; one that goes on, told once
  if (fresh.empty()) return;
  lock.unlock();
  try {
    const CallbackScope scope(this);
    if (options_.on_stall) {
      options_.on_stall(fresh);
    } else {
      for (const StreamStall& st : fresh) std::fprintf(stderr, "spyre-dma: stall: %s\n", st.to_string().c_str());
    }
  } catch (...) {
    // A report has nobody to report to; the engine goes on.
  }
  lock.lock();
}

}  // namespace detail

std::vector<StreamStall> Engine::stalls(std::chrono::nanoseconds idle_for) const { return core_->stalls(idle_for); }

}  // namespace spyre_dma
