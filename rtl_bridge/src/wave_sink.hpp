// Where Verilator's VCD stream of the RTL's signals goes (--wave FILE): to FILE.vcd as it is
// written, or converted as it is written into FILE.fst (the model's VcdStream into a WaveWriter,
// which writes through the FST library Verilator ships). Either way the file appears whole when the
// data path closes (FILE.partial, then renamed), so a run that stops half way leaves none.
#pragma once

#include <verilated_vcd_c.h>

#include <cstdio>
#include <memory>
#include <string>

#include "spyre_dma/model/vcd_stream.hpp"
#include "spyre_dma/model/wave_writer.hpp"

namespace spyre_dma::rtl {

class WaveSink final : public VerilatedVcdFile {
 public:
  // Throws model::WaveError for a name that is not .vcd or .fst, or a file that cannot be created.
  explicit WaveSink(std::string path);
  ~WaveSink() override;

  bool open(const std::string& name) override;  // the file was opened by the constructor
  ssize_t write(const char* bufp, ssize_t len) override;
  void close() override;  // finishes the file and puts it in place

  // The first error writing or converting (empty: none). Verilator's writer cannot take one: the
  // rest of the stream is dropped and the file is not put in place.
  const std::string& error() const noexcept { return error_; }

 private:
  std::string path_;
  std::FILE* vcd_ = nullptr;  // VCD: written through
  std::unique_ptr<model::WaveWriter> fst_;  // FST: converted
  std::unique_ptr<model::VcdStream> stream_;
  std::string error_;
  bool closed_ = false;
};

}  // namespace spyre_dma::rtl
