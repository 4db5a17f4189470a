// Waveform files (WaveWriter, VCD and FST) and the VCD stream converter (VcdStream): what goes in
// comes back out, read by code other than the writer's, and bad input is a WaveError that names
// what is wrong.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "spyre_dma/model/vcd_stream.hpp"
#include "spyre_dma/model/wave_writer.hpp"
#include "wave_reader.hpp"

namespace spyre_dma::model {
namespace {

std::string temp(const std::string& name) { return ::testing::TempDir() + name; }

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A small wave of every kind of value: scopes, an alias, a 1-bit and a 70-bit variable, x and z.
void write_sample(WaveWriter& w) {
  const int count = w.variable("top.dmai", "count", 8);
  const int flag = w.variable("top", "flag", 1);
  const int wide = w.variable("top.dmai", "beat", 70);
  const int again = w.alias("other", "count_alias", count);
  (void)again;
  w.change(0, count, 0);
  w.change(0, flag, 0);
  w.change_bits(0, wide, "x");
  w.change(1000, count, 5);
  w.change(1000, flag, 1);
  w.change_bits(2500, wide, "1" + std::string(69, '0'));
  w.change(2500, count, 0x1ff);  // the low 8 bits: 0xff
  w.change_bits(3000, flag, "z");
  w.close();
}

void expect_sample(const testing::Wave& w) {
  ASSERT_EQ(w.changes.count("top.dmai.count"), 1u);
  EXPECT_EQ(w.widths.at("top.dmai.count"), 8u);
  EXPECT_EQ(w.widths.at("top.dmai.beat"), 70u);
  EXPECT_EQ(w.at("top.dmai.count", 999), "0");
  EXPECT_EQ(w.at("top.dmai.count", 1000), "101");
  EXPECT_EQ(w.at("top.dmai.count", 2500), "11111111");
  EXPECT_EQ(w.at("other.count_alias", 2500), "11111111");  // an alias carries the same values
  EXPECT_EQ(w.at("top.flag", 1000), "1");
  EXPECT_EQ(w.at("top.flag", 3000), "z");
  EXPECT_EQ(w.at("top.dmai.beat", 0), std::string(70, 'x'));  // x extends as x
  EXPECT_EQ(w.at("top.dmai.beat", 2500), "1" + std::string(69, '0'));
}

TEST(WaveWriter, VcdComesBackAsWritten) {
  const std::string path = temp("wave_sample.vcd");
  {
    WaveWriter w(path);
    EXPECT_EQ(w.format(), WaveFormat::kVcd);
    write_sample(w);
    EXPECT_EQ(w.change_count(), 8u);
  }
  const std::string text = slurp(path);
  EXPECT_EQ(text.find("$date"), std::string::npos) << "a date would make two runs differ";
  EXPECT_NE(text.find("$timescale 1ps $end"), std::string::npos);
  expect_sample(testing::read_vcd(path));
  std::remove(path.c_str());
}

TEST(WaveWriter, FstComesBackAsWritten) {
  if (!fst_supported()) GTEST_SKIP() << "built without the FST library";
#if SPYRE_DMA_HAVE_FST
  const std::string path = temp("wave_sample.fst");
  {
    WaveWriter w(path);
    EXPECT_EQ(w.format(), WaveFormat::kFst);
    write_sample(w);
  }
  expect_sample(testing::read_fst(path));
  // The same calls give the same bytes (no date, no wall-clock time in the file).
  const std::string first = slurp(path);
  {
    WaveWriter w(path);
    write_sample(w);
  }
  EXPECT_EQ(slurp(path), first);
  std::remove(path.c_str());
#endif
}

TEST(WaveWriter, TheFileAppearsOnlyWhenClosed) {
  const std::string path = temp("wave_atomic.vcd");
  std::remove(path.c_str());
  WaveWriter w(path);
  const int v = w.variable("", "v", 4);
  w.change(0, v, 1);
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_TRUE(std::filesystem::exists(path + ".partial"));
  w.close();
  EXPECT_TRUE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".partial"));
  w.close();  // idempotent
  std::remove(path.c_str());
}

TEST(WaveWriter, BadInputIsATypedErrorThatSaysWhat) {
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const WaveError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([] { WaveWriter w(temp("wave.txt")); }).find("unknown format '.txt'"), std::string::npos);
  EXPECT_NE(message([] { WaveWriter w("/nonexistent-dir/x.vcd"); }).find("cannot create"), std::string::npos);
  const std::string path = temp("wave_bad.vcd");
  WaveWriter w(path);
  const int v = w.variable("s", "v", 4);
  EXPECT_NE(message([&] { w.variable("s", "bad name", 1); }).find("white space"), std::string::npos);
  EXPECT_NE(message([&] { w.variable("s", "wide", 5000); }).find("width 5000"), std::string::npos);
  EXPECT_NE(message([&] { w.timescale("3ns"); }).find("timescale '3ns'"), std::string::npos);
  w.change(100, v, 1);
  EXPECT_NE(message([&] { w.change(99, v, 2); }).find("change at 99 after one at 100"), std::string::npos);
  EXPECT_NE(message([&] { w.change_bits(100, v, "10101"); }).find("5 bits"), std::string::npos);
  EXPECT_NE(message([&] { w.change_bits(100, v, "12"); }).find("not made of 0, 1, x and z"), std::string::npos);
  EXPECT_NE(message([&] { w.change(100, 7, 0); }).find("no variable 7"), std::string::npos);
  EXPECT_NE(message([&] { w.variable("s", "late", 1); }).find("after the first change"), std::string::npos);
  w.close();
  std::remove(path.c_str());
}

