#include "link/protocol_checker.hpp"

#include <algorithm>

namespace spyre_dma::model {

std::string_view to_string(ProtocolRule rule) noexcept {
  switch (rule) {
    case ProtocolRule::kZeroLength: return "zero length";
    case ProtocolRule::kMps: return "MPS";
    case ProtocolRule::kMrrs: return "MRRS";
    case ProtocolRule::kPage4KiB: return "4 KiB";
    case ProtocolRule::kRcb: return "RCB";
    case ProtocolRule::kCredits: return "credits";
    case ProtocolRule::kTagLife: return "tag life";
    case ProtocolRule::kOrdering: return "ordering";
    case ProtocolRule::kRbAfterData: return "RB after data";
  }
  return "?";
}

void ProtocolChecker::violate(ProtocolRule rule, const std::string& what) {
  ++violations_;
  ++by_rule_[static_cast<std::size_t>(rule)];
  last_ = "[" + std::string(to_string(rule)) + "] " + what;
  if (strict_) throw ProtocolError("PCIe protocol violation " + last_);
}

void ProtocolChecker::request(pcie::TlpType type, std::uint64_t addr, std::uint64_t len) {
  ++checked_;
  const char* name = type == pcie::TlpType::kMWr ? "MWr" : "MRd";
  if (len == 0) violate(ProtocolRule::kZeroLength, std::string(name) + " of zero length");
  if (addr / pcie::kPageBytes != (addr + len - 1) / pcie::kPageBytes) {
    violate(ProtocolRule::kPage4KiB, std::string(name) + " at " + std::to_string(addr) + " of " +
                                         std::to_string(len) + " bytes crosses a 4 KiB boundary");
  }
  const bool write = type == pcie::TlpType::kMWr;
  const std::uint32_t limit = write ? params_.mps : params_.mrrs;
  if (len > limit) {
    violate(write ? ProtocolRule::kMps : ProtocolRule::kMrrs,
            std::string(name) + " of " + std::to_string(len) + " bytes exceeds " + (write ? "MPS " : "MRRS ") +
                std::to_string(limit));
  }
}

void ProtocolChecker::completion(std::uint64_t addr, std::uint64_t len, bool last) {
  ++checked_;
  if (len > params_.mps) {
    violate(ProtocolRule::kMps, "CplD of " + std::to_string(len) + " bytes exceeds MPS " + std::to_string(params_.mps));
  }
  // PCIe Base Spec 2.3.1.1: completions of a request other than its last end on an RCB boundary.
  if (!last && (addr + len) % params_.rcb != 0) {
    violate(ProtocolRule::kRcb, "CplD at " + std::to_string(addr) + " of " + std::to_string(len) +
                                    " bytes is not the request's last and ends off the RCB of " +
                                    std::to_string(params_.rcb) + " bytes");
  }
}

void ProtocolChecker::tag_issued(std::uint32_t tag, std::uint64_t at_ps) {
  if (tag >= tags_.size()) tags_.resize(std::max<std::size_t>(tag + 1, 2 * tags_.size()));
  TagLife& t = tags_[tag];
  if (t.outstanding || at_ps < t.retired) {
    violate(ProtocolRule::kTagLife, "tag " + std::to_string(tag) + " issued at " + std::to_string(at_ps) +
                                        " ps while outstanding until " + std::to_string(t.retired) + " ps");
  }
  t.outstanding = true;
  t.issued = at_ps;
}

void ProtocolChecker::tag_retired(std::uint32_t tag, std::uint64_t at_ps) {
  if (tag >= tags_.size()) tags_.resize(std::max<std::size_t>(tag + 1, 2 * tags_.size()));
  TagLife& t = tags_[tag];
  if (!t.outstanding || at_ps < t.issued) {
    violate(ProtocolRule::kTagLife,
            "tag " + std::to_string(tag) + " retired at " + std::to_string(at_ps) + " ps but not outstanding");
  }
  t.outstanding = false;
  t.retired = at_ps;
}

void ProtocolChecker::credits(std::int64_t in_use, std::int64_t capacity, const char* pool) {
  if (capacity > 0 && (in_use < 0 || in_use > capacity)) {
    violate(ProtocolRule::kCredits, std::string(pool) + " credits in use " + std::to_string(in_use) + " outside 0.." +
                                        std::to_string(capacity));
  }
}

void ProtocolChecker::set_capacity(Pool pool, std::uint32_t header, std::uint32_t data) {
  CreditBook& b = books_[static_cast<std::size_t>(pool)];
  b.cap_header = header;
  b.cap_data = data;
}

// The holds that start before the present, in time order, against those still held (sorted by
// release time): every later hold starts at or after the present, so the usage up to it is final.
void ProtocolChecker::sweep(std::size_t pool, std::uint64_t present_ps) {
  CreditBook& b = books_[pool];
  static const char* const kNames[2][2] = {{"posted header", "posted data"},
                                           {"non-posted header", "non-posted data"}};
  while (!b.pending.empty() && b.pending.front().from < present_ps) {
    const Hold& h = b.pending.front();  // popped once it is in `active`
    while (!b.active.empty() && b.active.front().until <= h.from) {
      b.header -= b.active.front().header;
      b.data -= b.active.front().data;
      b.active.pop_front();
    }
    b.header += h.header;
    b.data += h.data;
    if (b.header > b.cap_header && b.cap_header > 0) credits(b.header, b.cap_header, kNames[pool][0]);
    if (b.data > b.cap_data && b.cap_data > 0) credits(b.data, b.cap_data, kNames[pool][1]);
    insert_sorted(b.active, h, [](const Hold& x) { return x.until; });
    b.pending.pop_front();
  }
}

void ProtocolChecker::posted_write(LinkDirection dir, std::uint64_t sent_ps, std::uint64_t arrival_ps) {
  auto& q = posted_[static_cast<std::size_t>(dir)];
  // Booked out of call order by decoupled initiators: kept sorted by send time.
  insert_sorted(q, Posted{sent_ps, arrival_ps}, [](const Posted& e) { return e.sent; });
  if (q.size() > 8192) q.pop_front();  // bounded: the oldest can only matter to a late completion
}

void ProtocolChecker::check_order(LinkDirection dir, std::uint64_t sent_ps, std::uint64_t arrival_ps,
                                  const char* what) {
  for (const auto& [sent, arrival] : posted_[static_cast<std::size_t>(dir)]) {
    if (sent > sent_ps) break;
    if (arrival > arrival_ps) {
      violate(ProtocolRule::kOrdering,
              std::string(what) + (dir == LinkDirection::kUp ? " (upstream)" : " (downstream)") + " sent at " +
                  std::to_string(sent_ps) + " ps arrives at " + std::to_string(arrival_ps) +
                  " ps, before the posted write sent at " + std::to_string(sent) + " ps that arrives at " +
                  std::to_string(arrival) + " ps: a completion passed a posted write");
      return;
    }
  }
}

std::uint64_t ProtocolChecker::posted_arrival_bound(LinkDirection dir, std::uint64_t sent_ps) const {
  std::uint64_t bound = 0;
  for (const auto& [sent, arrival] : posted_[static_cast<std::size_t>(dir)]) {
    if (sent > sent_ps) break;
    bound = std::max(bound, arrival);
  }
  return bound;
}

void ProtocolChecker::rb_violation(const char* pipeline, std::uint32_t tag, std::uint64_t data_done_ps,
                                   std::uint64_t rb_ps) {
  violate(ProtocolRule::kRbAfterData, std::string(pipeline) + " CB tag " + std::to_string(tag) + ": RB at " +
                                          std::to_string(rb_ps) + " ps before its data was done at " +
                                          std::to_string(data_done_ps) + " ps");
}

void ProtocolChecker::prune(std::uint64_t present_ps) {
  for (auto& q : posted_) {
    while (!q.empty() && q.front().arrival <= present_ps) q.pop_front();
  }
  sweep(0, present_ps);
  sweep(1, present_ps);
}

}  // namespace spyre_dma::model
