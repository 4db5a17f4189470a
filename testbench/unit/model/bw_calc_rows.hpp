// Rows of pcie-bench's analytical model output for the NFP6000's Gen3 x8 link, shared by the
// arithmetic test and the SystemC link test.
#pragma once

#include <cstdint>

namespace spyre_dma::model {

// bw_calc.dat: pcie-bench's pcie_bw.py output for Gen3 x8. Rows copied from
// pcie-bench/data, nfp6000-1.2GHz_bdw-Xeon-E5-2630v4-dell-t430-s0-s0-s0/bw_calc.dat, commit
// a796e52a723378941e3068f5abc387799bef9661 (shared/data/pcie-bench-nfp6000-gen3x8/, see
// SOURCES.md). Bandwidths there are Gbit/s. The parameters that reproduce every one of its 2048
// rows are pcie_bw.py's defaults: Gen3 x8, MPS 256, MRRS 512, RCB 64, 64-bit, no ECRC (MRRS 4096
// does not: read/write differs from 257 B up).
// ---------------------------------------------------------------------------------------------

struct BwCalcRow {
  std::uint64_t size;
  double write_gbit, write_tps, read_gbit, read_tps, rw_gbit, rw_tps;
};

constexpr BwCalcRow kBwCalc[] = {
    {1, 2.32, 289423828.1, 2.41, 301483154.3, 1.18, 147665218.4},
    {63, 41.92, 83167766.7, 43.94, 87175851.8, 32.85, 65185546.9},
    {64, 42.10, 82222678.4, 44.10, 86138044.1, 33.08, 64603533.1},
    {65, 42.28, 81298828.1, 44.26, 85124655.3, 33.30, 64031820.4},
    {128, 48.75, 47602603.3, 50.06, 48889160.2, 42.10, 41111339.2},
    {255, 52.91, 25934034.8, 53.67, 26311257.1, 48.71, 23879853.8},
    {256, 52.92, 25841413.2, 53.69, 26215926.5, 48.75, 23801301.7},
    {257, 48.78, 23723264.6, 50.09, 24362275.1, 45.22, 21992692.1},
    {512, 52.92, 12920706.6, 53.69, 13107963.2, 50.75, 12389718.7},
    {513, 50.76, 12368539.7, 51.82, 12627566.7, 46.91, 11430640.9},
    {1024, 52.92, 6460353.3, 53.69, 6553981.6, 50.75, 6194859.3},
    {1500, 52.81, 4401213.9, 53.60, 4466417.1, 50.60, 4216547.6},
    {2048, 52.92, 3230176.7, 53.69, 3276990.8, 50.75, 3097429.7},
};

}  // namespace spyre_dma::model