// Verilator's VCD as it streams out, cut into pieces anywhere: the same waves whatever the cuts.
const char* const kVerilatorStyleVcd =
    "$version Generated by VerilatedVcd $end\n"
    "$timescale 1ps $end\n"
    " $scope module TOP $end\n"
    "  $var wire 1 # clk $end\n"
    "  $var wire 8 $ data [7:0] $end\n"
    "  $scope module core $end\n"
    "   $var wire 1 # clk $end\n"
    "   $var wire 8 % count [7:0] $end\n"
    "  $upscope $end\n"
    " $upscope $end\n"
    "$enddefinitions $end\n"
    "\n\n#0\n0#\nb00000000 $\nb00000001 %\n#500\n1#\n#1000\n0#\nb10100101 $\nbx %\n";

TEST(VcdStream, ConvertsVerilatorsVcdWhateverThePieces) {
  const std::string whole_path = temp("vcd_stream_whole.vcd");
  {
    WaveWriter out(whole_path);
    VcdStream s(out, "test.vcd");
    s.feed(kVerilatorStyleVcd);
    s.finish();
    out.close();
  }
  const testing::Wave whole = testing::read_vcd(whole_path);
  EXPECT_EQ(whole.at("TOP.core.clk", 500), "1");  // the second name of code '#'
  EXPECT_EQ(whole.at("TOP.clk", 1000), "0");
  EXPECT_EQ(whole.at("TOP.data", 1000), "10100101");
  EXPECT_EQ(whole.at("TOP.core.count", 0), "1");
  EXPECT_EQ(whole.at("TOP.core.count", 1000), std::string(8, 'x'));
  const std::string text(kVerilatorStyleVcd);
  for (std::size_t piece : {1u, 2u, 7u, 64u}) {
    const std::string path = temp("vcd_stream_pieces.vcd");
    {
      WaveWriter out(path);
      VcdStream s(out, "test.vcd");
      for (std::size_t i = 0; i < text.size(); i += piece) s.feed(std::string_view(text).substr(i, piece));
      s.finish();
      out.close();
    }
    EXPECT_EQ(slurp(path), slurp(whole_path)) << "pieces of " << piece;
    std::remove(path.c_str());
  }
#if SPYRE_DMA_HAVE_FST
  const std::string fst_path = temp("vcd_stream.fst");
  {
    WaveWriter out(fst_path);
    VcdStream s(out, "test.vcd");
    for (std::size_t i = 0; i < text.size(); i += 3) s.feed(std::string_view(text).substr(i, 3));
    s.finish();
    out.close();
  }
  EXPECT_EQ(testing::read_fst(fst_path).changes, whole.changes);
  std::remove(fst_path.c_str());
#endif
  std::remove(whole_path.c_str());
}

TEST(VcdStream, MalformedInputNamesTheLine) {
  auto message = [](const std::string& vcd) {
    const std::string path = temp("vcd_stream_bad.vcd");
    try {
      WaveWriter out(path);
      VcdStream s(out, "in.vcd");
      s.feed(vcd);
      s.finish();
    } catch (const WaveError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string head = "$scope module t $end\n$var wire 4 ! v $end\n$upscope $end\n$enddefinitions $end\n";
  EXPECT_NE(message(head + "#0\nb1 ?\n").find("in.vcd:6: value for undeclared variable code '?'"), std::string::npos);
  EXPECT_NE(message(head + "#10\n#5\n").find("in.vcd:6: time 5 goes back from 10"), std::string::npos);
  EXPECT_NE(message(head + "#1x\n").find("time '#1x'"), std::string::npos);
  EXPECT_NE(message(head + "r1.5 !\n").find("real variables are not supported"), std::string::npos);
  EXPECT_NE(message("$var wire 4 ! $end\n").find("in.vcd:1: $var needs"), std::string::npos);
  EXPECT_NE(message("$scope module t\n").find("$scope has no $end"), std::string::npos);
  EXPECT_NE(message("$upscope $end\n").find("$upscope with no scope open"), std::string::npos);
  EXPECT_NE(message("$bogus $end\n").find("unknown keyword $bogus"), std::string::npos);
  EXPECT_NE(message(head + "b101\n").find("has no variable code"), std::string::npos);
}

}  // namespace
}  // namespace spyre_dma::model
