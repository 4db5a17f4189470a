// The RTL's waveforms: Verilator's VCD stream written through as .vcd, or converted as it streams
// into .fst. Both hold the same signals and the same value changes; a name that is neither is a
// typed error before anything runs.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "ring_driver.hpp"
#include "spyre_dma/model/config_loader.hpp"
#include "spyre_dma/model/wave_writer.hpp"
#include "spyre_dma/rtl/wave.hpp"
#include "spyre_dma/spyre_dma.hpp"
#include "wave_reader.hpp"

namespace spyre_dma::rtl::test {
namespace {

// One H2D and one D2H of 64 KiB on the RTL data path, its signals into `wave`.
void run_with_wave(const std::string& wave) {
  model::SimConfig config = model::preset("spyre-gen5x16");
  config.data_path = model::DataPathKind::kRtl;
  set_wave_file(wave);
  struct Reset {
    ~Reset() { set_wave_file(""); }
  } reset;
  auto engine = Engine::open(std::make_shared<model::SimDevice>(config));
  auto stream = engine->create_stream();
  auto buf = engine->allocate(64 << 10);
  auto host = engine->allocate_host(128 << 10);
  stream.copy_h2d(buf, 0, host.data(), 64 << 10);
  stream.copy_d2h(static_cast<std::uint8_t*>(host.data()) + (64 << 10), buf, 0, 64 << 10);
  ASSERT_TRUE(stream.synchronize(std::chrono::seconds(60)).ok());
}

TEST(RtlWaves, VcdAndFstHoldTheSameChanges) {
  const std::string vcd = ::testing::TempDir() + "rtl_wave.vcd";
  run_with_wave(vcd);
  ASSERT_TRUE(std::filesystem::exists(vcd));
  EXPECT_FALSE(std::filesystem::exists(vcd + ".partial"));
  const spyre_dma::testing::Wave v = spyre_dma::testing::read_vcd(vcd);
  ASSERT_TRUE(v.changes.count("spyre_dma_core.clk"));
  std::uint64_t changes = 0;
  for (const auto& [name, c] : v.changes) changes += c.size();
  EXPECT_GT(v.changes.size(), 50u) << "signals";
  EXPECT_GT(changes, 10000u) << "value changes of 128 KiB moved";
  std::remove(vcd.c_str());
  if (!model::fst_supported()) GTEST_SKIP() << "built without the FST library";
#if SPYRE_DMA_HAVE_FST
  const std::string fst = ::testing::TempDir() + "rtl_wave.fst";
  run_with_wave(fst);
  const spyre_dma::testing::Wave f = spyre_dma::testing::read_fst(fst);
  EXPECT_EQ(f.widths, v.widths);
  EXPECT_TRUE(f.changes == v.changes) << "the FST differs from the VCD of the same run (" << changes << " changes)";
  EXPECT_LT(std::filesystem::file_size(fst) * 4, changes * 8) << "FST is compressed";
  std::remove(fst.c_str());
#endif
}

TEST(RtlWaves, AFileNamedNeitherVcdNorFstIsATypedError) {
  model::SimConfig config = model::preset("spyre-gen5x16");
  config.data_path = model::DataPathKind::kRtl;
  set_wave_file(::testing::TempDir() + "rtl_wave.txt");
  EXPECT_THROW(model::SimDevice{config}, model::WaveError);
  set_wave_file("");
}

}  // namespace
}  // namespace spyre_dma::rtl::test
