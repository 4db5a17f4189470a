// Cycle-level checks of the valid/ready streams between the RTL data path and its transactors,
// run on every cycle of every RTL run:
//   - a valid stays asserted until its ready (no withdrawn beat),
//   - a stalled beat (valid, not ready) keeps its payload until it is taken,
//   - read tags: an MRd uses a tag that is not outstanding; a completion names an outstanding
//     tag and never carries more bytes than its request has left; the tag retires with the
//     request's last byte (or with an error completion, or is written off when its completion
//     is dropped on purpose).
// A violation is a bug of the RTL or of a transactor: it is counted and, when strict, thrown as
// StreamProtocolError naming the stream, the rule and the cycle.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace spyre_dma::rtl {

class StreamProtocolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class StreamChecker {
 public:
  // One valid/ready stream; its payload is whatever words the caller packs into it.
  class Channel {
   public:
    explicit Channel(std::string name) : name_(std::move(name)) {}
    const std::string& name() const noexcept { return name_; }

   private:
    friend class StreamChecker;
    std::string name_;
    bool stalled_ = false;  // valid and not ready at the previous cycle
    std::vector<std::uint32_t> payload_;
  };

  explicit StreamChecker(unsigned tags, bool strict = true) : outstanding_(tags, 0), strict_(strict) {}

  // The handshake of `c` at the edge of `cycle`, with the payload it carried (words). The payload
  // is read only when wants_payload() says so (may be null otherwise).
  void observe(Channel& c, std::uint64_t cycle, bool valid, bool ready, const std::uint32_t* payload,
               std::size_t words) {
    if (cycle != last_cycle_) ++cycles_, last_cycle_ = cycle;
    if (c.stalled_ || (valid && !ready)) observe_stall(c, cycle, valid, ready, payload, words);
    // else: no beat waits, before or now; the rules have nothing to check (inline: most calls)
  }
  // Whether observe() reads this cycle's payload: a beat that stalls now, or one that stalled
  // before (its payload must not have changed). Most cycles need none, and packing a payload
  // every cycle was a large part of the clock's own cost.
  static bool wants_payload(const Channel& c, bool valid, bool ready) noexcept {
    return valid && (c.stalled_ || !ready);
  }

  // Tag life (at handshakes): an MRd of `bytes` issued with `tag`; a completion beat of `bytes`
  // for `tag`, with `error` set when it ends the request without data.
  void read_issued(std::uint64_t cycle, unsigned tag, std::uint32_t bytes);
  void completion(std::uint64_t cycle, unsigned tag, std::uint32_t bytes, bool error);
  // The transactor dropped the request's completion (an injected fault): no beat will come, and
  // the RTL's completion timer, which the streams do not show, frees the tag.
  void read_lost(unsigned tag);

  std::uint64_t violations() const noexcept { return violations_; }
  std::uint64_t cycles_checked() const noexcept { return cycles_; }
  const std::string& last_violation() const noexcept { return last_; }
  unsigned outstanding_tags() const noexcept;

 private:
  // A beat that waited at the previous cycle, or one that waits now: the rules' checks.
  void observe_stall(Channel& c, std::uint64_t cycle, bool valid, bool ready, const std::uint32_t* payload,
                     std::size_t words);
  void violate(const std::string& stream, const char* rule, std::uint64_t cycle, const std::string& what);

  std::vector<std::uint32_t> outstanding_;  // bytes left per tag; 0: free
  bool strict_;
  std::uint64_t violations_ = 0;
  std::uint64_t cycles_ = 0;
  std::uint64_t last_cycle_ = ~0ull;
  std::string last_;
};

}  // namespace spyre_dma::rtl
