// Waveforms of the RTL controller: the file (.vcd or .fst) the next simulated device with controller "rtl"
// writes its RTL signals to (empty, the default: none). A process setting, like the SystemC
// kernel the device runs in (one device at a time per process).
#pragma once

#include <string>

namespace spyre_dma::rtl {

void set_wave_file(std::string path);
const std::string& wave_file();

}  // namespace spyre_dma::rtl
