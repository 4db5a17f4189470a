// The register table of the device core against the contract's document, and the offset decode
// and STATUS composition every backend's BAR0 goes through.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "spyre_dma/device_core/register_map.hpp"

namespace {

namespace dc = spyre_dma::device_core;
namespace hw = spyre_dma::hw;

// This file is testbench/unit/device_core/register_map_test.cpp; the document is docs/ at the root.
std::string document() {
  std::string here = __FILE__;
  const auto pos = here.rfind("testbench/unit/device_core/");
  std::ifstream in((pos == std::string::npos ? std::string() : here.substr(0, pos)) + "docs/programming-model.md");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct DocumentedRegister {
  std::uint64_t offset;
  unsigned bits;
  std::string access;
};

// The rows of sections 10.1 and 10.2: | `0x0100` | 32 | CONTROL | RW | ...
std::map<std::string, DocumentedRegister> documented_registers() {
  std::map<std::string, DocumentedRegister> out;
  const std::regex row(R"(^\| `0x([0-9A-Fa-f]+)` \| (32|64) \| ([A-Z_]+) \| (RO|RW|RW1C) \|)");
  std::istringstream in(document());
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, row)) {
      out[m[3]] = DocumentedRegister{std::stoull(m[1], nullptr, 16), static_cast<unsigned>(std::stoul(m[2])), m[4]};
    }
  }
  return out;
}

const char* access_name(dc::Access a) {
  switch (a) {
    case dc::Access::kReadOnly: return "RO";
    case dc::Access::kReadWrite: return "RW";
    case dc::Access::kWrite1Clear: return "RW1C";
  }
  return "?";
}

TEST(RegisterMap, TheDocumentShowsEveryRegisterAsTheTableHasIt) {
  const auto doc = documented_registers();
  ASSERT_EQ(doc.size(), dc::kNumRegs) << "rows of sections 10.1 and 10.2";
  for (const dc::RegisterSpec& s : dc::kRegisterMap) {
    SCOPED_TRACE(std::string(s.name));
    const auto it = doc.find(std::string(s.name));
    ASSERT_NE(it, doc.end()) << "not in docs/programming-model.md";
    EXPECT_EQ(it->second.offset, s.offset);
    EXPECT_EQ(it->second.bits, s.width * 8);
    EXPECT_EQ(it->second.access, access_name(s.access));
  }
}

TEST(RegisterMap, OffsetsAreTheContractHeadersAndDoNotOverlap) {
  std::map<std::uint64_t, std::string> words;
  for (const dc::RegisterSpec& s : dc::kRegisterMap) {
    for (hw::Pipeline p : {hw::Pipeline::kCompute, hw::Pipeline::kDmai, hw::Pipeline::kDmao}) {
      if (!dc::per_pipeline(s.id) && p != hw::Pipeline::kCompute) continue;
      for (unsigned half = 0; half < s.width / 4; ++half) {
        const std::uint64_t at = dc::offset_of(s.id, p) + 4 * half;
        EXPECT_TRUE(words.emplace(at, std::string(s.name)).second) << s.name << " overlaps " << words[at];
      }
    }
  }
  EXPECT_EQ(dc::offset_of(dc::Reg::kCbPi, hw::Pipeline::kDmao), hw::reg::pipe(hw::Pipeline::kDmao, hw::reg::kCbPi));
  EXPECT_EQ(dc::offset_of(dc::Reg::kStatus), hw::reg::kStatus);
}

TEST(RegisterMap, EveryWordOfEveryRegisterDecodesToItAndItsHalf) {
  for (const dc::RegisterSpec& s : dc::kRegisterMap) {
    for (hw::Pipeline p : {hw::Pipeline::kCompute, hw::Pipeline::kDmai, hw::Pipeline::kDmao}) {
      if (!dc::per_pipeline(s.id) && p != hw::Pipeline::kCompute) continue;
      for (unsigned half = 0; half < s.width / 4; ++half) {
        const auto at = dc::register_at(dc::offset_of(s.id, p) + 4 * half);
        ASSERT_TRUE(at.has_value()) << s.name;
        EXPECT_EQ(at->reg, s.id) << s.name;
        EXPECT_EQ(at->half, half) << s.name;
        if (dc::per_pipeline(s.id)) {
          EXPECT_EQ(at->pipeline, p) << s.name;
        }
      }
    }
  }
}

TEST(RegisterMap, MisalignedAndUnassignedOffsetsDecodeToNothing) {
  for (std::uint64_t at : {std::uint64_t{2}, std::uint64_t{0x24}, std::uint64_t{0x104 + 1}, std::uint64_t{0x200},
                           std::uint64_t{0x103C}, std::uint64_t{0x1300}, hw::reg::kBar0Bytes - 4}) {
    EXPECT_FALSE(dc::register_at(at).has_value()) << std::hex << at;
  }
}

TEST(RegisterMap, StatusBitsCombine) {
  EXPECT_EQ(dc::compose_status(false, false, false), 0u);
  EXPECT_EQ(dc::compose_status(true, false, false), hw::kStatusReady);
  EXPECT_EQ(dc::compose_status(true, true, false), hw::kStatusResetting);
  EXPECT_EQ(dc::compose_status(true, false, true), hw::kStatusFatal);
  EXPECT_EQ(dc::compose_status(false, true, true), hw::kStatusResetting | hw::kStatusFatal);
}

}  // namespace
