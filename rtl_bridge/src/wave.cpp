#include "spyre_dma/rtl/wave.hpp"

namespace spyre_dma::rtl {
namespace {
std::string& path() {
  static std::string p;
  return p;
}
}  // namespace

void set_wave_file(std::string p) { path() = std::move(p); }
const std::string& wave_file() { return path(); }

}  // namespace spyre_dma::rtl
