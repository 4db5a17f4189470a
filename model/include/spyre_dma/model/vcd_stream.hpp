// Reads VCD text as it is produced, in pieces cut anywhere, and writes what it describes through
// a WaveWriter: the same scopes, variables (a code declared twice becomes an alias), timescale,
// times and values. The RTL data path writes its FST this way from Verilator's VCD stream; tests
// read a VCD back into a writer of their own.
//
// Handles what VCD writers put out: $scope/$upscope/$var/$timescale/$enddefinitions, $date,
// $version and $comment (skipped), $dumpvars/$dumpall/$dumpon/$dumpoff, #time, scalar (0 1 x z)
// and vector (b...) changes. Real values (r...) and anything else malformed are a WaveError that
// names the source and its line.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "spyre_dma/model/wave_writer.hpp"

namespace spyre_dma::model {

class VcdStream {
 public:
  // `source` names the input in errors ("rtl.vcd").
  VcdStream(WaveWriter& out, std::string source);

  void feed(std::string_view text);
  // The end of the input: a token cut by no white space at the end is taken, and a keyword left
  // open is an error.
  void finish();

  std::uint64_t line() const noexcept { return line_; }

 private:
  void token(std::string_view t);
  void keyword_done();
  [[noreturn]] void fail(const std::string& what) const;

  WaveWriter& out_;
  std::string source_;
  std::uint64_t line_ = 1;
  std::string partial_;                 // a token cut at the end of the last piece
  std::string keyword_;                 // the open $keyword, or empty
  std::vector<std::string> args_;       // its tokens so far
  std::vector<std::string> scope_;      // the open scopes
  std::unordered_map<std::string, int> vars_;  // code -> first variable with it
  std::string vector_;                  // a b... value waiting for its code
  std::uint64_t time_ = 0;
};

}  // namespace spyre_dma::model
