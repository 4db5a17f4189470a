// Waveform files: VCD (IEEE 1364 value change dump, text) or FST (GTKWave's compressed format,
// through the FST library Verilator ships), chosen by the file's extension. The SystemC model
// writes its state through this (queue occupancy, credits and tags in flight), and the RTL data
// path its FST (Verilator's VCD stream converted as it is written: vcd_stream.hpp).
//
// Variables are declared first, each in a dot-separated scope ("device0.dmai"); the header is
// written at the first value change (or close), with the scopes as a tree in declaration order.
// Values then come in time order (a time earlier than the last one is a WaveError). Times are in
// the file's timescale ("1ps" unless set before the first change).
//
// The file is written atomically: the writer fills PATH.partial and renames it to PATH when it
// closes, so a run that stops half way leaves no half-written PATH. The destructor closes (and
// never throws); call close() to see errors.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

namespace spyre_dma::model {

class WaveError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class WaveFormat : std::uint8_t { kVcd, kFst };

// The format of `path` by its extension (.vcd or .fst, any case). Throws WaveError naming the
// path and the extension for anything else.
WaveFormat wave_format(const std::string& path);
// Whether this build can write FST (it was built with Verilator's FST library).
bool fst_supported() noexcept;

class WaveWriter {
 public:
  // Creates PATH.partial. Throws WaveError if the format is unknown or unsupported, or the file
  // cannot be created.
  explicit WaveWriter(std::string path);
  ~WaveWriter();
  WaveWriter(const WaveWriter&) = delete;
  WaveWriter& operator=(const WaveWriter&) = delete;

  // "1ps", "10ns", ... (1, 10 or 100 of s, ms, us, ns, ps, fs). Before the first change.
  void timescale(std::string_view unit);
  // A variable of `width` bits (1..4096) named `name` in `scope` ("" for the top). Returns its
  // handle. Before the first change.
  int variable(std::string_view scope, std::string_view name, unsigned width);
  // Another name for variable `of` (same width and values): VCD and FST both store it once.
  int alias(std::string_view scope, std::string_view name, int of);

  // The value of `var` from `time` on: the low `width` bits of `value`.
  void change(std::uint64_t time, int var, std::uint64_t value);
  // The value as bits, most significant first: '0', '1', 'x' or 'z'. Fewer than the width are
  // extended on the left (with 0, or with x or z when the first given is one), as VCD does.
  void change_bits(std::uint64_t time, int var, std::string_view bits);

  // Writes the header if no change came, ends the file and renames it into place. Idempotent.
  void close();

  WaveFormat format() const noexcept;
  const std::string& path() const noexcept;
  std::uint64_t change_count() const noexcept;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace spyre_dma::model
