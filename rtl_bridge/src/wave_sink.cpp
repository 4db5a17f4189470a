#include "wave_sink.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace spyre_dma::rtl {

WaveSink::WaveSink(std::string path) : path_(std::move(path)) {
  if (model::wave_format(path_) == model::WaveFormat::kFst) {
    fst_ = std::make_unique<model::WaveWriter>(path_);
    stream_ = std::make_unique<model::VcdStream>(*fst_, "the RTL's VCD stream");
    return;
  }
  const std::string partial = path_ + ".partial";
  vcd_ = std::fopen(partial.c_str(), "wb");
  if (!vcd_) throw model::WaveError("wave file '" + path_ + "': cannot create: " + std::strerror(errno));
}

WaveSink::~WaveSink() { close(); }

bool WaveSink::open(const std::string&) { return !closed_; }

ssize_t WaveSink::write(const char* bufp, ssize_t len) {
  if (!error_.empty() || closed_ || len <= 0) return len;
  if (vcd_) {
    if (std::fwrite(bufp, 1, static_cast<std::size_t>(len), vcd_) != static_cast<std::size_t>(len)) {
      error_ = "wave file '" + path_ + "': write failed: " + std::strerror(errno);
    }
    return len;
  }
  try {
    stream_->feed(std::string_view(bufp, static_cast<std::size_t>(len)));
  } catch (const model::WaveError& e) {
    error_ = e.what();
  }
  return len;
}

void WaveSink::close() {
  if (closed_) return;
  closed_ = true;
  const std::string partial = path_ + ".partial";
  if (vcd_) {
    if (std::fclose(vcd_) != 0 && error_.empty()) error_ = "wave file '" + path_ + "': write failed";
    vcd_ = nullptr;
    std::error_code ec;
    if (error_.empty()) std::filesystem::rename(partial, path_, ec);
    else std::filesystem::remove(partial, ec);
    if (ec && error_.empty()) error_ = "wave file '" + path_ + "': cannot put it in place: " + ec.message();
    return;
  }
  try {
    if (error_.empty()) {
      stream_->finish();
      fst_->close();
    }
  } catch (const model::WaveError& e) {
    error_ = e.what();
  }
  if (!error_.empty()) {
    fst_.reset();  // closes what it can, and the file it put in place goes
    std::error_code ec;
    std::filesystem::remove(path_, ec);
    std::filesystem::remove(partial, ec);
  }
}

}  // namespace spyre_dma::rtl
