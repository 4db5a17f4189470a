// Protocol rules checked on every TLP the link carries and every CB the controller retires. A
// violation is a bug in the model (or one injected on purpose by a negative test through
// sim/debug_hooks.hpp): it is counted and, in strict mode, thrown as ProtocolError whose message
// names the rule ("PCIe protocol violation [MPS]: MWr of 1024 bytes exceeds MPS 512").
//
// Rules: TLP sizes (MPS, MRRS), the 4 KiB rule, read completion boundaries (RCB), flow-control
// credits, the tag life cycle, PCIe ordering (a completion does not pass a posted write sent
// earlier in the same direction) and RBs after their data. The checks are cheap enough to run on
// every TLP of every run: a few comparisons per TLP, with the credit and ordering bookkeeping
// swept in batches when the link prunes its history.
#pragma once

#include <array>
#include <cstdint>
#include <iterator>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pcie/link_math.hpp"
#include "pcie/ring.hpp"

namespace spyre_dma::model {

class ProtocolError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

enum class ProtocolRule : std::uint8_t {
  kZeroLength,
  kMps,
  kMrrs,
  kPage4KiB,
  kRcb,
  kCredits,
  kTagLife,
  kOrdering,
  kRbAfterData,
};
inline constexpr std::size_t kNumProtocolRules = 9;
// "MPS", "4 KiB", "RCB", "credits", "tag life", "ordering", "RB after data", ...
std::string_view to_string(ProtocolRule rule) noexcept;

// The two directions of the link, named from the device: up = device to host.
enum class LinkDirection : std::uint8_t { kUp = 0, kDown = 1 };

class ProtocolChecker {
 public:
  explicit ProtocolChecker(const pcie::LinkParams& params, bool strict = true)
      : params_(params), strict_(strict) {}

  void request(pcie::TlpType type, std::uint64_t addr, std::uint64_t len);  // MWr or MRd
  // One CplD of a read request; `last`: the request's final completion (the only one that may end
  // off an RCB boundary).
  void completion(std::uint64_t addr, std::uint64_t len, bool last = true);
  // Tags in simulated time: a tag may be issued again only at or after its previous retirement.
  void tag_issued(std::uint32_t tag, std::uint64_t at_ps);
  void tag_retired(std::uint32_t tag, std::uint64_t at_ps);
  // Credits in use against what the receiver advertised (capacity 0: infinite, not checked).
  void credits(std::int64_t in_use, std::int64_t capacity, const char* pool);

  // Flow control, in simulated time: a TLP holds `header` and `data` credits of `pool` from
  // `from_ps` until they are back at the sender (`until_ps`). The credits in use at every instant
  // must fit the capacity; checked for everything before the present at each prune().
  enum class Pool : std::uint8_t { kPosted = 0, kNonPosted = 1 };
  void set_capacity(Pool pool, std::uint32_t header, std::uint32_t data);
  void credits_held(Pool pool, std::uint64_t from_ps, std::uint64_t until_ps, std::uint32_t header,
                    std::uint32_t data) {
    CreditBook& b = books_[static_cast<std::size_t>(pool)];
    if (b.cap_header == 0 && b.cap_data == 0) return;
    insert_sorted(b.pending, Hold{from_ps, until_ps, header, data}, [](const Hold& h) { return h.from; });
  }

  // Ordering: a posted write `dir` that has left at `sent_ps` and takes effect at `arrival_ps`;
  // a completion in the same direction sent at or after it must not arrive before it.
  void posted_write(LinkDirection dir, std::uint64_t sent_ps, std::uint64_t arrival_ps);
  void completion_order(LinkDirection dir, std::uint64_t sent_ps, std::uint64_t arrival_ps, const char* what) {
    if (!posted_[static_cast<std::size_t>(dir)].empty()) check_order(dir, sent_ps, arrival_ps, what);
  }
  // The latest arrival of a posted write in `dir` sent at or before `sent_ps` (0 if none in
  // flight): when a completion sent then may arrive at the earliest.
  std::uint64_t posted_arrival_bound(LinkDirection dir, std::uint64_t sent_ps) const;

  // RBs after their data: a DMAO CB's RB must not arrive at the host before the CB's last data
  // write; a DMAI CB's RB must not be issued before its data is in device memory.
  void rb_after_data(const char* pipeline, std::uint32_t tag, std::uint64_t data_done_ps,
                     std::uint64_t rb_ps) {
    ++cbs_checked_;
    if (rb_ps < data_done_ps) rb_violation(pipeline, tag, data_done_ps, rb_ps);
  }

  // Nothing will be sent or granted before `present_ps` any more: checks the credit bookings
  // before it and forgets the ordering history that can no longer matter.
  void prune(std::uint64_t present_ps);

  std::uint64_t tlps_checked() const noexcept { return checked_; }
  std::uint64_t cbs_checked() const noexcept { return cbs_checked_; }
  std::uint64_t violations() const noexcept { return violations_; }
  std::uint64_t violations(ProtocolRule rule) const noexcept {
    return by_rule_[static_cast<std::size_t>(rule)];
  }
  const std::string& last_violation() const noexcept { return last_; }
  bool strict() const noexcept { return strict_; }

 private:
  void violate(ProtocolRule rule, const std::string& what);
  void check_order(LinkDirection dir, std::uint64_t sent_ps, std::uint64_t arrival_ps, const char* what);
  void rb_violation(const char* pipeline, std::uint32_t tag, std::uint64_t data_done_ps, std::uint64_t rb_ps);
  struct Hold {
    std::uint64_t from, until;
    std::uint32_t header, data;
  };
  struct CreditBook {
    std::uint32_t cap_header = 0, cap_data = 0;
    pcie::Ring<Hold> pending;  // not yet swept, by start time
    pcie::Ring<Hold> active;   // swept and possibly still held, by release time
    std::int64_t header = 0, data = 0;  // held by `active`
  };
  // Inserts into a ring sorted by key(): bookings come nearly in time order, so the place is
  // the back, or found from the back in a step or two.
  template <class T, class Key>
  static void insert_sorted(pcie::Ring<T>& q, const T& v, Key key) {
    if (q.empty() || key(q.back()) <= key(v)) {
      q.push_back(v);
      return;
    }
    auto it = q.end();
    while (it != q.begin() && key(*std::prev(it)) > key(v)) --it;
    q.insert(it, v);
  }
  void sweep(std::size_t pool, std::uint64_t present_ps);

  pcie::LinkParams params_;
  bool strict_;
  struct TagLife {
    std::uint64_t issued = 0;
    std::uint64_t retired = 0;
    bool outstanding = false;
  };
  std::vector<TagLife> tags_;
  std::array<CreditBook, 2> books_{};
  struct Posted {
    std::uint64_t sent, arrival;
  };
  std::array<pcie::Ring<Posted>, 2> posted_{};  // by sent
  std::uint64_t checked_ = 0;
  std::uint64_t cbs_checked_ = 0;
  std::uint64_t violations_ = 0;
  std::array<std::uint64_t, kNumProtocolRules> by_rule_{};
  std::string last_;
};

}  // namespace spyre_dma::model
