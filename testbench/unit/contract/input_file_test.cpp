// The rules every reader of outside input follows (spyre_dma/input_file.hpp): only regular files,
// refused before anything blocks; a size cap; a JSON nesting limit found before any parse.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "spyre_dma/input_file.hpp"

namespace {

using spyre_dma::InputFileError;
using spyre_dma::json_too_deep_at;
using spyre_dma::read_input_file;

std::string nested(unsigned depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST(InputFile, NestingIsMeasuredOutsideStrings) {
  EXPECT_EQ(json_too_deep_at(nested(128)), std::string_view::npos);
  EXPECT_EQ(json_too_deep_at(nested(129)), 128u) << "the bracket that goes one level too deep";
  EXPECT_EQ(json_too_deep_at("{\"a\": [1, {\"b\": []}]}", 2), 10u);
  // Brackets inside strings, escaped quotes among them, are not nesting.
  const std::string in_string = "[\"" + nested(500) + "\\\"" + std::string(300, '{') + "\"]";
  EXPECT_EQ(json_too_deep_at(in_string), std::string_view::npos);
  EXPECT_EQ(json_too_deep_at(nested(100'000)), 128u) << "found at once, however deep it goes";
}

TEST(InputFile, OnlyRegularFilesAreReadAndNothingBlocks) {
  const std::string dir = ::testing::TempDir() + "input-file-" + std::to_string(::getpid());
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  const std::string fifo = dir + "/pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);  // no writer: a blocking open would wait for ever
  try {
    (void)read_input_file(fifo);
    ADD_FAILURE() << "a FIFO was read";
  } catch (const InputFileError& e) {
    EXPECT_EQ(e.path(), fifo);
    EXPECT_EQ(e.why(), "cannot read: is a FIFO, not a file");
  }
  try {
    (void)read_input_file(dir);
    ADD_FAILURE() << "a directory was read";
  } catch (const InputFileError& e) {
    EXPECT_EQ(e.why(), "cannot read: is a directory");
  }
  try {
    (void)read_input_file(dir + "/missing");
    ADD_FAILURE() << "a missing file was read";
  } catch (const InputFileError& e) {
    EXPECT_EQ(e.why(), "cannot open: No such file or directory");
  }
  EXPECT_THROW((void)read_input_file("/dev/zero"), InputFileError) << "a device that never ends";
  const std::string file = dir + "/f.json";
  std::ofstream(file) << "{\"x\": 1}\n";
  EXPECT_EQ(read_input_file(file), "{\"x\": 1}\n");
  ::unlink(file.c_str());
  ::unlink(fifo.c_str());
  ::rmdir(dir.c_str());
}

TEST(InputFile, TheSizeCapRefusesBeforeReadingAndCanBeRaised) {
  const std::string file = ::testing::TempDir() + "input-file-cap-" + std::to_string(::getpid());
  std::ofstream(file) << std::string(1000, 'x');
  ::setenv("SPYRE_DMA_MAX_INPUT_BYTES", "999", 1);
  try {
    (void)read_input_file(file);
    ADD_FAILURE() << "a file past the cap was read";
  } catch (const InputFileError& e) {
    EXPECT_EQ(e.why(), "is 1000 bytes, above the input limit of 999 bytes (SPYRE_DMA_MAX_INPUT_BYTES raises it)");
  }
  ::setenv("SPYRE_DMA_MAX_INPUT_BYTES", "1000", 1);
  EXPECT_EQ(read_input_file(file).size(), 1000u);
  for (const char* bad : {"-1", "0", "1e9", "lots", "18446744073709551616"}) {
    ::setenv("SPYRE_DMA_MAX_INPUT_BYTES", bad, 1);
    EXPECT_THROW((void)spyre_dma::max_input_bytes(), std::invalid_argument) << bad;
  }
  ::unsetenv("SPYRE_DMA_MAX_INPUT_BYTES");
  EXPECT_EQ(spyre_dma::max_input_bytes(), spyre_dma::kMaxInputBytes);
  ::unlink(file.c_str());
}

}  // namespace
