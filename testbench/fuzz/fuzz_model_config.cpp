// The model's configuration loader (JSON text with comments, a base preset and strict keys), as
// read by `spyre-dma demo --config FILE` and the sim backend. The input is written to a file and
// loaded with load_config(), the path a user's file takes. Only ConfigError may escape; an
// accepted configuration passes validate(), and to_json() -> config_from_json() gives it back
// unchanged (the property config_loader.hpp states).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

#include "fuzz_support.hpp"
#include "spyre_dma/model/config_loader.hpp"

namespace {

using namespace spyre_dma::model;
using spyre_dma::fuzz::expect_only;
using spyre_dma::fuzz::finding;
using spyre_dma::fuzz::require;

// One scratch file per process, removed at exit.
class ScratchFile {
 public:
  ScratchFile() {
    path_ = (std::filesystem::temp_directory_path() / "spyre-dma-fuzz-config-XXXXXX").string();
    const int fd = ::mkstemp(path_.data());
    if (fd < 0) finding("harness: cannot create a scratch file");
    ::close(fd);
  }
  ~ScratchFile() { std::remove(path_.c_str()); }
  const std::string& write(const std::uint8_t* data, std::size_t size) {
    std::FILE* f = std::fopen(path_.c_str(), "wb");
    if (!f || std::fwrite(data, 1, size, f) != size || std::fclose(f) != 0) finding("harness: cannot write the scratch file");
    return path_;
  }

 private:
  std::string path_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static ScratchFile scratch;
  const std::string& path = scratch.write(data, size);
  expect_only<ConfigError>("load_config", [&] {
    const SimConfig config = load_config(path);
    const bool valid = expect_only<ConfigError>("validate", [&] { validate(config, "fuzz.json"); });
    require(valid, "validate() accepts what load_config() accepted");
    const nlohmann::json resolved = to_json(config);
    SimConfig back;
    const bool ok = expect_only<ConfigError>("config_from_json", [&] { back = config_from_json(resolved, "resolved"); });
    require(ok, "the resolved configuration loads again");
    require(back == config, "config_from_json(to_json(c)) == c");
    require(to_json(back) == resolved, "to_json() is stable");
  });
  return 0;
}
