#include "spyre_dma/model/vcd_stream.hpp"

#include <charconv>

namespace spyre_dma::model {

VcdStream::VcdStream(WaveWriter& out, std::string source) : out_(out), source_(std::move(source)) {}

void VcdStream::fail(const std::string& what) const {
  throw WaveError(source_ + ":" + std::to_string(line_) + ": " + what);
}

void VcdStream::feed(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      if (!partial_.empty()) {
        token(partial_);
        partial_.clear();
      }
      if (c == '\n') ++line_;
      ++i;
      continue;
    }
    // A whole token inside this piece needs no copy; one cut by its end waits in partial_.
    std::size_t j = i;
    while (j < text.size() && text[j] != ' ' && text[j] != '\t' && text[j] != '\r' && text[j] != '\n') ++j;
    if (j == text.size()) {
      partial_.append(text.substr(i));
    } else if (partial_.empty()) {
      token(text.substr(i, j - i));
    } else {
      partial_.append(text.substr(i, j - i));
    }
    i = j;
  }
}

void VcdStream::finish() {
  if (!partial_.empty()) {
    const std::string t = std::move(partial_);
    partial_.clear();
    token(t);
  }
  if (!keyword_.empty() && keyword_ != "$dumpvars" && keyword_ != "$dumpall" && keyword_ != "$dumpon" &&
      keyword_ != "$dumpoff") {
    fail(keyword_ + " has no $end");
  }
  if (!vector_.empty()) fail("value '" + vector_ + "' has no variable code");
}

void VcdStream::token(std::string_view t) {
  if (!vector_.empty()) {  // the code of a b... value
    const auto it = vars_.find(std::string(t));
    if (it == vars_.end()) fail("value for undeclared variable code '" + std::string(t) + "'");
    out_.change_bits(time_, it->second, vector_);
    vector_.clear();
    return;
  }
  const bool transparent = keyword_ == "$dumpvars" || keyword_ == "$dumpall" || keyword_ == "$dumpon" ||
                           keyword_ == "$dumpoff";
  if (!keyword_.empty() && !transparent) {
    if (t == "$end") keyword_done();
    else args_.emplace_back(t);
    return;
  }
  if (t[0] == '$') {
    if (t == "$end") {
      if (!transparent) fail("$end with no keyword open");
      keyword_.clear();
      return;
    }
    keyword_ = std::string(t);
    args_.clear();
    return;
  }
  switch (t[0]) {
    case '#': {
      std::uint64_t v = 0;
      const auto r = std::from_chars(t.data() + 1, t.data() + t.size(), v);
      if (t.size() < 2 || r.ec != std::errc() || r.ptr != t.data() + t.size()) {
        fail("time '" + std::string(t) + "' is not a whole number");
      }
      if (v < time_) fail("time " + std::to_string(v) + " goes back from " + std::to_string(time_));
      time_ = v;
      return;
    }
    case '0': case '1': case 'x': case 'X': case 'z': case 'Z': {
      const auto it = vars_.find(std::string(t.substr(1)));
      if (t.size() < 2 || it == vars_.end()) fail("value for undeclared variable code '" + std::string(t.substr(1)) + "'");
      const char bit = static_cast<char>(t[0] == 'X' ? 'x' : t[0] == 'Z' ? 'z' : t[0]);
      out_.change_bits(time_, it->second, std::string_view(&bit, 1));
      return;
    }
    case 'b': case 'B': {
      if (t.size() < 2) fail("vector value with no bits");
      vector_.assign(t.substr(1));
      for (char& c : vector_) {
        if (c == 'X') c = 'x';
        if (c == 'Z') c = 'z';
      }
      return;
    }
    case 'r': case 'R': fail("real value '" + std::string(t) + "': real variables are not supported");
    default: fail("unexpected '" + std::string(t) + "'");
  }
}

void VcdStream::keyword_done() {
  const std::string k = std::move(keyword_);
  keyword_.clear();
  std::string scope;
  for (const auto& s : scope_) scope += (scope.empty() ? "" : ".") + s;
  if (k == "$scope") {
    if (args_.size() != 2) fail("$scope needs a type and a name");
    scope_.push_back(args_[1]);
  } else if (k == "$upscope") {
    if (scope_.empty()) fail("$upscope with no scope open");
    scope_.pop_back();
  } else if (k == "$var") {
    // $var type width code name [range] $end
    if (args_.size() < 4) fail("$var needs a type, a width, a code and a name");
    unsigned width = 0;
    const std::string& w = args_[1];
    const auto r = std::from_chars(w.data(), w.data() + w.size(), width);
    if (r.ec != std::errc() || r.ptr != w.data() + w.size() || width == 0) fail("$var width '" + w + "'");
    const auto it = vars_.find(args_[2]);
    try {
      if (it == vars_.end()) vars_.emplace(args_[2], out_.variable(scope, args_[3], width));
      else out_.alias(scope, args_[3], it->second);
    } catch (const WaveError& e) {
      fail(e.what());
    }
  } else if (k == "$timescale") {
    std::string unit;
    for (const auto& a : args_) unit += a;
    try {
      out_.timescale(unit);
    } catch (const WaveError& e) {
      fail(e.what());
    }
  } else if (k == "$enddefinitions" || k == "$date" || k == "$version" || k == "$comment") {
    // Nothing to carry over (the writer writes its own).
  } else {
    fail("unknown keyword " + k);
  }
  args_.clear();
}

}  // namespace spyre_dma::model
