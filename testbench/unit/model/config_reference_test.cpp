// docs/model-config.md against the code: every key of the resolved configuration is documented,
// and the document's generated section is exactly config_reference_markdown().
//
// To regenerate the section after changing the field table or a preset:
//   SPYRE_DMA_UPDATE_DOCS=1 build/default/testbench/unit/model_tests
//   --gtest_filter='ConfigReference.*'
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "spyre_dma/model/config_loader.hpp"

namespace spyre_dma::model {
namespace {

using nlohmann::json;

constexpr const char* kBegin = "<!-- BEGIN GENERATED: config_reference_markdown() -->\n";
constexpr const char* kEnd = "<!-- END GENERATED -->\n";

// This file is testbench/unit/model/config_reference_test.cpp; the document is docs/ at the root.
std::string doc_path() {
  std::string here = __FILE__;
  const auto pos = here.rfind("testbench/unit/model/");
  return (pos == std::string::npos ? std::string("") : here.substr(0, pos)) +
         "docs/model-config.md";
}

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void flatten(const json& j, const std::string& prefix, std::set<std::string>& out) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string path = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (it->is_object())
      flatten(*it, path, out);
    else
      out.insert(path);
  }
}

TEST(ConfigReference, EveryResolvedKeyIsInTheReference) {
  std::set<std::string> keys;
  flatten(to_json(SimConfig{}), "", keys);
  std::set<std::string> documented;
  for (const auto& k : config_reference()) {
    documented.insert(k.key);
    EXPECT_FALSE(k.description.empty()) << k.key;
    EXPECT_FALSE(k.allowed.empty()) << k.key;
  }
  EXPECT_EQ(keys, documented);
  const std::string md = config_reference_markdown();
  for (const auto& k : keys) EXPECT_NE(md.find("| `" + k + "` |"), std::string::npos) << k;
  for (const auto& p : preset_names())
    EXPECT_NE(md.find("| `" + p + "` |"), std::string::npos) << p;
}

TEST(ConfigReference, DocumentMatchesTheGeneratedTables) {
  const std::string path = doc_path();
  std::string doc = read(path);
  ASSERT_FALSE(doc.empty()) << "cannot read " << path;
  const auto begin = doc.find(kBegin);
  const auto end = doc.find(kEnd);
  ASSERT_NE(begin, std::string::npos) << path << " lacks " << kBegin;
  ASSERT_NE(end, std::string::npos) << path << " lacks " << kEnd;
  ASSERT_LT(begin, end);
  const auto body = begin + std::string(kBegin).size();
  const std::string generated = config_reference_markdown();
  if (doc.compare(body, end - body, generated) == 0) return;
  if (const char* update = std::getenv("SPYRE_DMA_UPDATE_DOCS"); update && *update == '1') {
    doc.replace(body, end - body, generated);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << doc;
    GTEST_SKIP() << "rewrote the generated section of " << path;
  }
  FAIL() << path << " is out of date; regenerate with SPYRE_DMA_UPDATE_DOCS=1 (see this test's "
         << "header). Expected section:\n"
         << generated;
}

TEST(ConfigReference, EveryKeyIsInTheDocument) {
  const std::string doc = read(doc_path());
  std::set<std::string> keys;
  flatten(to_json(SimConfig{}), "", keys);
  for (const auto& k : keys) EXPECT_NE(doc.find("`" + k + "`"), std::string::npos) << k;
}

}  // namespace
}  // namespace spyre_dma::model
