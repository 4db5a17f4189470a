#include "stream_checker.hpp"

#include <algorithm>
#include <cstring>

namespace spyre_dma::rtl {

void StreamChecker::observe_stall(Channel& c, std::uint64_t cycle, bool valid, bool ready,
                                  const std::uint32_t* payload, std::size_t words) {
  bool same = false;  // the payload equals the one kept from the previous cycle
  if (c.stalled_) {
    if (!valid) {
      violate(c.name_, "valid held until ready", cycle, "valid dropped before the beat was taken");
    } else if (c.payload_.size() != words || std::memcmp(c.payload_.data(), payload, words * 4) != 0) {
      violate(c.name_, "payload stable while stalled", cycle, "payload changed while valid waited for ready");
    } else {
      same = true;
    }
  }
  c.stalled_ = valid && !ready;
  if (c.stalled_ && !same) c.payload_.assign(payload, payload + words);  // a stall that starts (or a changed beat)
}

void StreamChecker::read_issued(std::uint64_t cycle, unsigned tag, std::uint32_t bytes) {
  if (tag >= outstanding_.size()) {
    violate("rq", "tag life", cycle, "MRd tag " + std::to_string(tag) + " outside the tag table");
    return;
  }
  if (outstanding_[tag] != 0) {
    violate("rq", "tag life", cycle, "MRd reuses tag " + std::to_string(tag) + " while outstanding");
  }
  if (bytes == 0) violate("rq", "tag life", cycle, "MRd of zero bytes");
  outstanding_[tag] = bytes;
}

void StreamChecker::completion(std::uint64_t cycle, unsigned tag, std::uint32_t bytes, bool error) {
  if (tag >= outstanding_.size() || outstanding_[tag] == 0) {
    violate("rc", "tag life", cycle, "completion for tag " + std::to_string(tag) + " that is not outstanding");
    return;
  }
  if (error) {
    outstanding_[tag] = 0;
    return;
  }
  if (bytes > outstanding_[tag]) {
    violate("rc", "tag life", cycle,
            "completion of " + std::to_string(bytes) + " bytes for tag " + std::to_string(tag) + " with " +
                std::to_string(outstanding_[tag]) + " left");
    outstanding_[tag] = 0;
    return;
  }
  outstanding_[tag] -= bytes;
}

void StreamChecker::read_lost(unsigned tag) {
  if (tag < outstanding_.size()) outstanding_[tag] = 0;
}

unsigned StreamChecker::outstanding_tags() const noexcept {
  return static_cast<unsigned>(std::count_if(outstanding_.begin(), outstanding_.end(), [](std::uint32_t b) { return b != 0; }));
}

void StreamChecker::violate(const std::string& stream, const char* rule, std::uint64_t cycle, const std::string& what) {
  ++violations_;
  last_ = "RTL stream violation [" + std::string(rule) + "] on " + stream + " at cycle " + std::to_string(cycle) +
          ": " + what;
  if (strict_) throw StreamProtocolError(last_);
}

}  // namespace spyre_dma::rtl
